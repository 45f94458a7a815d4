//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/session-supervisor/session-supervisor/requiretool"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// focusWorld is the app and a launcher script that starts the real
// interactive CLI on the fake API in whatever terminal runs it (a tmux
// pane, an xterm), both on a temporary HOME.
type focusWorld struct {
	t        *testing.T
	h        *appE2E
	home     string
	launcher string
	dir      string // short: tmux's socket lives here
}

func startFocusWorld(t *testing.T) *focusWorld {
	bin := interactiveClaude(t)
	w := &focusWorld{t: t, home: t.TempDir(), dir: shortTempDir(t)}
	work := t.TempDir()
	api, proxy := claudeTerminalFakes(t, w.home, work)
	run := filepath.Join(w.dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	// The CLI's environment is the hermetic one only, but for the TMUX
	// and kitty variables its pane or tab gives it (as a person's shell
	// would pass on).
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\ncd %s || exit 1\nexec env -i TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\" KITTY_WINDOW_ID=\"$KITTY_WINDOW_ID\" KITTY_LISTEN_ON=\"$KITTY_LISTEN_ON\"", shellQuote(work))
	for _, kv := range append(fakeapi.HermeticEnv(w.home, api.URL(), proxy), "TERM=xterm-256color", "XDG_RUNTIME_DIR="+run) {
		b.WriteString(" " + shellQuote(kv))
	}
	b.WriteString(" " + shellQuote(bin) + "\n")
	w.launcher = filepath.Join(w.dir, "claude.sh")
	if err := os.WriteFile(w.launcher, []byte(b.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	w.h = newAppE2E(t, `{"turns": [[]]}`)
	w.h.env = append(w.h.env, "HOME="+w.home)
	w.h.start()
	return w
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// session waits until `ls --json` lists the terminal session of pid
// satisfying ok.
func (w *focusWorld) session(pid int, limit time.Duration, what string, ok func(sessions.Session) bool) sessions.Session {
	w.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s, list, found := terminalSessionOf(w.h, pid, ok)
		if found {
			return s
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no terminal session of pid %d %s within %s: %+v", pid, what, limit, list)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tmuxWorld is a real tmux server on a socket of the test's own with two
// sessions: "other" (one window) and "work", whose second window is split
// with the real CLI in pane 1; window 0 and pane 0 are current.
type tmuxWorld struct {
	t    *testing.T
	sock string
	pid  int // the CLI's, in work:1.1
}

func startTmuxWorld(t *testing.T, w *focusWorld) *tmuxWorld {
	requiretool.Any(t, "tmux")
	tw := &tmuxWorld{t: t, sock: filepath.Join(w.dir, "tmux.sock")}
	tw.run("new-session", "-d", "-s", "other", "-x", "120", "-y", "40", "sleep 600")
	server, _ := strconv.Atoi(tw.run("display-message", "-p", "#{pid}"))
	t.Cleanup(func() {
		exec.Command("tmux", "-S", tw.sock, "kill-server").Run()
		for deadline := time.Now().Add(5 * time.Second); pidAlive(server) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	})
	tw.run("new-session", "-d", "-s", "work", "-x", "120", "-y", "40", "sleep 600")
	tw.run("new-window", "-t", "work", "sleep 600")
	tw.run("split-window", "-t", "work:1", w.launcher)
	tw.run("select-pane", "-t", "work:1.0")
	tw.run("select-window", "-t", "work:0")
	var err error
	if tw.pid, err = strconv.Atoi(tw.run("display-message", "-p", "-t", "work:1.1", "#{pane_pid}")); err != nil {
		t.Fatal(err)
	}
	// Before the server goes: the CLI outlives its terminal's hangup.
	t.Cleanup(func() { syscall.Kill(tw.pid, syscall.SIGKILL) })
	return tw
}

func (tw *tmuxWorld) run(args ...string) string {
	tw.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", tw.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		tw.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// attached waits until the server's only client shows session.
func (tw *tmuxWorld) attached(session string) {
	tw.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); tw.run("list-clients", "-F", "#{client_session}") != session; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			tw.t.Fatalf("no client on %s: %q", session, tw.run("list-clients", "-F", "#{client_session}"))
		}
	}
}

// focused checks that work:1.1 is current in its session and is what the
// only client shows.
func (tw *tmuxWorld) focused() {
	tw.t.Helper()
	if got := tw.run("display-message", "-p", "-t", "work", "#{window_index}.#{pane_index}"); got != "1.1" {
		tw.t.Errorf("current window.pane of work is %s, want 1.1", got)
	}
	client := tw.run("list-clients", "-F", "#{client_tty}")
	if got := tw.run("display-message", "-p", "-c", client, "#{session_name}:#{window_index}.#{pane_index}"); got != "work:1.1" {
		tw.t.Errorf("the client shows %s, want work:1.1", got)
	}
}

// located waits until the app locates the CLI in work:1.1 of this server.
func (tw *tmuxWorld) located(w *focusWorld) sessions.Session {
	tw.t.Helper()
	s := w.session(tw.pid, 60*time.Second, "located in tmux", func(s sessions.Session) bool {
		return s.Terminal != nil && s.Terminal.Kind == termloc.KindTmux
	})
	if got := s.Terminal.Tmux.Target(); got != "work:1.1" || s.Terminal.Tmux.Socket != tw.sock {
		tw.t.Fatalf("located in %s on %s, want work:1.1 on %s", got, s.Terminal.Tmux.Socket, tw.sock)
	}
	return s
}

// The real interactive CLI in pane 1 of the second window of tmux session
// "work", with window 0 and pane 0 current and the only client (under a
// pty) attached to another session: the app locates the pane (show
// --json), and `focus` makes window 1 and pane 1 current and switches the
// client to "work". Once the CLI is gone, focus says so and where it was.
func TestFocusTmuxPane(t *testing.T) {
	t.Parallel()
	w := startFocusWorld(t)
	tw := startTmuxWorld(t, w)

	// A second client, as a person's terminal would be, on "other".
	client := exec.Command("tmux", "-S", tw.sock, "attach", "-t", "other")
	client.Env = append(os.Environ(), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(client, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, ptmx)
	t.Cleanup(func() { client.Process.Kill(); client.Wait(); ptmx.Close() })
	tw.attached("other")

	s := tw.located(w)
	var shown struct {
		Terminal *termloc.Location `json:"terminal"`
	}
	if err := json.Unmarshal([]byte(w.h.mustCLI("show", s.ID, "--json")), &shown); err != nil || shown.Terminal == nil || shown.Terminal.Tmux == nil {
		t.Fatalf("show --json has no tmux terminal: %+v, %v", shown, err)
	}
	if out := w.h.mustCLI("show", s.ID); !strings.Contains(out, "tmux work:1.1, not attached") {
		t.Errorf("show does not say where it runs:\n%s", out)
	}

	// The client runs under the test's pty, not in a terminal window, and
	// the CLI has no display: focus does the tmux part, then says it could
	// not raise a window and exits non-zero.
	start := time.Now()
	code, out, errOut := w.h.cli("focus", s.ID)
	t.Logf("focus took %s: exit %d\n%s%s", time.Since(start).Round(time.Millisecond), code, out, errOut)
	tw.focused()
	if !strings.Contains(out, "switched tmux client") || code == 0 || !strings.Contains(errOut, "no X display") {
		t.Errorf("focus without a display: exit %d, stdout %q, stderr %q; want the tmux steps done and the raise refused", code, out, errOut)
	}

	// The refreshed location sees the client on "work".
	w.session(tw.pid, 30*time.Second, "attached after the focus", func(s sessions.Session) bool {
		return s.Terminal != nil && strings.HasPrefix(s.Terminal.String(), "tmux work:1.1, attached in ")
	})

	// Gone: the pane's CLI killed, focus names where it was.
	tw.run("kill-pane", "-t", "work:1.1")
	w.session(tw.pid, 30*time.Second, "exited", func(s sessions.Session) bool { return !s.ProcessAlive })
	code, _, errOut = w.h.cli("focus", s.ID)
	if code == 0 || !strings.Contains(errOut, "is gone") || !strings.Contains(errOut, "tmux work:1.1") {
		t.Errorf("focus of a gone terminal: exit %d, %q; want it gone, last seen in tmux work:1.1", code, errOut)
	}
}

// x11World is Xvfb with openbox (a window manager from Debian that
// implements EWMH), and what the test starts on it.
type x11World struct {
	t       *testing.T
	display string
	env     []string
}

func startX11World(t *testing.T, home string) *x11World {
	for _, tool := range []string{"Xvfb", "openbox", "xterm", "wmctrl", "xprop"} {
		requiretool.Any(t, tool)
	}
	x := &x11World{t: t, display: startXvfb(t)}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "DISPLAY" && k != "WAYLAND_DISPLAY" && k != "HOME" && k != "TMUX" {
			x.env = append(x.env, kv)
		}
	}
	x.env = append(x.env, "DISPLAY="+x.display, "HOME="+home)
	startOpenbox(t, x.env)
	return x
}

// startOpenbox runs openbox on env's display until the test ends and
// returns once it manages windows.
func startOpenbox(t *testing.T, env []string) {
	t.Helper()
	// 10 s was not enough once with four X worlds starting side by side
	// on a loaded two-core machine, and once in a full run openbox was
	// not up after 30 s: one that exits is started again, and what it
	// said is in the failure.
	var said strings.Builder
	var mu sync.Mutex
	startWM := func() <-chan struct{} {
		cmd := exec.Command("openbox", "--sm-disable")
		cmd.Env = env
		out := &lockedWriter{mu: &mu, w: &said}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting openbox: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-exited })
		return exited
	}
	exited := startWM()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		xprop := exec.Command("xprop", "-root", "_NET_SUPPORTING_WM_CHECK")
		xprop.Env = env
		if out, err := xprop.CombinedOutput(); err == nil && strings.Contains(string(out), "window id") {
			return
		}
		select {
		case <-exited:
			exited = startWM()
		default:
		}
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("openbox did not start in 60 s; it said: %q", said.String())
		}
	}
}

