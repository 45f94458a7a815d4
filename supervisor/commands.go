package supervisor

import (
	"context"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// NudgeNow sends the constant continuation nudge at the user's request (the
// tray's "Send nudge now"): on the live process, or by resuming the agent's
// session. It refuses while a turn is in flight, where a nudge would only
// be added to the running turn.
func (r *Runtime) NudgeNow(ctx context.Context, id string) (sessions.Session, error) {
	return r.jobFor(ctx, id, func(e *entry) (<-chan writeResult, error) {
		r.mu.Lock()
		inTurn, name := e.s.InTurn, e.s.DisplayName()
		r.mu.Unlock()
		if inTurn {
			return nil, conflictf("session %s has a turn in flight; there is nothing to nudge", name)
		}
		return r.deliverPrompt(e, core.NudgeText, sessions.ByUser, core.TimelineNudgeSent)
	})
}

// SetRecovery is the user's "stop recovering" switch for one session: off,
// the supervisor no longer nudges, continues, resumes or compacts it
// (Session.RecoveryOff; Reconcile says why where it would have); on, it
// does again. Switching to what is already set changes nothing.
func (r *Runtime) SetRecovery(ctx context.Context, id string, on bool) (sessions.Session, error) {
	return r.jobFor(ctx, id, func(e *entry) (<-chan writeResult, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if e.s.RecoveryOff == !on {
			e.changed = e.s.Clone()
			return nil, nil
		}
		now := time.Now()
		next := e.s.Clone()
		next.RecoveryOff = !on
		next.UpdatedAt = now
		msg := "automatic recovery switched off for this session by the user"
		if on {
			msg = "automatic recovery switched on again for this session by the user"
		}
		done := r.commitRowsLocked(e, next, []storage.TimelineEvent{
			newRow(next, now, TimelineRecoverySwitched, sessions.TimelineDetail{Message: msg}),
		}, false, true)
		e.changed = next.Clone()
		return done, nil
	})
}

// TimelineRecoverySwitched records the user's per-session recovery switch.
const TimelineRecoverySwitched = "recovery_switched"
