//go:build linux && benchidle

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// TestBenchIdleMachines measures what the desktop costs while nothing
// happens on the machines it follows (issue 23): BENCH_IDLE_MACHINES
// headless supervisors behind one real sshd, each with its own data
// directory and HOME and BENCH_IDLE_SESSIONS idle sessions (the scripted
// fakeclaude, its turn done), configured as machines of a desktop (`run`
// under Xvfb on a private session bus). Once the desktop's tray lists
// every machine as connected and every session, it takes the desktop's
// CPU and RSS over BENCH_IDLE_SECONDS, and the same for a desktop with no
// machines, and prints one line with both and their ratio. Like
// TestBenchIdle it is a measurement, not a check (`make bench-machines`).
func TestBenchIdleMachines(t *testing.T) {
	machines, perMachine, secs := envInt(t, "BENCH_IDLE_MACHINES", 10), envInt(t, "BENCH_IDLE_SESSIONS", 100), envInt(t, "BENCH_IDLE_SECONDS", 60)
	bin, fake := testBinaries(t)

	// The baseline first, alone on the machine: a desktop with no machines.
	base := startDesktop(t)
	baseDesk := startBenchDesktop(t, base)
	// Let the start settle before the window opens, as TestBenchIdle does.
	time.Sleep(5 * time.Second)
	baseCPU, baseRSS := idleCost(t, baseDesk.cmd.Process.Pid, secs)
	_ = baseDesk.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-baseDesk.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the desktop with no machines did not stop on SIGTERM")
	}

	srv := startSSHD(t)
	script := fmt.Sprintf("%s/script.json", t.TempDir())
	if err := os.WriteFile(script, []byte(`{"turns": [[`+ae2eLines+`]]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDesktop(t)
	if out, err := d.cli("settings", "set", "machines.ssh_command", "ssh -F "+srv.config); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string]bool{}
	var remotes []*remoteSupervisor
	for i := range machines {
		r := startRemoteSupervisor(t, bin, script, [2]string{"agents.claude.command", fake})
		remotes = append(remotes, r)
		for j := range perMachine {
			name := fmt.Sprintf("m%d-s%d", i, j)
			r.cli("new", "--cwd", t.TempDir(), "--name", name, "say", "done")
			want[name] = true
		}
		eventually(t, fmt.Sprintf("machine m%d's sessions to finish their turns", i), 5*time.Minute, func() bool {
			var list []sessions.Session
			if json.Unmarshal([]byte(r.cli("ls", "--json")), &list) != nil {
				return false
			}
			done := 0
			for _, s := range list {
				if s.State == sessions.WaitingOnUser {
					done++
				}
			}
			return done == perMachine
		})
		if out, err := d.cli("machines", "add", fmt.Sprintf("m%d", i), "good", "--command", bin+" --data-dir "+r.dir); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}

	// Stop every remote at once, before any one's directories are reaped
	// (that reaping would kill the others mid-run: registered after them,
	// this cleanup runs before theirs) and without waiting for
	// each in turn.
	t.Cleanup(func() {
		for _, r := range remotes {
			_ = r.proc.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, r := range remotes {
			select {
			case <-r.proc.exited:
			case <-time.After(30 * time.Second):
				t.Errorf("the remote supervisor in %s did not stop on SIGTERM", r.dir)
			}
		}
	})
	desk := startBenchDesktop(t, d)
	dest := fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", desk.cmd.Process.Pid)
	var menu menuItem
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last tray menu: %q\ndesktop:\n%s", labelsOf(menu), desk.out.String())
		}
	})
	eventually(t, "every machine connected and every session in the tray", 10*time.Minute, func() bool {
		m, err := getLayout(d.conn, dest, 0)
		if err != nil {
			return false
		}
		menu = m
		connected, listed := 0, trayTitles(m, want)
		for _, it := range m.Children {
			if strings.Contains(it.Label, " — connected") {
				connected++
			}
		}
		return connected == machines && listed == len(want)
	})
	time.Sleep(5 * time.Second)
	pid := desk.cmd.Process.Pid
	before := childPids(t, pid)
	profile := os.Getenv("BENCH_IDLE_PROFILE")
	if profile != "" {
		_ = desk.cmd.Process.Signal(syscall.SIGUSR1)
	}
	cpu, rss := idleCost(t, pid, secs)
	if profile != "" {
		_ = desk.cmd.Process.Signal(syscall.SIGUSR2)
	}
	// Each ssh the desktop started in the window is a connection opened
	// (a health check on a new connection, a reconnect).
	opened := 0
	for p := range childPids(t, pid) {
		if !before[p] {
			opened++
		}
	}
	ratio := func(a, b float64) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", a/b)
	}
	fmt.Printf("bench-machines: machines=%d sessions=%d window=%ds cpu=%.3f%% rss=%.1fMB ssh-opened=%d | no machines cpu=%.3f%% rss=%.1fMB | ratio cpu=%s rss=%s\n",
		machines, perMachine, secs, cpu, rss, opened, baseCPU, baseRSS, ratio(cpu, baseCPU), ratio(rss, baseRSS))
}

// startBenchDesktop runs the desktop (`run`, the tray and the hidden
// window) in d's world and waits for its tray. BENCH_IDLE_APP runs another
// build of the desktop (the remotes stay this one's); BENCH_IDLE_PROFILE=DIR
// arms its profile hook (TestBenchIdle).
func startBenchDesktop(t *testing.T, d *desktopWorld) *appProc {
	t.Helper()
	env := append(os.Environ(), "DISPLAY="+d.display, "DBUS_SESSION_BUS_ADDRESS="+d.busAddr,
		"FAKE_CLAUDE_SCRIPT="+d.script, "LANG=en_US.UTF-8")
	if dir := os.Getenv("BENCH_IDLE_PROFILE"); dir != "" {
		env = append(env, "SESSION_SUPERVISOR_PROFILE="+dir)
	}
	bin := d.bin
	if app := os.Getenv("BENCH_IDLE_APP"); app != "" {
		bin = app // another build's desktop, for a before and after
	}
	desk := startApp(t, bin, env, "--data-dir", d.dir, "run")
	eventually(t, "the desktop's tray registration", 30*time.Second, func() bool { return d.sni.first() != "" })
	return desk
}

// trayTitles counts the sessions of want that the menu lists, at any depth
// (the ones past the top level are under "More…"), each once.
func trayTitles(m menuItem, want map[string]bool) int {
	seen := map[string]bool{}
	var walk func(menuItem)
	walk = func(m menuItem) {
		for _, c := range m.Children {
			// A session's label is "● name — State · age".
			if f := strings.Fields(c.Label); len(f) > 2 && f[2] == "—" && want[f[1]] {
				seen[f[1]] = true
			}
			walk(c)
		}
	}
	walk(m)
	return len(seen)
}

// childPids is the set of pid's children (the ssh processes a desktop
// runs, one per connection to a machine).
func childPids(t *testing.T, pid int) map[int]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]bool{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue // gone meanwhile
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out[child] = true
		}
	}
	return out
}