// lockedWriter serialises writes of two streams into one builder.
type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (x *x11World) start(name string, args ...string) *exec.Cmd {
	x.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = x.env
	if err := cmd.Start(); err != nil {
		x.t.Fatalf("starting %s: %v", name, err)
	}
	x.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func (x *x11World) output(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = x.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// window is the id of the managed window of process pid.
func (x *x11World) window(pid int) int64 {
	x.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _ := x.output("wmctrl", "-l", "-p")
		if id, ok := termloc.WindowOfPID(out, pid); ok {
			n, err := strconv.ParseInt(strings.TrimPrefix(id, "0x"), 16, 64)
			if err != nil {
				x.t.Fatal(err)
			}
			return n
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("no window of pid %d: %s", pid, out)
		}
	}
}

// active is the root window's _NET_ACTIVE_WINDOW.
func (x *x11World) active() int64 {
	x.t.Helper()
	out, err := x.output("xprop", "-root", "_NET_ACTIVE_WINDOW")
	_, id, ok := strings.Cut(out, "# ")
	n, perr := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(id), "0x"), 16, 64)
	if err != nil || !ok || perr != nil {
		x.t.Fatalf("reading _NET_ACTIVE_WINDOW: %q, %v", out, err)
	}
	return n
}

func (x *x11World) activate(win int64) {
	x.t.Helper()
	if out, err := x.output("wmctrl", "-i", "-a", fmt.Sprintf("%#x", win)); err != nil {
		x.t.Fatalf("activating %#x: %v: %s", win, err, out)
	}
	x.waitActive(win, "activating it by hand")
}

