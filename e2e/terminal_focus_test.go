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
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// needTool is the path of a program a test runs; missing, it fails the
// test under E2E_REQUIRED (packaging/install-deps.sh test installs it) and
// skips it otherwise.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("%s is needed (packaging/install-deps.sh test): %v", name, err)
		if os.Getenv("E2E_REQUIRED") != "" || os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

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
	// variables its pane gives it (as a person's shell would pass on).
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\ncd %s || exit 1\nexec env -i TMUX=\"$TMUX\" TMUX_PANE=\"$TMUX_PANE\"", shellQuote(work))
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

// The real interactive CLI in pane 1 of the second window of tmux session
// "work", with window 0 and pane 0 current and the only client (under a
// pty) attached to another session: the app locates the pane (show
// --json), and `focus` makes window 1 and pane 1 current and switches the
// client to "work". Once the CLI is gone, focus says so and where it was.
func TestFocusTmuxPane(t *testing.T) {
	t.Parallel()
	needTool(t, "tmux")
	w := startFocusWorld(t)
	sock := filepath.Join(w.dir, "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	tmux("new-session", "-d", "-s", "other", "-x", "120", "-y", "40", "sleep 600")
	server, _ := strconv.Atoi(tmux("display-message", "-p", "#{pid}"))
	t.Cleanup(func() {
		exec.Command("tmux", "-S", sock, "kill-server").Run()
		for deadline := time.Now().Add(5 * time.Second); pidAlive(server) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	})
	tmux("new-session", "-d", "-s", "work", "-x", "120", "-y", "40", "sleep 600")
	tmux("new-window", "-t", "work", "sleep 600")
	tmux("split-window", "-t", "work:1", w.launcher)
	tmux("select-pane", "-t", "work:1.0")
	tmux("select-window", "-t", "work:0")
	pid, err := strconv.Atoi(tmux("display-message", "-p", "-t", "work:1.1", "#{pane_pid}"))
	if err != nil {
		t.Fatal(err)
	}

	// A second client, as a person's terminal would be, on "other".
	client := exec.Command("tmux", "-S", sock, "attach", "-t", "other")
	client.Env = append(os.Environ(), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(client, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, ptmx)
	t.Cleanup(func() { client.Process.Kill(); client.Wait(); ptmx.Close() })
	for deadline := time.Now().Add(10 * time.Second); tmux("list-clients", "-F", "#{client_session}") != "other"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the client did not attach: %q", tmux("list-clients", "-F", "#{client_session}"))
		}
	}

	s := w.session(pid, 60*time.Second, "located in tmux", func(s sessions.Session) bool {
		return s.Terminal != nil && s.Terminal.Kind == termloc.KindTmux
	})
	if got := s.Terminal.Tmux.Target(); got != "work:1.1" || s.Terminal.Tmux.Socket != sock {
		t.Fatalf("located in %s on %s, want work:1.1 on %s", got, s.Terminal.Tmux.Socket, sock)
	}
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
	if got := tmux("display-message", "-p", "-t", "work", "#{window_index}.#{pane_index}"); got != "1.1" {
		t.Errorf("current window.pane of work is %s, want 1.1", got)
	}
	if got := tmux("list-clients", "-F", "#{client_session}"); got != "work" {
		t.Errorf("the client shows %q, want work", got)
	}
	if got := tmux("display-message", "-p", "-c", tmux("list-clients", "-F", "#{client_tty}"), "#{session_name}:#{window_index}.#{pane_index}"); got != "work:1.1" {
		t.Errorf("the client shows %s, want work:1.1", got)
	}
	if !strings.Contains(out, "switched tmux client") || code == 0 || !strings.Contains(errOut, "no X display") {
		t.Errorf("focus without a display: exit %d, stdout %q, stderr %q; want the tmux steps done and the raise refused", code, out, errOut)
	}

	// The refreshed location sees the client on "work".
	w.session(pid, 30*time.Second, "attached after the focus", func(s sessions.Session) bool {
		return s.Terminal != nil && strings.HasPrefix(s.Terminal.String(), "tmux work:1.1, attached in ")
	})

	// Gone: the pane's CLI killed, focus names where it was.
	tmux("kill-pane", "-t", "work:1.1")
	w.session(pid, 30*time.Second, "exited", func(s sessions.Session) bool { return !s.ProcessAlive })
	code, _, errOut = w.h.cli("focus", s.ID)
	if code == 0 || !strings.Contains(errOut, "is gone") || !strings.Contains(errOut, "tmux work:1.1") {
		t.Errorf("focus of a gone terminal: exit %d, %q; want it gone, last seen in tmux work:1.1", code, errOut)
	}
}

