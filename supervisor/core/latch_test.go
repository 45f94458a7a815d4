package core

import (
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// An escalation that ends a hold of ours (Recovering, no turn in flight)
// leaves the session honestly Errored, never Recovering with no recovery
// behind it; and its sentence has no empty clause when the state arrived
// with no evidence (found by the soak: a managed rate-limit hold whose
// conversation a terminal resumed stayed Recovering for the share's
// length, and a terminal hold whose process was gone was escalated as
// "Recovering: ; resume it in the background…").
func TestEscalationEndsAHold(t *testing.T) {
	rateHold := func(src sessions.Source, evidence string) sessions.Session {
		s := hold(sessions.RateLimit, RecoveryRateLimit, 1, at(time.Hour))
		s.Source, s.Evidence, s.AgentSessionID = src, evidence, "c1"
		if src != sessions.Managed {
			s.ProcessAlive = false
		}
		return s
	}
	shared := rateHold(sessions.Managed, "rate limited; continuing at 10:00:00 (attempt 1/5)")
	shared.SharedWith = "t-0123456789"
	noEvidence := interrupted()
	noEvidence.Source, noEvidence.Evidence = sessions.Observed, ""
	honest := func(t *testing.T, out sessions.Session, _ []Observation, acts []Action) {
		t.Helper()
		if out.State == sessions.Recovering || out.Supervision.Recovery != "" || !out.NeedsAttention {
			t.Errorf("left %v with recovery %q, attention %v: %q", out.State, out.Supervision.Recovery, out.NeedsAttention, out.Evidence)
		}
		for _, s := range []string{out.Evidence, acts[len(acts)-1].Detail} {
			if s == "" || strings.HasPrefix(s, ";") || strings.Contains(s, ": ;") || strings.Contains(s, ":  ") {
				t.Errorf("a sentence with an empty clause: %q", s)
			}
		}
	}
	runCases(t, []rcase{
		{name: "a managed rate-limit hold, its conversation resumed in a terminal", s: shared, now: at(time.Minute), probe: alive,
			state: sessions.Errored, obs: []string{TimelineSharedConversation, TimelineStateChanged}, acts: []ActionKind{ActEscalate}, check: honest},
		{name: "a terminal rate-limit hold, its process gone", s: rateHold(sessions.Observed, "rate limited; continuing at 10:00:00 (attempt 1/5)"),
			now: at(time.Minute), probe: dead, state: sessions.Errored, obs: []string{TimelineStateChanged}, acts: []ActionKind{ActEscalate}, check: honest},
		{name: "a terminal hold with no evidence recorded, its process gone", s: rateHold(sessions.Observed, ""),
			now: at(time.Minute), probe: dead, state: sessions.Errored, obs: []string{TimelineStateChanged}, acts: []ActionKind{ActEscalate}, check: honest},
		{name: "an interrupted terminal session with no evidence recorded, its process gone", s: noEvidence,
			now: at(time.Minute), probe: dead, state: sessions.Interrupted, acts: []ActionKind{ActEscalate},
			check: func(t *testing.T, out sessions.Session, obs []Observation, acts []Action) {
				if d := acts[0].Detail; strings.Contains(d, ": ;") || !strings.HasPrefix(d, "Interrupted: resume it") {
					t.Errorf("escalation says %q", d)
				}
			}},
	})
}
