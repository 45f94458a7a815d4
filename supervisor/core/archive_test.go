package core

import (
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// TestArchive: an ended session (process gone, nothing pending,
// acknowledged) is archived once it has been quiet for the setting's days;
// anything that still needs the user or may still run is never archived
// (issue 20, item 11).
func TestArchive(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	ended := func(edit func(*sessions.Session)) sessions.Session {
		s := sessions.Session{ID: "s", State: sessions.Idle, Evidence: "acknowledged", UpdatedAt: now.Add(-week - time.Minute)}
		if edit != nil {
			edit(&s)
		}
		return s
	}
	alive := func(s *sessions.Session) { s.ProcessAlive = true }
	gone := Probe{Known: true, Alive: false}
	for _, tc := range []struct {
		name  string
		s     sessions.Session
		after time.Duration
		probe Probe
		want  bool
	}{
		{"ended a week ago", ended(nil), week, Probe{}, true},
		{"ended, probed gone", ended(nil), week, gone, true},
		{"setting 0 is never", ended(nil), 0, Probe{}, false},
		{"not quiet long enough", ended(func(s *sessions.Session) { s.UpdatedAt = now.Add(-week + time.Hour) }), week, Probe{}, false},
		{"already archived", ended(func(s *sessions.Session) { s.ArchivedAt = now.Add(-time.Hour) }), week, Probe{}, false},
		{"process alive", ended(alive), week, Probe{}, false},
		{"probe says alive", ended(nil), week, Probe{Known: true, Alive: true}, false},
		{"turn in flight", ended(func(s *sessions.Session) { s.InTurn = true; s.State = sessions.Working }), week, Probe{}, false},
		{"review not acknowledged", ended(func(s *sessions.Session) {
			s.State, s.WaitReason = sessions.WaitingOnUser, sessions.WaitReview
		}), week, Probe{}, false},
		{"interrupted, not acknowledged", ended(func(s *sessions.Session) { s.State = sessions.Interrupted }), week, Probe{}, false},
		{"errored, not acknowledged", ended(func(s *sessions.Session) { s.State = sessions.Errored }), week, Probe{}, false},
		{"needs attention", ended(func(s *sessions.Session) { s.NeedsAttention = true }), week, Probe{}, false},
		{"recovery pending", ended(func(s *sessions.Session) { s.Supervision.Recovery = RecoveryRateLimit }), week, Probe{}, false},
		{"permission open", ended(func(s *sessions.Session) {
			s.Permissions = []sessions.Permission{{RequestID: "r", Tool: "Bash"}}
		}), week, Probe{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, obs, ok := Archive(tc.s, now, tc.after, tc.probe)
			if ok != tc.want {
				t.Fatalf("Archive = %t, want %t", ok, tc.want)
			}
			if !ok {
				if !next.ArchivedAt.Equal(tc.s.ArchivedAt) || obs != nil {
					t.Errorf("not archived, yet changed: archived_at %v, %v", next.ArchivedAt, obs)
				}
				return
			}
			if !next.ArchivedAt.Equal(now) || !next.UpdatedAt.Equal(now) || next.State != tc.s.State {
				t.Errorf("archived: archived_at %v updated %v state %v", next.ArchivedAt, next.UpdatedAt, next.State)
			}
			if len(obs) != 1 || obs[0].Kind != TimelineArchived || obs[0].Detail == "" {
				t.Errorf("observations %+v, want one %s row saying why", obs, TimelineArchived)
			}
			if !tc.s.ArchivedAt.IsZero() {
				t.Error("Archive changed its input")
			}
		})
	}
}
