package sessions

import (
	"strings"
	"testing"
	"time"
)

// Why a session cannot be resumed in a terminal (WhyNotResumable) or
// handed over to one (WhyNoHandover): a reason with a word of it in want,
// or "" when it can. Each case is the rule's base session, edited.
func TestWhyNotResumableOrHandover(t *testing.T) {
	type whyCase struct {
		name string
		edit func(*Session)
		want string
	}
	for _, rule := range []struct {
		name  string
		why   func(Session) string
		base  Session
		cases []whyCase
	}{
		{name: "WhyNotResumable", why: WhyNotResumable,
			base: Session{Source: Observed, State: Interrupted, AgentSessionID: "sid"},
			cases: []whyCase{
				{"an interrupted terminal session", nil, ""},
				{"a failed terminal session", func(s *Session) { s.State = Errored }, ""},
				{"a hooked one too", func(s *Session) { s.Source = Hooked }, ""},
				{"managed", func(s *Session) { s.Source = Managed }, "launched by the app"},
				{"still running", func(s *Session) { s.ProcessAlive = true }, "still runs"},
				{"mid-turn", func(s *Session) { s.InTurn = true }, "still runs"},
				{"idle", func(s *Session) { s.State = Idle }, "not interrupted or failed"},
				{"no agent session id", func(s *Session) { s.AgentSessionID = "" }, "session id is unknown"},
			}},
		{name: "WhyNoHandover", why: WhyNoHandover,
			base: Session{Source: Managed, State: WaitingOnUser, AgentSessionID: "sid", ProcessAlive: true},
			cases: []whyCase{
				{"a managed session in review", nil, ""},
				{"mid-turn (the hand-over waits or interrupts)", func(s *Session) { s.InTurn = true }, ""},
				{"its process ended", func(s *Session) { s.ProcessAlive = false }, ""},
				{"a hand-over whose terminal did not open, again", func(s *Session) { s.ProcessAlive, s.HandoverAt = false, time.Now() }, ""},
				{"a terminal session", func(s *Session) { s.Source = Observed }, "runs in a terminal already"},
				{"hooked", func(s *Session) { s.Source = Hooked }, "runs in a terminal already"},
				{"no agent session id yet", func(s *Session) { s.AgentSessionID = "" }, "not known yet"},
				{"shared", func(s *Session) { s.SharedWith = "0b5e0000-1" }, "runs in session 0b5e0000"},
			}},
	} {
		for _, tc := range rule.cases {
			t.Run(rule.name+"/"+tc.name, func(t *testing.T) {
				s := rule.base
				if tc.edit != nil {
					tc.edit(&s)
				}
				got := rule.why(s)
				if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
					t.Errorf("%s = %q, want %q", rule.name, got, tc.want)
				}
			})
		}
	}
}
