package core

import (
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Issue 20 item 8: a managed turn whose tools finished and whose result line
// never came is completed by the agent's own record (the transcript: the
// probe's TurnEndedAt) once it has been quiet LostResultAfter, instead of
// going Suspect at 10 minutes and being interrupted and nudged at 150.
func TestReconcileLostResult(t *testing.T) {
	quiet := func() sessions.Session {
		s := working()
		s.AgentSessionID = "sess-1"
		s.LastEventAt = at(2 * time.Second) // the tool's result, then nothing
		s.Nudge = sessions.NudgeBudget{Attempts: 1, LastNudge: t0}
		return s
	}
	ended := at(3 * time.Second) // the transcript's final assistant message
	witnessed := Probe{Known: true, Alive: true, TurnEndedAt: ended}
	completed := func(t *testing.T, out sessions.Session, obs []Observation, _ []Action) {
		t.Helper()
		if out.InTurn || out.WaitReason != sessions.WaitReview || out.Nudge != (sessions.NudgeBudget{}) {
			t.Errorf("in turn %v, wait %v, nudge budget %+v: want a completed turn", out.InTurn, out.WaitReason, out.Nudge)
		}
		if !strings.Contains(out.Evidence, "turn 3 completed at 09:00:03 by the agent's transcript; its result never arrived on the stream") {
			t.Errorf("evidence %q", out.Evidence)
		}
		if len(obs) != 1 || !strings.Contains(obs[0].Detail, "Working → Waiting on user") {
			t.Errorf("observations %+v", obs)
		}
	}
	after := time.Minute + 2*time.Second // LostResultAfter since the last event
	runCases(t, []rcase{
		{name: "quiet for a minute, the transcript says it ended", s: quiet(), now: at(after), probe: witnessed,
			state: sessions.WaitingOnUser, obs: []string{TimelineStateChanged}, check: completed},
		{name: "already Suspect", s: func() sessions.Session {
			s := quiet()
			s.State, s.Evidence = sessions.Suspect, "10 min silent"
			return s
		}(), now: at(11 * time.Minute), probe: witnessed, state: sessions.WaitingOnUser, obs: []string{TimelineStateChanged},
			check: func(t *testing.T, out sessions.Session, obs []Observation, _ []Action) {
				if !strings.Contains(out.Evidence, "silent for 10 min") {
					t.Errorf("evidence %q", out.Evidence)
				}
			}},
		{name: "not quiet long enough", s: quiet(), now: at(after - time.Second), probe: witnessed, state: sessions.Working, same: true},
		{name: "the transcript's end is an earlier turn's", s: quiet(), now: at(after),
			probe: Probe{Known: true, Alive: true, TurnEndedAt: t0.Add(-time.Second)}, state: sessions.Working, same: true},
		{name: "no witness", s: quiet(), now: at(after), probe: alive, state: sessions.Working, same: true},
		{name: "a tool still open", s: withTool(quiet(), "t1", "Bash", t0), now: at(after), probe: witnessed, state: sessions.Working, same: true},
		{name: "a background task still open", s: withTask(quiet(), "k1", "indexer", t0), now: at(after), probe: witnessed, state: sessions.Working, same: true},
		{name: "a terminal session (its source infers its own end)", s: func() sessions.Session {
			s := quiet()
			s.Source = sessions.Observed
			return s
		}(), now: at(after), probe: witnessed, state: sessions.Working, same: true},
		{name: "waiting on a permission", s: func() sessions.Session {
			s := waiting(sessions.WaitPermission)
			s.AgentSessionID = "sess-1"
			return s
		}(), now: at(after), probe: witnessed, state: sessions.WaitingOnUser, same: true},
	})

	// Before the fix the same turn went Suspect at 10 min and was
	// interrupted at 150: with the witness it never gets there.
	out, _, acts := reconcile(t, quiet(), at(10*time.Minute+2*time.Second), specPolicy(), witnessed)
	if out.State != sessions.WaitingOnUser || len(acts) != 0 {
		t.Fatalf("%v %v", out.State, actKinds(acts))
	}
}

func TestLostResultSuspected(t *testing.T) {
	p := specPolicy()
	s := working()
	s.AgentSessionID = "sess-1"
	for _, tc := range []struct {
		name string
		edit func(*sessions.Session)
		now  time.Time
		want bool
	}{
		{"quiet a minute", nil, at(time.Minute), true},
		{"quiet less", nil, at(time.Minute - time.Second), false},
		{"no agent session id", func(s *sessions.Session) { s.AgentSessionID = "" }, at(time.Hour), false},
		{"a tool open", func(s *sessions.Session) { *s = withTool(*s, "t", "Bash", t0) }, at(time.Hour), false},
		{"not in a turn", func(s *sessions.Session) { s.InTurn, s.State = false, sessions.Idle }, at(time.Hour), false},
		{"compacting", func(s *sessions.Session) { s.State = sessions.Compacting }, at(time.Hour), false},
		{"terminal", func(s *sessions.Session) { s.Source = sessions.Hooked }, at(time.Hour), false},
	} {
		c := s.Clone()
		if tc.edit != nil {
			tc.edit(&c)
		}
		if got := LostResultSuspected(c, tc.now, p); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