func (x *x11World) waitActive(win int64, what string) {
	x.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); x.active() != win; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			x.t.Fatalf("%s: the active window is %#x, want %#x", what, x.active(), win)
		}
	}
}

// cliPID waits for the CLI the launcher started in a terminal (named by
// in) to register, and kills it with the test: killing its terminal
// leaves it running (it outlives its hangup).
func (w *focusWorld) cliPID(in string) int {
	w.t.Helper()
	var pid int
	for deadline := time.Now().Add(60 * time.Second); pid == 0; time.Sleep(50 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(w.home, ".claude", "sessions", "*.json"))
		if len(files) > 0 {
			pid, _ = strconv.Atoi(strings.TrimSuffix(filepath.Base(files[0]), ".json"))
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("the CLI in the %s wrote no session file in 60 s", in)
		}
	}
	w.t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// X11 under Xvfb with openbox (EWMH): two xterms, the session's CLI in the
// one that is not active; `focus` makes its window the active one, read
// back from the root window's _NET_ACTIVE_WINDOW.
func TestFocusX11Window(t *testing.T) {
	t.Parallel()
	w := startFocusWorld(t)
	x := startX11World(t, w.dir)
	mine := x.start("xterm", "-e", w.launcher)
	other := x.start("xterm", "-e", "sleep", "600")
	winMine, winOther := x.window(mine.Process.Pid), x.window(other.Process.Pid)
	x.activate(winOther)

	pid := w.cliPID("xterm")
	s := w.session(pid, 60*time.Second, "located in the xterm", func(s sessions.Session) bool {
		return s.Terminal != nil && s.Terminal.Kind == termloc.KindEmulator && s.Terminal.Holder.PID == mine.Process.Pid
	})
	t.Logf("located: %s", s.Terminal)
	x.waitActive(winOther, "the session found") // nothing raised it on the way

	w.h.env = append(w.h.env, "DISPLAY="+x.display)
	start := time.Now()
	out := w.h.mustCLI("focus", s.ID)
	t.Logf("focus took %s: %s", time.Since(start).Round(time.Millisecond), out)
	if !strings.Contains(out, "raised the xterm window") {
		t.Errorf("focus says %q", out)
	}
	x.waitActive(winMine, "after focus")
}

