package core

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Issue 20 item 7: a user's interrupt the agent ignores is enforced once the
// interrupt grace has passed — SIGTERM, SIGKILL, escalation, one step per
// grace — and the turn ends in review, never nudged. A terminal session is
// never signalled: it is escalated.
func TestReconcileUserStopIgnored(t *testing.T) {
	p := specPolicy()
	g := p.InterruptGrace
	asked := at(20 * time.Minute) // long silent: the stall rules would mark it Suspect
	stopped := func(s sessions.Session) sessions.Session {
		return apply(s, asked, sessions.Event{Kind: sessions.EvInterruptRequested, By: sessions.ByUser})
	}
	step := func(t *testing.T, s sessions.Session, now time.Time, want ...ActionKind) sessions.Session {
		t.Helper()
		out, _, acts := reconcile(t, s, now, p, alive)
		if !slices.Equal(actKinds(acts), want) {
			t.Fatalf("at ask+%v: actions %v, want %v", now.Sub(asked), actKinds(acts), want)
		}
		for _, a := range acts {
			if a.Kind != ActEscalate && a.TimelineKind != TimelineStopEnforced {
				t.Errorf("%v recorded as %q, want %q", a.Kind, a.TimelineKind, TimelineStopEnforced)
			}
		}
		if out.State != sessions.Working || !out.InTurn {
			t.Fatalf("at ask+%v: %v in turn %v; only the agent's end may end the turn", now.Sub(asked), out.State, out.InTurn)
		}
		return out
	}

	t.Run("managed: SIGTERM, SIGKILL, escalation", func(t *testing.T) {
		s0 := stopped(working())
		step(t, s0, asked.Add(g-time.Second)) // within the grace: nothing, not even Suspect
		s1 := step(t, s0, asked.Add(g), ActTerminate)
		if !strings.Contains(s1.Evidence, "your interrupt was ignored for 30 s; SIGTERM sent") {
			t.Errorf("evidence %q", s1.Evidence)
		}
		step(t, s1, asked.Add(g)) // the same tick again: not twice
		step(t, s1, asked.Add(2*g-time.Second))
		s2 := step(t, s1, asked.Add(2*g), ActKill)
		step(t, s2, asked.Add(3*g-time.Second))
		s3 := step(t, s2, asked.Add(3*g), ActEscalate)
		if !s3.NeedsAttention || !strings.Contains(s3.Evidence, "survived your interrupt, SIGTERM and SIGKILL") {
			t.Errorf("escalation: attention %v, evidence %q", s3.NeedsAttention, s3.Evidence)
		}
		acked := s3
		acked.NeedsAttention = false
		step(t, acked, asked.Add(10*time.Hour)) // never again, never the stall chain, never a nudge

		// A tick that comes late never skips SIGTERM.
		late := step(t, s0, asked.Add(5*g), ActTerminate)
		step(t, late, asked.Add(5*g+time.Second), ActKill)
	})

	t.Run("managed: SIGTERM ends it in review, not nudged", func(t *testing.T) {
		s1 := step(t, stopped(working()), asked.Add(g), ActTerminate)
		exited := apply(s1, asked.Add(g+time.Second), sessions.Event{Kind: sessions.EvProcessExited, ExitCode: -1, Signal: "terminated"})
		out, _, acts := reconcile(t, exited, asked.Add(g+15*time.Second), p, dead)
		if len(acts) != 0 || out.State != sessions.WaitingOnUser || out.WaitReason != sessions.WaitReview {
			t.Fatalf("%v (%v) %v: want a review and nothing sent", out.State, out.WaitReason, actKinds(acts))
		}
		if !strings.Contains(out.Evidence, "stopped at your request") ||
			!strings.Contains(out.Evidence, "the agent ignored your interrupt, so its process group was sent SIGTERM") {
			t.Errorf("evidence %q", out.Evidence)
		}
		if out.Supervision != (sessions.Supervision{}) {
			t.Errorf("bookkeeping kept: %+v", out.Supervision)
		}
		for _, d := range []time.Duration{time.Hour, 24 * time.Hour} {
			if again, _, acts := reconcile(t, out, asked.Add(d), p, dead); len(acts) != 0 || again.State != sessions.WaitingOnUser {
				t.Errorf("at +%v: %v %v", d, again.State, actKinds(acts))
			}
		}
	})

	t.Run("managed: the turn ends within the grace", func(t *testing.T) {
		s := apply(stopped(working()), asked.Add(time.Second), sessions.Event{Kind: sessions.EvTurnAborted})
		out, _, acts := reconcile(t, s, asked.Add(g), p, alive)
		if len(acts) != 0 || out.State != sessions.WaitingOnUser {
			t.Fatalf("%v %v", out.State, actKinds(acts))
		}
	})

	t.Run("terminal: escalated, never signalled", func(t *testing.T) {
		term := working()
		term.Source = sessions.Observed
		s0 := stopped(term)
		step(t, s0, asked.Add(g-time.Second))
		s1 := step(t, s0, asked.Add(g), ActEscalate)
		if !s1.NeedsAttention || !strings.Contains(s1.Evidence, "never signals a process it did not launch") {
			t.Errorf("attention %v, evidence %q", s1.NeedsAttention, s1.Evidence)
		}
		acked := s1
		acked.NeedsAttention = false
		for _, d := range []time.Duration{2 * g, 3 * g, 10 * time.Hour} {
			step(t, acked, asked.Add(d))
		}
	})

	t.Run("a stall chain already under way keeps going", func(t *testing.T) {
		s := stopped(suspect())
		sent := asked.Add(-time.Minute)
		s.Supervision = sessions.Supervision{Recovery: RecoveryStall, RecoveryAttempts: stallInterrupted, InterruptSentAt: sent, NextAttemptAt: sent.Add(g)}
		s.Evidence = "silent"
		out, _, acts := reconcile(t, s, asked.Add(g), p, alive)
		if !slices.Equal(actKinds(acts), []ActionKind{ActTerminate}) || acts[0].TimelineKind != TimelineStallInterrupt || out.Supervision.Recovery != RecoveryStall {
			t.Fatalf("%v %+v", actKinds(acts), out.Supervision)
		}
	})
}
