package main

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/termloc"
	"github.com/session-supervisor/session-supervisor/ui/fleet"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// Every way "Go to terminal" cannot work says why, and where the terminal
// was when that is known; none does nothing silently.
func TestFocusSessionRefusals(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("locating reads /proc")
	}
	// A process of our own with no terminal (a session of its own), and
	// one that exited after the app last saw it running.
	detached := exec.Command("sleep", "60")
	detached.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := detached.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { detached.Process.Kill(); detached.Wait() })
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	was := &termloc.Location{Kind: termloc.KindTmux, TTY: "/dev/pts/4", Tmux: &termloc.Tmux{Socket: "/s", Session: "work", Window: 2, Pane: 1}}
	for _, tc := range []struct {
		name string
		s    sessions.Session
		want []string
	}{
		{"managed", sessions.Session{ID: "m", Name: "m", Source: sessions.Managed, PID: detached.Process.Pid, ProcessAlive: true},
			[]string{"managed session", "no terminal"}},
		{"gone", sessions.Session{ID: "g", Name: "g", Source: sessions.Observed, PID: 4242, Terminal: was},
			[]string{"is gone", "it was in tmux work:2.1"}},
		{"gone since the app looked", sessions.Session{ID: "r", Name: "r", Source: sessions.Observed, PID: exited.Process.Pid, ProcessAlive: true, Terminal: was},
			[]string{"is gone", "tmux work:2.1"}},
		{"no terminal", sessions.Session{ID: "d", Name: "d", Source: sessions.Observed, PID: detached.Process.Pid, ProcessAlive: true},
			[]string{"has no terminal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := focusSession(context.Background(), tc.s)
			if !errors.Is(err, termloc.ErrCannotFocus) || len(res.Did) != 0 {
				t.Fatalf("focus = %v, %v; want a refusal", res, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

// Another machine's terminal is on that machine's screen: going to it says
// so, naming the machine, and tries nothing here.
func TestFocusRemoteTerminalSaysSo(t *testing.T) {
	s := sessions.Session{ID: model.Key("devbox", "abcd"), Name: "far", Source: sessions.Observed}
	_, err := focusAnyTerminal(context.Background(), s)
	if !errors.Is(err, fleet.ErrRemoteTerminal) || !strings.Contains(err.Error(), "far on devbox") {
		t.Fatalf("go to terminal of a remote session: %v", err)
	}
}
