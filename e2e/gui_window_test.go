package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// The desktop's window is a process of its own (`session-supervisor
// window`) that exists only while the window is open; the tray process runs
// no GUI toolkit. Under Xvfb with openbox, the tray read and clicked over
// D-Bus:
//  1. `run --tray`: the tray, and no window process;
//  2. the tray's Open starts one, whose window shows; left still, it
//     takes a click and a key at once (its event loop sleeps when idle);
//  3. Open again, Settings… and a second `run` start no second one;
//  4. closing the window (the window manager's close) ends its process,
//     the tray stays; Open, clicked once by the id read before a session
//     appeared (the menu changed meanwhile), starts a new one;
//  5. the tray's Quit ends both.
func TestDesktopWindowIsAProcessOfItsOwn(t *testing.T) {
	t.Parallel()
	requireTools(t, "openbox", "wmctrl", "xprop", "xdotool", "import")
	d := startDesktop(t)
	env := append(os.Environ(), "DISPLAY="+d.display, "DBUS_SESSION_BUS_ADDRESS="+d.busAddr, "LANG=en_US.UTF-8", "HOME="+t.TempDir(),
		"FAKE_CLAUDE_SCRIPT="+d.script)
	startOpenbox(t, env)
	app := startApp(t, d.bin, env, "--data-dir", d.dir, "run", "--tray")
	pid := app.cmd.Process.Pid
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("app output:\n%s", app.out.String())
		}
	})
	eventually(t, "the tray registration", 30*time.Second, func() bool { return d.sni.first() != "" })
	dest := fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", pid)
	clickItem := func(label string) {
		t.Helper()
		eventually(t, "clicking "+label, 20*time.Second, func() bool {
			m, err := getLayout(d.conn, dest, 0)
			if err != nil {
				return false
			}
			it, ok := findItem(m, label)
			return ok && click(d.conn, dest, it.ID) == nil
		})
	}
	wmctrl := func(args ...string) string {
		cmd := exec.Command("wmctrl", args...)
		cmd.Env = env
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	windowOf := func(p int) (string, bool) { return termloc.WindowOfPID(wmctrl("-l", "-p"), p) }

	// 1. The tray alone.
	eventually(t, "the tray menu", 20*time.Second, func() bool {
		m, err := getLayout(d.conn, dest, 0)
		_, ok := findItem(m, "Open Session Supervisor…")
		return err == nil && ok
	})
	if w := windowProcesses(t, pid); len(w) != 0 {
		t.Fatalf("the tray alone runs window processes %v", w)
	}

	// 2. Open.
	clickItem("Open Session Supervisor…")
	var child int
	eventually(t, "one window process", 30*time.Second, func() bool {
		w := windowProcesses(t, pid)
		if len(w) == 1 {
			child = w[0]
		}
		return len(w) == 1
	})
	eventually(t, "its window on the screen", 60*time.Second, func() bool { _, ok := windowOf(child); return ok })
	time.Sleep(time.Second)
	screenshot(t, d.display, "desktop-window-process.png")

	// 2b. The idle window still takes a click and a key at once: its event
	// loop sleeps when nothing happens (packaging/fyneoverlay) and input
	// wakes it. Each waits until the window has been still for 2 s, then
	// its pixels must change within 1 s of the input.
	win, _ := windowOf(child)
	xdotool := func(args ...string) {
		t.Helper()
		cmd := exec.Command("xdotool", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("xdotool %v: %v\n%s", args, err, out)
		}
	}
	// A click on the states filter (the list's top left) opens its menu;
	// Escape closes it. Both are cheap to draw (the Settings tab's first
	// build takes seconds on a loaded machine, with Fyne's loop as it
	// was too).
	reactsWhenIdle(t, env, win, "a click on the states filter", func() { xdotool("mousemove", "--window", win, "88", "61", "click", "1") })
	screenshot(t, d.display, "desktop-window-idle-click.png")
	// A key goes to the window with the input focus (the click gave it;
	// made sure before the window is left still).
	xdotool("windowfocus", "--sync", win)
	reactsWhenIdle(t, env, win, "the Escape key", func() { xdotool("key", "Escape") })
	screenshot(t, d.display, "desktop-window-idle-key.png")

	// 3. No second one.
	clickItem("Open Session Supervisor…")
	clickItem("Settings…")
	second := exec.Command(d.bin, "--data-dir", d.dir, "run")
	second.Env = env
	if out, err := second.CombinedOutput(); err != nil || !strings.Contains(string(out), "brought its window forward") {
		t.Fatalf("a second run: %v\n%s", err, out)
	}
	time.Sleep(2 * time.Second)
	if w := windowProcesses(t, pid); len(w) != 1 || w[0] != child {
		t.Fatalf("after Open, Settings… and a second run: window processes %v, want only %d", w, child)
	}

	// 4. Closing the window ends its process, not the tray's.
	win, _ = windowOf(child)
	wmctrl("-i", "-c", win)
	eventually(t, "the window process to end", 30*time.Second, func() bool { return !alive(child) })
	if w := windowProcesses(t, pid); len(w) != 0 {
		t.Fatalf("window processes %v after the window closed", w)
	}
	select {
	case <-app.exited:
		t.Fatal("the app exited when its window closed")
	default:
	}
	// A click is not lost to a change of the menu (issue 26): a tray host
	// that read the layout, then saw a session appear before its click
	// went out, clicks Open by the id it read. The tray keeps that id (the
	// session shows in a place kept for it), so one click opens the window.
	var menu menuItem
	listing := func(name string) func() bool {
		return func() bool {
			m, err := getLayout(d.conn, dest, 0)
			if err != nil {
				return false
			}
			menu = m
			return slices.ContainsFunc(m.Children, func(it menuItem) bool { return strings.Contains(it.Label, " "+name+" — ") })
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last tray menu read: %q", labelsOf(menu))
		}
	})
	newSession := func(name string) {
		t.Helper()
		if out, err := d.cli("new", "--cwd", d.cwd, "--name", name, "build it"); err != nil {
			t.Fatalf("new %s: %v\n%s", name, err, out)
		}
		eventually(t, "the tray listing "+name, 30*time.Second, listing(name))
	}
	// (The first session adds the sessions' section and its separator,
	// which rebuilds the menu; the race is about the next.)
	newSession("first")
	open, ok := findItem(menu, "Open Session Supervisor…")
	if !ok {
		t.Fatalf("no Open in the menu %q", labelsOf(menu))
	}
	newSession("second")
	if now, ok := findItem(menu, "Open Session Supervisor…"); !ok || now.ID != open.ID {
		t.Fatalf("Open's id %d after a session appeared, %d before: a click by the id read before is lost", now.ID, open.ID)
	}
	if err := click(d.conn, dest, open.ID); err != nil {
		t.Fatalf("clicking Open by the id read before the change: %v", err)
	}
	eventually(t, "a new window process after one click by the old id", 30*time.Second, func() bool {
		w := windowProcesses(t, pid)
		if len(w) == 1 {
			child = w[0]
		}
		return len(w) == 1
	})

	// 5. Quit ends both.
	clickItem("Quit")
	select {
	case <-app.exited:
		if err := app.cmd.ProcessState; !err.Success() {
			t.Fatalf("the app exited with %v after Quit", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the app did not quit")
	}
	eventually(t, "the window process to end with the app", 10*time.Second, func() bool { return !alive(child) })
}

// reactsWhenIdle waits until window win's pixels have not changed for 2 s,
// does act and fails unless they change within 1 s of it.
func reactsWhenIdle(t *testing.T, env []string, win, what string, act func()) {
	t.Helper()
	capture := func() []byte {
		t.Helper()
		cmd := exec.Command("import", "-window", win, "rgb:-")
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("capturing window %s: %v", win, err)
		}
		return out
	}
	before, still := capture(), time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Since(still) < 2*time.Second; {
		if time.Now().After(deadline) {
			t.Fatalf("window %s never stayed still for 2 s", win)
		}
		time.Sleep(200 * time.Millisecond)
		if now := capture(); !bytes.Equal(now, before) {
			before, still = now, time.Now()
		}
	}
	start := time.Now()
	act()
	for time.Since(start) < time.Second {
		if !bytes.Equal(capture(), before) {
			t.Logf("%s showed %v after it, on a window still for 2 s", what, time.Since(start).Round(time.Millisecond))
			return
		}
	}
	// Late or never: say which.
	for time.Since(start) < 10*time.Second {
		if !bytes.Equal(capture(), before) {
			t.Fatalf("%s on a window still for 2 s: it showed only %v after it", what, time.Since(start).Round(time.Millisecond))
		}
	}
	t.Fatalf("%s on a window still for 2 s: nothing changed in 10 s", what)
}

// windowProcesses are the live children of pid that run the window.
func windowProcesses(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after the
		// last parenthesis.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(pid) {
			continue
		}
		child, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) > 0 && args[len(args)-1] == "window" {
			out = append(out, child)
		}
	}
	return out
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}
