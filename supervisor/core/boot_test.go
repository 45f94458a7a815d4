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
		n, rows, _ := BootReconcile(s, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC))
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

// The app stopping does not interrupt a session running in a terminal: at
// boot it is not Interrupted (which would be nudged or escalated) but at
// rest until it is found running again; a managed one is Interrupted.
func TestBootReconcileObservedSession(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		src  sessions.Source
		want sessions.State
	}{{sessions.Managed, sessions.Interrupted}, {sessions.Observed, sessions.Idle}} {
		s := sessions.Session{ID: "s", Source: tc.src, State: sessions.Working, InTurn: true, TurnGeneration: 2, ProcessAlive: true}
		n, rows, _ := BootReconcile(s, now)
		wantRows := 1
		if tc.want == sessions.Interrupted {
			wantRows = 2 // and marked_interrupted
		}
		if n.State != tc.want || n.InTurn || n.ProcessAlive || len(rows) != wantRows {
			t.Errorf("%v: %v in turn %v alive %v, %d rows (%s)", tc.src, n.State, n.InTurn, n.ProcessAlive, len(rows), n.Evidence)
		}
	}
}

// TestBootInterruptIsMarkedWithItsCause: a managed turn ended by the boot
// rule leaves a marked_interrupted row saying so; a user's stop (a review)
// and a terminal session (Idle) do not (issue 20, item 12).
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
		_, obs, _ := BootReconcile(tc.s, now)
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