// The whole chain: the CLI in tmux pane work:1.1, the server's only client
// in an xterm showing "other", another xterm active. `focus` selects the
// window and pane, switches that client to "work" and activates the xterm
// that holds it.
func TestFocusTmuxClientInXterm(t *testing.T) {
	t.Parallel()
	w := startFocusWorld(t)
	tw := startTmuxWorld(t, w)
	x := startX11World(t, w.dir)
	holder := x.start("xterm", "-e", "tmux", "-S", tw.sock, "attach", "-t", "other")
	other := x.start("xterm", "-e", "sleep", "600")
	winHolder, winOther := x.window(holder.Process.Pid), x.window(other.Process.Pid)
	tw.attached("other")
	x.activate(winOther)

	s := w.session(tw.pid, 60*time.Second, "located with its client in the xterm", func(s sessions.Session) bool {
		if s.Terminal == nil || s.Terminal.Tmux == nil || len(s.Terminal.Tmux.Clients) != 1 {
			return false
		}
		e := s.Terminal.Tmux.Clients[0].Emulator
		return e != nil && e.PID == holder.Process.Pid
	})
	t.Logf("located: %s", s.Terminal)

	w.h.env = append(w.h.env, "DISPLAY="+x.display)
	start := time.Now()
	out := w.h.mustCLI("focus", s.ID)
	t.Logf("focus took %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	tw.focused()
	x.waitActive(winHolder, "after focus")
}

// kitty with its remote control on a socket: the CLI in the first tab,
// a second tab opened after it (so the CLI's is not the one shown) and
// an xterm active. `focus` selects the CLI's kitty window (its tab comes
// forward, read back from `kitty @ ls`) and activates kitty's X window.
func TestFocusKittyTab(t *testing.T) {
	t.Parallel()
	requiretool.Any(t, "kitty")
	w := startFocusWorld(t)
	x := startX11World(t, w.dir)
	sock := "unix:" + filepath.Join(w.dir, "kitty.sock")
	x.env = append(x.env, "KITTY_CONFIG_DIRECTORY="+t.TempDir())
	kitty := x.start("kitty", "-o", "allow_remote_control=yes", "--listen-on", sock, w.launcher)
	// kitty's prewarmed helper leaves its process group: it is found by
	// the socket its command line names.
	t.Cleanup(func() { reap(strings.TrimPrefix(sock, "unix:")) })
	pid := w.cliPID("kitty")
	if out, err := x.output("kitty", "@", "--to", sock, "launch", "--type=tab", "sleep", "600"); err != nil {
		t.Fatalf("opening a second kitty tab: %v: %s", err, out)
	}
	other := x.start("xterm", "-e", "sleep", "600")
	winKitty, winOther := x.window(kitty.Process.Pid), x.window(other.Process.Pid)
	x.activate(winOther)
	if tab := kittyFocusedWindow(t, x, sock); tab == "1" {
		t.Fatal("the CLI's kitty window is focused before focus: the test shows nothing")
	}

	s := w.session(pid, 60*time.Second, "located in its kitty window", func(s sessions.Session) bool {
		return s.Terminal != nil && s.Terminal.Kind == termloc.KindEmulator && s.Terminal.Tab != nil
	})
	t.Logf("located: %s", s.Terminal)
	if tab := s.Terminal.Tab; tab.Emulator != termloc.EmulatorKitty || tab.ID != "1" || tab.Socket != sock {
		t.Fatalf("tab %+v, want kitty window 1 on %s", tab, sock)
	}

	w.h.env = append(w.h.env, "DISPLAY="+x.display)
	out := w.h.mustCLI("focus", s.ID)
	t.Logf("focus: %s", out)
	if !strings.Contains(out, "selected kitty window 1") || !strings.Contains(out, "raised the kitty window") {
		t.Errorf("focus says %q", out)
	}
	if tab := kittyFocusedWindow(t, x, sock); tab != "1" {
		t.Errorf("kitty's focused window is %s after focus, want 1 (the CLI's)", tab)
	}
	x.waitActive(winKitty, "after focus")
}

// kittyFocusedWindow is the id of the window of kitty's active tab, read
// through its remote control.
func kittyFocusedWindow(t *testing.T, x *x11World, sock string) string {
	t.Helper()
	out, err := x.output("kitty", "@", "--to", sock, "ls")
	if err != nil {
		t.Fatalf("kitty @ ls: %v: %s", err, out)
	}
	var osWindows []struct {
		Tabs []struct {
			IsFocused bool `json:"is_focused"`
			Windows   []struct {
				ID        int  `json:"id"`
				IsFocused bool `json:"is_focused"`
			} `json:"windows"`
		} `json:"tabs"`
	}
	if err := json.Unmarshal([]byte(out), &osWindows); err != nil {
		t.Fatalf("kitty @ ls: %v: %s", err, out)
	}
	for _, o := range osWindows {
		for _, tab := range o.Tabs {
			for _, win := range tab.Windows {
				if tab.IsFocused && win.IsFocused {
					return strconv.Itoa(win.ID)
				}
			}
		}
	}
	return ""
}
