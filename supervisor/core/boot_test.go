package core

import (
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestBootReconcileKeepsTheUserStop(t *testing.T) {
	user, sup := sessions.ByUser, sessions.BySupervisor
	for _, tt := range []struct {
		by    *sessions.Actor
		state sessions.State
	}{{&user, sessions.WaitingOnUser}, {&sup, sessions.Interrupted}, {nil, sessions.Interrupted}} {
		s := sessions.Session{ID: "boot", State: sessions.Working, InTurn: true, TurnGeneration: 2, Evidence: "stream active"}
		s.InterruptBy = tt.by
		s.Permissions = []sessions.Permission{{RequestID: "r1", Tool: "Bash"}}
		s.Permission = &s.Permissions[0]
		n, rows, _ := BootReconcile(s, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), Probe{})
		wantRows := 1
		if tt.state == sessions.Interrupted {
			wantRows = 2 // and marked_interrupted
		}
		if n.State != tt.state || n.InTurn || n.InterruptBy != nil || n.Permission != nil || n.Permissions != nil || len(rows) != wantRows {
			t.Errorf("by %v: -> %v in turn %v, %d rows, permissions %v", tt.by, n.State, n.InTurn, len(rows), n.Permissions)
		}
		if tt.state == sessions.WaitingOnUser && (n.WaitReason != sessions.WaitReview || !strings.Contains(n.Evidence, "stopped at your request")) {
			t.Errorf("by the user: wait %q, evidence %q", n.WaitReason, n.Evidence)
		}
	}
}

// The app stopping does not stop a session running in a terminal, but its
// process may have died while the app was down (a crash, a reboot). At boot
// the process it names is probed: gone, the turn is Interrupted like a
// managed one (the recovery rules resume or escalate it), or a review when
// the user had stopped it; alive, or not to be told, the session stands as
// it was, to be followed again from its transcript. A managed session's
// process is never taken for alive (issue 20, item 1).
func TestBootReconcileTerminalSession(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	gone, alive, unknown := Probe{Known: true}, Probe{Known: true, Alive: true}, Probe{}
	user := sessions.ByUser
	for _, tc := range []struct {
		name     string
		src      sessions.Source
		inTurn   bool
		by       *sessions.Actor
		probe    Probe
		want     sessions.State
		inTurnAf bool
		aliveAf  bool
		evidence string
		marked   bool
	}{
		{"managed: never assumed alive", sessions.Managed, true, nil, alive, sessions.Interrupted, false, false, "in flight when the app last stopped", true},
		{"died while the app was down", sessions.Observed, true, nil, gone, sessions.Interrupted, false, false, "process 42 is gone", true},
		{"hooked, died while the app was down", sessions.Hooked, true, nil, gone, sessions.Interrupted, false, false, "process 42 is gone", true},
		{"stopped by the user, then died", sessions.Observed, true, &user, gone, sessions.WaitingOnUser, false, false, "at your request", false},
		{"still running", sessions.Observed, true, nil, alive, sessions.Working, true, true, "stream active", false},
		{"cannot be told", sessions.Observed, true, nil, unknown, sessions.Working, true, false, "stream active", false},
		{"at rest: not taken for alive until found", sessions.Observed, false, nil, alive, sessions.Working, false, false, "stream active", false},
		{"at rest, gone", sessions.Observed, false, nil, gone, sessions.Working, false, false, "stream active", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sessions.Session{ID: "s", Source: tc.src, State: sessions.Working, InTurn: tc.inTurn, TurnGeneration: 2, PID: 42,
				ProcessAlive: true, InterruptBy: tc.by, Evidence: "stream active"}
			n, obs, _ := BootReconcile(s, now, tc.probe)
			if n.State != tc.want || n.InTurn != tc.inTurnAf || n.ProcessAlive != tc.aliveAf || !strings.Contains(n.Evidence, tc.evidence) {
				t.Errorf("%v in turn %v alive %v (%s); want %v in turn %v alive %v (%q)",
					n.State, n.InTurn, n.ProcessAlive, n.Evidence, tc.want, tc.inTurnAf, tc.aliveAf, tc.evidence)
			}
			var marked, reconciled int
			for _, o := range obs {
				switch o.Kind {
				case TimelineMarkedInterrupted:
					marked++
					if o.Cause != sessions.CauseBoot {
						t.Errorf("marked with cause %q, want boot", o.Cause)
					}
				case TimelineBootReconciled:
					reconciled++
				}
			}
			if tc.marked != (marked == 1) || marked > 1 || tc.inTurn != (reconciled == 1) {
				t.Errorf("%d marked_interrupted, %d boot_reconciled rows: %+v", marked, reconciled, obs)
			}
		})
	}
}

// TestBootInterruptIsMarkedWithItsCause: a managed turn ended by the boot
// rule leaves a marked_interrupted row saying so; a user's stop (a review)
// and a terminal session whose process may still run do not (issue 20,
// item 12).
func TestBootInterruptIsMarkedWithItsCause(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	user := sessions.ByUser
	for _, tc := range []struct {
		name   string
		s      sessions.Session
		marked bool
	}{
		{"managed", sessions.Session{ID: "s", Source: sessions.Managed, State: sessions.Working, InTurn: true, TurnGeneration: 2}, true},
		{"stopped by the user", sessions.Session{ID: "s", Source: sessions.Managed, State: sessions.Working, InTurn: true, TurnGeneration: 2, InterruptBy: &user}, false},
		{"terminal", sessions.Session{ID: "s", Source: sessions.Observed, State: sessions.Working, InTurn: true, TurnGeneration: 2}, false},
	} {
		_, obs, _ := BootReconcile(tc.s, now, Probe{})
		var marked []Observation
		for _, o := range obs {
			if o.Kind == TimelineMarkedInterrupted {
				marked = append(marked, o)
			}
		}
		if tc.marked != (len(marked) == 1) || len(marked) > 1 {
			t.Errorf("%s: %d marked_interrupted rows (%+v)", tc.name, len(marked), obs)
		}
		if len(marked) == 1 && (marked[0].Cause != sessions.CauseBoot || marked[0].To != sessions.Interrupted) {
			t.Errorf("%s: marked %+v, want cause boot", tc.name, marked[0])
		}
	}
}
