package supervisor

import (
	"context"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// terminalRefresh is how often a terminal session's location is looked at
// again: a pane moved to another window, a client attached or switched.
// Locating runs tmux, so not at every tick.
const terminalRefresh = 5 * time.Second

// refreshTerminals looks again, outside the lock, where each terminal
// session whose process runs lives, and commits (and so publishes) the
// sessions whose location changed. A look that fails keeps the last known
// location: a session whose process is gone still says where it was.
func (r *Runtime) refreshTerminals(ctx context.Context, now time.Time) {
	if r.locate == nil {
		return
	}
	type look struct {
		e   *entry
		pid int
	}
	var todo []look
	r.mu.Lock()
	for _, e := range r.sess {
		if e.s.Source == sessions.Managed || e.s.PID <= 0 || !e.s.ProcessAlive || now.Sub(e.locatedAt) < terminalRefresh {
			continue
		}
		e.locatedAt = now
		todo = append(todo, look{e, e.s.PID})
	}
	r.mu.Unlock()
	for _, l := range todo {
		loc, err := r.locate(ctx, l.pid)
		if err != nil {
			r.log.Debug("locating a terminal session", "pid", l.pid, "err", err)
		}
		if loc == nil {
			continue
		}
		r.mu.Lock()
		if l.e.s.PID == l.pid && !l.e.s.Terminal.Equal(loc) {
			next := l.e.s.Clone()
			next.Terminal = loc
			r.commitRowsLocked(l.e, next, nil, false, false)
		}
		r.mu.Unlock()
	}
}

// locateFunc says where the terminal of a pid lives (termsys.Locate).
type locateFunc func(ctx context.Context, pid int) (*termloc.Location, error)
