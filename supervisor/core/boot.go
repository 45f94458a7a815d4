package core

import (
	"fmt"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// TimelineBootReconciled records what the boot rule changed.
const TimelineBootReconciled = "boot_reconciled"

// TimelineOrphanReaped records an agent process an earlier run left
// running that the boot stopped, when the boot changed nothing else.
const TimelineOrphanReaped = "orphan_reaped"

// BootReconcile is the pure boot rule: a turn that was in flight when the app
// stopped is Interrupted (a review when the user had asked to stop it), a
// terminal session's turn is left to its terminal, and no process is
// assumed alive. changed reports whether s needs saving; obs says why when
// a turn was ended.
func BootReconcile(s sessions.Session, now time.Time) (next sessions.Session, obs []Observation, changed bool) {
	if !s.InTurn && !s.ProcessAlive {
		return s, nil, false
	}
	n := s.Clone()
	n.ProcessAlive = false
	n.UpdatedAt = now
	if !s.InTurn {
		return n, nil, true
	}
	endTurn(&n)
	if s.Source != sessions.Managed {
		// The app stopping did not stop a session running in a terminal:
		// it is observed again when it is found running.
		n.State, n.StateChangedAt = sessions.Idle, now
		n.Evidence = fmt.Sprintf("turn %d was in flight when the app last stopped; it runs in its terminal, not in the app", s.TurnGeneration)
		return n, []Observation{{Kind: TimelineBootReconciled, Detail: n.Evidence, From: s.State, To: n.State}}, true
	}
	n.State = sessions.Interrupted
	n.Evidence = fmt.Sprintf("turn %d was in flight when the app last stopped", s.TurnGeneration)
	if s.StoppedByUser() {
		// The user had asked to stop it: a review, never a nudge.
		n.State, n.WaitReason = sessions.WaitingOnUser, sessions.WaitReview
		n.Evidence = fmt.Sprintf("turn %d stopped at your request (the app stopped before the agent confirmed); waiting for review", s.TurnGeneration)
	}
	n.StateChangedAt = now
	obs = []Observation{{Kind: TimelineBootReconciled, Detail: n.Evidence, From: s.State, To: n.State}}
	if n.State == sessions.Interrupted && s.State != sessions.Interrupted {
		// Every change into Interrupted is marked with its cause.
		// The state change itself is the boot_reconciled row's.
		obs = append(obs, Observation{Kind: TimelineMarkedInterrupted, Detail: n.Evidence, From: n.State, To: n.State, Cause: sessions.CauseBoot})
	}
	return n, obs, true
}
