//go:build linux

package termsys

import (
	"context"
	"errors"
	"github.com/session-supervisor/session-supervisor/requiretool"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// tmuxServer starts a real tmux server on a socket of the test's own, with
// a session "work" whose second window is split in two (the test's
// process in pane 1), and returns the socket and a tmux runner.
func tmuxServer(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	requiretool.Any(t, "tmux")
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	tmux("new-session", "-d", "-s", "work", "-x", "100", "-y", "30", "sleep 600")
	t.Cleanup(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
	tmux("new-window", "-t", "work", "sleep 600")
	tmux("split-window", "-t", "work:1", "sleep 601")
	tmux("select-pane", "-t", "work:1.0")
	tmux("select-window", "-t", "work:0")
	return sock, tmux
}

// A process in a tmux pane is located by its tty (the pane, its window and
// session, the server's socket); focus with no client attached selects the
// window and pane and says how to attach, never silently nothing.
func TestLocateAndFocusTmuxPane(t *testing.T) {
	sock, tmux := tmuxServer(t)
	pid, err := strconv.Atoi(tmux("display-message", "-p", "-t", "work:1.1", "#{pane_pid}"))
	if err != nil {
		t.Fatal(err)
	}
	loc, err := Locate(context.Background(), pid)
	if err != nil {
		t.Fatal(err)
	}
	if loc.Kind != termloc.KindTmux || loc.Tmux.Target() != "work:1.1" || loc.Tmux.Socket != sock {
		t.Fatalf("located %+v (%s), want tmux work:1.1 on %s", loc, loc, sock)
	}
	if got := loc.String(); got != "tmux work:1.1, not attached" {
		t.Errorf("String() = %q", got)
	}
	res, err := Focus(context.Background(), loc)
	if err == nil || !errors.Is(err, termloc.ErrCannotFocus) || !strings.Contains(err.Error(), "attach -t work:1.1") {
		t.Fatalf("focus with no client: %v, want the attach hint", err)
	}
	if len(res.Did) != 2 {
		t.Errorf("did %q, want the window and pane selected", res.Did)
	}
	if got := tmux("display-message", "-p", "-t", "work", "#{window_index}.#{pane_index}"); got != "1.1" {
		t.Errorf("active window.pane of work = %s, want 1.1", got)
	}
}

// A gone process, and one with no terminal, each say so.
func TestLocateGoneAndNoTTY(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	loc, err := Locate(context.Background(), pid)
	if err != nil {
		t.Fatal(err)
	}
	if loc.Kind != termloc.KindNone {
		// The test binary may itself run in a terminal; a child started
		// without setsid keeps it. Only a detached run has none.
		t.Logf("the test's child has a terminal: %s", loc)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := Locate(context.Background(), pid); !errors.Is(err, ErrGone) {
		t.Fatalf("locating a process that is gone: %v", err)
	}
	if _, err := Focus(context.Background(), nil); !errors.Is(err, termloc.ErrCannotFocus) {
		t.Fatalf("focus of no location: %v", err)
	}
}
