//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
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
	requireTools(t, "Xvfb", "dbus-daemon")
	bin, fake := testBinaries(t)
	busAddr := startBus(t)
	display := startXvfb(t)

	conn, err := dbus.Connect(busAddr)
	if err != nil {
		t.Fatalf("connecting to the test bus: %v", err)
	}
	defer conn.Close()
	notes := &notifications{}
	if err := conn.Export(notes, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	ownName(t, conn, "org.freedesktop.Notifications")
	sni := &watcher{}
	if err := conn.Export(sni, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
	ownName(t, conn, "org.kde.StatusNotifierWatcher")

	dir := shortTempDir(t)
	cwd := t.TempDir()
	// A turn that dies mid-work with no nudges allowed: escalated at once.
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[[
		{"emit":{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}]},"session_id":"$SESSION"}},
		{"exit":3}]]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"--data-dir", dir}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, stderr.String())
		}
		return string(out), err
	}
	for _, kv := range [][2]string{
		{"agents.claude.command", fake},
		{"supervisor.tick_seconds", "5"},
		{"supervisor.nudge_max_attempts", "0"},
	} {
		if out, err := cli("settings", "set", kv[0], kv[1]); err != nil {
			t.Fatalf("settings set %s: %v\n%s", kv[0], err, out)
		}
	}
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
		t.Fatalf("the first escalation notified again (%d times) when the desktop attached", n)
	}

	// The tray's Acknowledge reaches the supervisor.
	item, _ := findItem(menu, "⚠ attached")
	var ack menuItem
	eventually(t, "the session's submenu", 10*time.Second, func() bool {
		m, err := getLayout(conn, dest, item.ID)
		if err != nil {
			return false
		}
		var ok bool
		ack, ok = findItem(m, "Acknowledge")
		return ok
	})
	if err := click(conn, dest, ack.ID); err != nil {
		t.Fatalf("clicking Acknowledge: %v", err)
	}
	eventually(t, "the supervisor to clear needs_attention", 10*time.Second, func() bool {
		out, err := cli("show", id, "--json")
		var s struct {
			NeedsAttention bool `json:"needs_attention"`
		}
		return err == nil && json.Unmarshal([]byte(out), &s) == nil && !s.NeedsAttention
	})

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
