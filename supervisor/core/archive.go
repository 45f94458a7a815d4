package core

import (
	"fmt"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// TimelineArchived records that an ended session was archived.
const TimelineArchived = "archived"

// Archive is the housekeeping rule: a session that ended — its process gone
// (the probe, when it knows, agrees), no turn in flight, nothing pending
// (no open permission, no recovery under way) and acknowledged (Idle,
// nothing needing attention) — and has been quiet for after is archived: it
// leaves the tray and the default list, and stays readable. after 0 never
// archives. Pure: it returns the archived session and the row saying why;
// s is not changed.
func Archive(s sessions.Session, now time.Time, after time.Duration, probe Probe) (sessions.Session, []Observation, bool) {
	switch {
	case after <= 0, !s.ArchivedAt.IsZero():
		return s, nil, false
	case s.ProcessAlive, probe.Known && probe.Alive:
		return s, nil, false
	case s.InTurn, s.State != sessions.Idle, s.NeedsAttention:
		return s, nil, false
	case len(s.Permissions) > 0, s.Permission != nil, s.Supervision.Recovery != "":
		return s, nil, false
	}
	quiet := now.Sub(s.UpdatedAt)
	if quiet < after {
		return s, nil, false
	}
	n := s.Clone()
	n.ArchivedAt, n.UpdatedAt = now, now
	return n, []Observation{{Kind: TimelineArchived, From: s.State, To: s.State,
		Detail: fmt.Sprintf("archived: ended and acknowledged, quiet for %s (sessions.archive_after_days)", days(quiet))}}, true
}

// days is a duration in whole days, for a sentence.
func days(d time.Duration) string {
	n := int(d / (24 * time.Hour))
	if n == 1 {
		return "1 day"
	}
	return fmt.Sprintf("%d days", n)
}
