//go:build linux

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// The app's start after a crash or a reboot, against the real interactive
// CLI in a pseudo-terminal: every stored terminal session whose turn was in
// flight is probed by the pid and start stamp it had (issue 20, item 1).
// A CLI killed while the app was down leaves an Interrupted turn that needs
// attention (marked_interrupted, cause boot), or, with
// supervisor.resume_terminal_sessions on, is resumed in the background; a
// CLI that still runs is followed again from its transcript, in its turn.
func TestTerminalRealCLIBoot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// killCLI: the CLI dies while the app is down.
		killCLI bool
		resume  bool
	}{
		{"the CLI died while the app was down", true, false},
		{"the CLI died while the app was down, resumed", true, true},
		{"the CLI still runs", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var o ptyOptions
			if tc.resume {
				o = ptyOptions{managedClaude: fakeapi.ClaudeBinary(t), settings: []string{
					"supervisor.resume_terminal_sessions", "true", "supervisor.tick_seconds", "5"}}
			}
			w := startPTYWorldWith(t, o)
			w.observed(time.Second, "listed", func(sessions.Session) bool { return true })
			time.Sleep(time.Second) // the prompt box is drawn
			w.typeLine("wait for it [[scenario:stall]]")
			working := w.observed(60*time.Second, "working", func(s sessions.Session) bool { return s.State == sessions.Working && s.InTurn })
			if working.PIDStart == "" {
				w.fail("the session keeps no start stamp of its process: %+v", working)
			}

			// A crash of the app (SIGKILL), or a quit (SIGINT) with the CLI
			// left running.
			if tc.killCLI {
				w.h.kill()
				if err := w.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				w.cmd.Wait()
			} else if code := w.h.interrupt(); code != 0 {
				t.Fatalf("the app quit with %d", code)
			}
			w.h.start()

			switch {
			case tc.resume:
				s, managed := w.resumed(60 * time.Second)
				w.bootRow(s.ID, "is gone")
				if managed.AgentSessionID != working.AgentSessionID {
					w.fail("the managed session runs agent session %s, want the terminal's %s", managed.AgentSessionID, working.AgentSessionID)
				}
			case tc.killCLI:
				s := w.observed(2*ptyTick+10*time.Second, "interrupted and escalated", func(s sessions.Session) bool {
					return s.State == sessions.Interrupted && s.NeedsAttention && !s.ProcessAlive && !s.InTurn
				})
				if !strings.Contains(s.Evidence, "while the app was down") || sessions.WhyNotResumable(s) != "" {
					w.fail("evidence %q, resumable: %q", s.Evidence, sessions.WhyNotResumable(s))
				}
				w.bootRow(s.ID, "is gone")
			default:
				s := w.observed(30*time.Second, "followed again in its turn", func(s sessions.Session) bool {
					return s.State == sessions.Working && s.InTurn && s.ProcessAlive
				})
				rows := w.bootRow(s.ID, "still runs")
				// Found again by its source after the boot.
				var found bool
				for _, r := range rows {
					found = found || r.Kind == "discovered" && r.Time.After(working.UpdatedAt)
					if r.Kind == "state_changed" && r.Time.After(working.UpdatedAt) && r.detail()["to"] == sessions.Idle.String() {
						w.fail("it went Idle after the boot:\n%s", dumpTimeline(rows))
					}
				}
				if !found {
					w.fail("not discovered again after the boot:\n%s", dumpTimeline(rows))
				}
			}
		})
	}
}

// bootRow checks the boot's boot_reconciled row says what it found
// (with a marked_interrupted row of cause boot when the process was gone)
// and returns the timeline, oldest first.
func (w *ptyWorld) bootRow(id, says string) []ce2eRow {
	w.t.Helper()
	rows := w.timeline(id)
	var booted, marked bool
	for _, r := range rows {
		booted = booted || r.Kind == core.TimelineBootReconciled && strings.Contains(r.message(), says)
		marked = marked || r.Kind == core.TimelineMarkedInterrupted && r.detail()["cause"] == "boot"
	}
	if !booted || marked != (says == "is gone") {
		w.fail("boot_reconciled saying %q: %v, marked_interrupted (boot): %v\n%s", says, booted, marked, dumpTimeline(rows))
	}
	return rows
}
