package sessions

import (
	"strings"
	"testing"
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
