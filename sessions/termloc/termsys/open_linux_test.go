//go:build linux

package termsys

import (
	"context"
	"errors"
	"github.com/session-supervisor/session-supervisor/requiretool"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// The user's default tmux server (TMUX_TMPDIR points it at the test's own
// directory): none runs, then one does; "Continue in terminal" opens its
// command in a new window in the session's directory, its words passed as
// they are (no shell reads them).
func TestOpenInDefaultTmuxServer(t *testing.T) {
	requiretool.Any(t, "tmux")
	dir, err := os.MkdirTemp("", "tx") // short: the socket's path is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("TMUX_TMPDIR", dir)
	t.Setenv("TMUX", "")
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	ctx := context.Background()
	if f := OpenFacts(ctx, ""); f.TmuxRunning {
		t.Fatalf("a tmux server is seen before one runs: %+v", f)
	}
	if _, err := termloc.Where(OpenFacts(ctx, "")); !errors.Is(err, termloc.ErrCannotOpen) {
		t.Fatalf("no tmux and no display: %v, want ErrCannotOpen", err)
	}
	if out, err := exec.Command("tmux", "-f", "/dev/null", "new-session", "-d", "-s", "home", "sleep 600").CombinedOutput(); err != nil {
		t.Fatalf("starting tmux: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "kill-server").Run() })
	f := OpenFacts(ctx, "")
	o, err := termloc.Where(f)
	if err != nil || o.Kind != termloc.OpenTmux {
		t.Fatalf("with a server: %+v, %v (facts %+v)", o, err, f)
	}
	cwd := t.TempDir()
	out := filepath.Join(cwd, "out")
	did, err := Open(ctx, o, cwd, []string{"sh", "-c", `pwd > out; echo "$1" >> out; sleep 600`, "sh", "a word; $(not run)"})
	if err != nil || !strings.HasPrefix(did, "opened tmux window home:1.0 running sh -c") {
		t.Fatalf("Open: %q, %v", did, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(out)
		if got := string(b); got == cwd+"\na word; $(not run)\n" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the window wrote %q", got)
		}
	}
	// A directory that is gone (tmux would open the window in HOME).
	if _, err := Open(ctx, o, filepath.Join(cwd, "missing"), []string{"true"}); !errors.Is(err, termloc.ErrCannotOpen) || !strings.Contains(err.Error(), "is not there") {
		t.Fatalf("a missing directory: %v", err)
	}
	exec.Command("tmux", "kill-server").Run()
	if _, err := Open(ctx, o, cwd, []string{"true"}); !errors.Is(err, termloc.ErrCannotOpen) || !strings.Contains(err.Error(), "new-window") {
		t.Fatalf("the server gone: %v, want ErrCannotOpen naming new-window", err)
	}
}

// An emulator that cannot open its window (it exits at once with a
// failure) is an error, not a silent nothing.
func TestOpenEmulatorThatFails(t *testing.T) {
	o := termloc.Opening{Kind: termloc.OpenEmulator, Emulator: []string{"false"}}
	if _, err := Open(context.Background(), o, t.TempDir(), []string{"claude"}); !errors.Is(err, termloc.ErrCannotOpen) || !strings.Contains(err.Error(), "exited at once") {
		t.Fatalf("got %v", err)
	}
}
