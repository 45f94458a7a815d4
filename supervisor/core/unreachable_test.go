package core

import (
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// A terminal session its source cannot reach (Codex: no inbox): what
// recovery would send it escalates instead, with the evidence; a managed
// session, or one that can be reached, is acted on as before.
func TestReconcileUnreachableEscalates(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := BasePolicy()
	p.Enabled, p.AutoRecover, p.NudgeEnabled, p.NudgeMaxAttempts = true, true, true, 2
	p.StallSuspect, p.StallHard = time.Minute, 2*time.Minute
	p.NudgeCooldown = time.Minute
	interrupted := func(src sessions.Source) sessions.Session {
		return sessions.Session{ID: "s", Source: src, State: sessions.Interrupted, TurnGeneration: 3, PID: 7,
			ProcessAlive: true, Evidence: "you stopped", StateChangedAt: now.Add(-time.Hour), LastEventAt: now.Add(-time.Hour)}
	}
	stalled := sessions.Session{ID: "s", Source: sessions.Observed, State: sessions.Suspect, InTurn: true, TurnGeneration: 3, PID: 7,
		ProcessAlive: true, Evidence: "silent", LastEventAt: now.Add(-10 * time.Minute), StateChangedAt: now.Add(-9 * time.Minute)}
	limited := sessions.Session{ID: "s", Source: sessions.Observed, State: sessions.Recovering, TurnGeneration: 3, PID: 7,
		ProcessAlive: true, Evidence: "rate limited; continuing at 11:59", StateChangedAt: now.Add(-time.Hour), LastEventAt: now.Add(-time.Hour),
		Failure:     sessions.Failure{Kind: sessions.RateLimit, RetryAt: now.Add(-time.Second)},
		Supervision: sessions.Supervision{Recovery: RecoveryRateLimit, NextAttemptAt: now.Add(-time.Second), IncidentStarted: now.Add(-time.Hour)}}
	reach := Probe{Known: true, Alive: true}
	none := Probe{Known: true, Alive: true, Unreachable: true}
	for _, tc := range []struct {
		name     string
		s        sessions.Session
		probe    Probe
		want     ActionKind
		escalate bool
	}{
		{"reachable: nudged", interrupted(sessions.Observed), reach, ActNudge, false},
		{"no way in: escalated instead of the nudge", interrupted(sessions.Observed), none, ActEscalate, true},
		{"managed: the flag means nothing", interrupted(sessions.Managed), none, ActNudge, false},
		{"hard stall, no way in: escalated instead of the interrupt", stalled, none, ActEscalate, true},
		{"usage limit over, reachable: continued", limited, reach, ActContinue, false},
		{"usage limit over, no way in: escalated instead of the continue", limited, none, ActEscalate, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Not through reconcile: its invariants reject the escalated
			// usage-limit hold (Recovering, its recovery cleared), a case
			// the next tick repairs; only the change flag is checked here.
			n, _, acts, changed := Reconcile(tc.s, now, p, tc.probe)
			if msg := changeMisreported(tc.s, n, changed); msg != "" {
				t.Fatal(msg)
			}
			var got []ActionKind
			for _, a := range acts {
				got = append(got, a.Kind)
			}
			if len(got) != 1 || got[0] != tc.want || n.NeedsAttention != tc.escalate {
				t.Fatalf("actions %v needs attention %v (%s); want %v", got, n.NeedsAttention, n.Evidence, tc.want)
			}
			if tc.escalate && !strings.Contains(n.Evidence, "offers no way in") {
				t.Errorf("evidence %q does not say why", n.Evidence)
			}
		})
	}
}
