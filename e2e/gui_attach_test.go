//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The desktop attached to a headless supervisor, as on Windows (the service
// is the supervisor) and with `service install --headless`: the real
// binaries under Xvfb with a private session bus whose notification
// service and StatusNotifierWatcher are the test's.
//
//  1. `run --headless` alone: an escalation notifies once, from the
//     supervisor itself.
//  2. `run` attaches to it: the tray lists the supervisor's sessions; a new
//     escalation notifies once, from the desktop (the supervisor defers);
//     the tray's Acknowledge reaches the supervisor.
//  3. The supervisor is killed: the desktop says so; restarted, the desktop
//     shows its sessions again without being restarted itself.
func TestDesktopAttachesToHeadlessSupervisor(t *testing.T) {
	t.Parallel()
	d := startDesktop(t)
	bin, dir, cwd, display, busAddr, script := d.bin, d.dir, d.cwd, d.display, d.busAddr, d.script
	conn, notes, sni, cli := d.conn, d.notes, d.sni, d.cli
	escalatedCount := func(name string) int {
		n := 0
		for _, c := range notes.list() {
			if strings.HasPrefix(c, name+" needs attention|") {
				n++
			}
		}
		return n
	}
	newSession := func(name string) string {
		t.Helper()
		out, err := cli("new", "--cwd", cwd, "--name", name, "build it")
		if err != nil {
			t.Fatalf("new %s: %v\n%s", name, err, out)
		}
		return strings.TrimSpace(out)
	}
	env := append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS="+busAddr, "FAKE_CLAUDE_SCRIPT="+script, "LANG=en_US.UTF-8")

	// 1. The supervisor alone, headless.
	super := startApp(t, bin, env, "--data-dir", dir, "run", "--headless")
	eventually(t, "the supervisor's socket", 30*time.Second, func() bool { _, err := cli("ls"); return err == nil })
	newSession("alone")
	eventually(t, "the headless supervisor's notification", 30*time.Second, func() bool { return escalatedCount("alone") == 1 })

	// 2. The desktop attaches.
	desk := startApp(t, bin, append(env, "DISPLAY="+display), "--data-dir", dir, "run")
	eventually(t, "the attached desktop's tray registration", 30*time.Second, func() bool { return sni.first() != "" })
	dest := fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", desk.cmd.Process.Pid)
	var menu menuItem
	menuHas := func(prefix string) func() bool {
		return func() bool {
			m, err := getLayout(conn, dest, 0)
			if err != nil {
				return false
			}
			menu = m
			_, ok := findItem(m, prefix)
			return ok
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last tray menu: %q\nnotifications: %q\nsupervisor:\n%s\ndesktop:\n%s",
				labelsOf(menu), notes.list(), super.out.String(), desk.out.String())
		}
	})
	eventually(t, "the tray listing the supervisor's session", 20*time.Second, menuHas("⚠ alone"))

	id := newSession("attached")
	eventually(t, "the desktop's notification for the new escalation", 30*time.Second, func() bool { return escalatedCount("attached") == 1 })
	eventually(t, "the tray listing the new session", 20*time.Second, menuHas("⚠ attached"))
	// Give a second notification time to come, from either process.
	time.Sleep(2 * time.Second)
	if n := escalatedCount("attached"); n != 1 {
		t.Fatalf("the escalation notified %d times with a desktop attached, want once", n)
	}
	if n := escalatedCount("alone"); n != 1 {
		notes.mu.Lock()
		actions := slices.Clone(notes.actions)
		notes.mu.Unlock()
		// The supervisor's own notifications offer no Open; the desktop's do.
		t.Fatalf("the first escalation notified again (%d times) when the desktop attached; each notification's actions: %q", n, actions)
	}

	// The tray's Acknowledge reaches the supervisor.
	d.acknowledge(dest, menu, "⚠ attached", id)

	// 3. The supervisor dies: the desktop says so, then follows its restart.
	super.kill(t)
	eventually(t, "the tray saying the supervisor is not running", 20*time.Second, menuHas("Supervisor not running"))
	time.Sleep(time.Second)
	screenshot(t, display, "desktop-attached-reconnecting.png")
	startApp(t, bin, env, "--data-dir", dir, "run", "--headless")
	eventually(t, "the tray back on the restarted supervisor's sessions", 30*time.Second, func() bool {
		return menuHas("⚠ alone")() && !menuHas("Supervisor not running")()
	})
	select {
	case <-desk.exited:
		t.Fatal("the desktop exited while the supervisor restarted")
	default:
	}
}

// appProc is one run of the app binary in the background.
type appProc struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

func startApp(t *testing.T, bin string, env []string, args ...string) *appProc {
	t.Helper()
	p := &appProc{cmd: exec.Command(bin, args...), out: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(15 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		}
	})
	return p
}

// kill SIGKILLs the process (a crash) and waits for it.
func (p *appProc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Kill()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed process did not exit")
	}
}