// X11 under Xvfb with openbox (EWMH): two xterms, the session's CLI in the
// one that is not active; `focus` makes its window the active one, read
// back from the root window's _NET_ACTIVE_WINDOW.
func TestFocusX11Window(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"Xvfb", "openbox", "xterm", "wmctrl", "xprop"} {
		needTool(t, tool)
	}
	w := startFocusWorld(t)
	display := startXvfb(t)
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "DISPLAY" && k != "WAYLAND_DISPLAY" && k != "HOME" && k != "TMUX" {
			env = append(env, kv)
		}
	}
	env = append(env, "DISPLAY="+display, "HOME="+w.dir)
	x := func(name string, args ...string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", name, err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	xout := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	x("openbox", "--sm-disable")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if out, err := xout("xprop", "-root", "_NET_SUPPORTING_WM_CHECK"); err == nil && strings.Contains(out, "window id") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("openbox did not start")
		}
	}
	mine := x("xterm", "-e", w.launcher)
	other := x("xterm", "-e", "sleep", "600")
	window := func(pid int) int64 {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			out, _ := xout("wmctrl", "-l", "-p")
			if id, ok := termloc.WindowOfPID(out, pid); ok {
				n, err := strconv.ParseInt(strings.TrimPrefix(id, "0x"), 16, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("no window of pid %d: %s", pid, out)
			}
		}
	}
	active := func() int64 {
		out, err := xout("xprop", "-root", "_NET_ACTIVE_WINDOW")
		_, id, ok := strings.Cut(out, "# ")
		n, perr := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(id), "0x"), 16, 64)
		if err != nil || !ok || perr != nil {
			t.Fatalf("reading _NET_ACTIVE_WINDOW: %q, %v", out, err)
		}
		return n
	}
	waitActive := func(win int64, what string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); active() != win; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the active window is %#x, want %#x", what, active(), win)
			}
		}
	}
	winMine, winOther := window(mine.Process.Pid), window(other.Process.Pid)
	if out, err := xout("wmctrl", "-i", "-a", fmt.Sprintf("%#x", winOther)); err != nil {
		t.Fatalf("activating the other xterm: %v: %s", err, out)
	}
	waitActive(winOther, "before focus")

	var pid int
	for deadline := time.Now().Add(60 * time.Second); pid == 0; time.Sleep(50 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(w.home, ".claude", "sessions", "*.json"))
		if len(files) > 0 {
			pid, _ = strconv.Atoi(strings.TrimSuffix(filepath.Base(files[0]), ".json"))
		}
		if time.Now().After(deadline) {
			t.Fatal("the CLI in the xterm wrote no session file in 60 s")
		}
	}
	// Killing the xterm leaves the CLI running (it outlives its hangup).
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	s := w.session(pid, 60*time.Second, "located in the xterm", func(s sessions.Session) bool {
		return s.Terminal != nil && s.Terminal.Kind == termloc.KindEmulator && s.Terminal.Holder.PID == mine.Process.Pid
	})
	t.Logf("located: %s", s.Terminal)
	waitActive(winOther, "the session found") // nothing raised it on the way

	w.h.env = append(w.h.env, "DISPLAY="+display)
	start := time.Now()
	out := w.h.mustCLI("focus", s.ID)
	t.Logf("focus took %s: %s", time.Since(start).Round(time.Millisecond), out)
	if !strings.Contains(out, "raised the xterm window") {
		t.Errorf("focus says %q", out)
	}
	waitActive(winMine, "after focus")
}
