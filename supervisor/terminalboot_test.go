package supervisor

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// terminalInTurn is a stored terminal session whose turn was in flight when
// the app stopped, naming pid (and its start stamp) as its process.
func terminalInTurn(pid int, stamp string) sessions.Session {
	s := deadTerminal("")
	s.PID, s.PIDStart = pid, stamp
	s.State, s.InTurn, s.TurnAcked, s.ProcessAlive = sessions.Working, true, true, true
	s.Evidence, s.NeedsAttention, s.Supervision = "running Bash", false, sessions.Supervision{}
	s.LastEventAt = time.Now()
	return s
}

// process is a real child process for the test's length and its start
// stamp; gone kills it first (a pid no process has now).
func process(t *testing.T, gone bool) (int, string) {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	stamp := startStamp(pid)
	if stamp == "" {
		t.Fatal("no start stamp for a child process")
	}
	if gone {
		cmd.Process.Kill()
		cmd.Wait()
	} else {
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	return pid, stamp
}

// At boot every stored terminal session whose turn was in flight is
// probed by the pid and start stamp it had. A process that died while the
// app was down (a crash, a reboot; a reused pid is not it) makes the turn
// Interrupted (marked_interrupted, cause boot), and the first tick
// escalates it or, with supervisor.resume_terminal_sessions on, resumes it
// in the background. A process that still runs is left in its turn, to be
// followed again from its transcript (issue 20, item 1).
func TestBootProbesTerminalSessions(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the probe reads /proc")
	}
	for _, tc := range []struct {
		name   string
		gone   bool
		stamp  func(string) string
		resume bool
		// foundLater: the session was found after its process started
		// (else an hour before it: the process is a later one).
		foundLater bool
		// dead: the boot found the process gone.
		dead bool
	}{
		{name: "died while the app was down", gone: true, dead: true},
		{name: "died while the app was down, resumed", gone: true, resume: true, dead: true},
		{name: "its pid reused by another process", stamp: func(string) string { return "1" }, dead: true},
		{name: "still running", dead: false},
		{name: "still running, stored before its stamp was kept", stamp: func(string) string { return "" }, foundLater: true, dead: false},
		{name: "its pid reused, stored before its stamp was kept", stamp: func(string) string { return "" }, dead: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid, stamp := process(t, tc.gone)
			if tc.stamp != nil {
				stamp = tc.stamp(stamp)
			}
			seed := terminalInTurn(pid, stamp)
			if tc.foundLater {
				seed.CreatedAt = time.Now()
			}
			g := newRig(t, rigConfig{noAgent: !tc.resume, seed: []sessions.Session{seed}})
			s, _ := g.rt.Session(seed.ID)
			if !tc.dead {
				if s.State != sessions.Working || !s.InTurn || !s.ProcessAlive || s.Evidence != seed.Evidence {
					t.Fatalf("a live process: %v in turn %v alive %v (%s)", s.State, s.InTurn, s.ProcessAlive, s.Evidence)
				}
				g.rt.Tick(context.Background(), settings.Defaults())
				g.rt.Settle()
				if s, _ = g.rt.Session(seed.ID); s.State != sessions.Working || s.NeedsAttention {
					t.Fatalf("after a tick: %v attention %v (%s)", s.State, s.NeedsAttention, s.Evidence)
				}
				return
			}
			if s.State != sessions.Interrupted || s.InTurn || s.ProcessAlive || !strings.Contains(s.Evidence, "is gone") {
				t.Fatalf("a dead process: %v in turn %v alive %v (%s)", s.State, s.InTurn, s.ProcessAlive, s.Evidence)
			}
			var marked bool
			for _, r := range dbTimeline(t, g.store, s.ID) {
				if r.Kind == core.TimelineMarkedInterrupted && rowDetail(t, r)["cause"] == "boot" {
					marked = true
				}
			}
			if !marked {
				t.Errorf("no marked_interrupted row with cause boot: %v", rowKinds(dbTimeline(t, g.store, s.ID)))
			}
			set := settings.Defaults()
			set.ResumeTerminal = tc.resume
			if !tc.resume {
				g.rt.Tick(context.Background(), set)
				g.rt.Settle()
				s, _ = g.rt.Session(seed.ID)
				if !s.NeedsAttention || s.State != sessions.Interrupted || len(g.rt.Sessions()) != 1 {
					t.Fatalf("not escalated: %v attention %v (%s)", s.State, s.NeedsAttention, s.Evidence)
				}
				if why := sessions.WhyNotResumable(s); why != "" {
					t.Fatalf("not resumable: %s", why)
				}
				return
			}
			s = g.inRigCwd(s)
			args := filepath.Join(t.TempDir(), "args")
			t.Setenv("FAKE_CLAUDE_ARGS_FILE", args)
			set.AgentCommands = map[string]string{"claude": g.fake}
			g.rt.Tick(context.Background(), set)
			g.rt.Settle()
			checkResumed(t, g, s, args, "supervisor")
		})
	}
}
