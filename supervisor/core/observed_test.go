package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Reconcile's rules for a session the app did not launch: its stall chain
// ends in escalation after the urgent nudge (never SIGTERM or SIGKILL), an
// overflow escalates (no /compact can be typed), and a dead process is
// escalated rather than nudged.
func TestReconcileObservedActions(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := BasePolicy()
	p.Enabled, p.AutoRecover, p.NudgeEnabled, p.NudgeMaxAttempts = true, true, true, 2
	p.StallSuspect, p.StallHard = time.Minute, 2*time.Minute
	p.NudgeCooldown = time.Minute
	stalled := func(src sessions.Source) sessions.Session {
		return sessions.Session{ID: "s", Source: src, State: sessions.Suspect, InTurn: true, TurnGeneration: 3, PID: 7,
			ProcessAlive: true, Evidence: "silent", LastEventAt: now.Add(-10 * time.Minute),
			Supervision: sessions.Supervision{Recovery: RecoveryStall, RecoveryAttempts: stallInterrupted,
				InterruptSentAt: now.Add(-time.Minute), NextAttemptAt: now.Add(-30 * time.Second)}}
	}
	dead := func(st sessions.State, f sessions.FailureKind) sessions.Session {
		return sessions.Session{ID: "s", Source: sessions.Observed, State: st, TurnGeneration: 3, Evidence: "x",
			Failure: sessions.Failure{Kind: f}}
	}
	alive := func(st sessions.State, f sessions.FailureKind) sessions.Session {
		s := dead(st, f)
		s.ProcessAlive = true
		return s
	}
	cases := []struct {
		name     string
		s        sessions.Session
		probe    Probe
		want     []ActionKind
		escalate bool
	}{
		{"managed stall past grace: SIGTERM", stalled(sessions.Managed), Probe{Known: true, Alive: true}, []ActionKind{ActTerminate}, false},
		{"observed stall past grace: escalate, no signal", stalled(sessions.Observed), Probe{Known: true, Alive: true}, []ActionKind{ActEscalate}, true},
		{"observed overflow: escalate", alive(sessions.Errored, sessions.ContextOverflow), Probe{Known: true, Alive: true}, []ActionKind{ActEscalate}, true},
		{"observed interrupted, process gone: escalate", dead(sessions.Interrupted, 0), Probe{Known: true}, []ActionKind{ActEscalate}, true},
		{"observed rate limit, process gone: escalate", dead(sessions.Errored, sessions.RateLimit), Probe{Known: true}, []ActionKind{ActEscalate}, true},
		{"observed interrupted, process alive: nudge", alive(sessions.Interrupted, 0), Probe{Known: true, Alive: true}, []ActionKind{ActNudge}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, _, acts := Reconcile(tc.s, now, p, tc.probe)
			var got []ActionKind
			for _, a := range acts {
				got = append(got, a.Kind)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || n.NeedsAttention != tc.escalate {
				t.Fatalf("actions %v needs attention %v (%s); want %v %v", got, n.NeedsAttention, n.Evidence, tc.want, tc.escalate)
			}
		})
	}
}
