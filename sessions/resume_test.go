package sessions

import (
	"strings"
	"testing"
	"time"
)

func TestWhyNotResumable(t *testing.T) {
	dead := func(edit func(*Session)) Session {
		s := Session{Source: Observed, State: Interrupted, AgentSessionID: "sid"}
		if edit != nil {
			edit(&s)
		}
		return s
	}
	tests := []struct {
		name string
		s    Session
		want string // a word of the reason; "" when it can be resumed
	}{
		{"an interrupted terminal session", dead(nil), ""},
		{"a failed terminal session", dead(func(s *Session) { s.State = Errored }), ""},
		{"a hooked one too", dead(func(s *Session) { s.Source = Hooked }), ""},
		{"managed", dead(func(s *Session) { s.Source = Managed }), "launched by the app"},
		{"still running", dead(func(s *Session) { s.ProcessAlive = true }), "still runs"},
		{"mid-turn", dead(func(s *Session) { s.InTurn = true }), "still runs"},
		{"idle", dead(func(s *Session) { s.State = Idle }), "not interrupted or failed"},
		{"no agent session id", dead(func(s *Session) { s.AgentSessionID = "" }), "session id is unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := WhyNotResumable(tc.s)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("WhyNotResumable = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWhyNoHandover(t *testing.T) {
	managed := func(edit func(*Session)) Session {
		s := Session{Source: Managed, State: WaitingOnUser, AgentSessionID: "sid", ProcessAlive: true}
		if edit != nil {
			edit(&s)
		}
		return s
	}
	tests := []struct {
		name string
		s    Session
		want string // a word of the reason; "" when it can be handed over
	}{
		{"a managed session in review", managed(nil), ""},
		{"mid-turn (the hand-over waits or interrupts)", managed(func(s *Session) { s.InTurn = true }), ""},
		{"its process ended", managed(func(s *Session) { s.ProcessAlive = false }), ""},
		{"a hand-over whose terminal did not open, again", managed(func(s *Session) { s.ProcessAlive, s.HandoverAt = false, time.Now() }), ""},
		{"a terminal session", managed(func(s *Session) { s.Source = Observed }), "runs in a terminal already"},
		{"hooked", managed(func(s *Session) { s.Source = Hooked }), "runs in a terminal already"},
		{"no agent session id yet", managed(func(s *Session) { s.AgentSessionID = "" }), "not known yet"},
		{"shared", managed(func(s *Session) { s.SharedWith = "0b5e0000-1" }), "runs in session 0b5e0000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := WhyNoHandover(tc.s)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("WhyNoHandover = %q, want %q", got, tc.want)
			}
		})
	}
}
