package supervisor

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
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
