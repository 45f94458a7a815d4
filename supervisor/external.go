package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/storage"
)

// This file runs the sessions the app did not launch (sessions.ExternalSource:
// an agent in a terminal). Their sources discover them and infer their state
// from outside; the runtime gives them the same state machine, the same
// Reconcile rules and the same views as managed sessions. What differs is
// the way in: there is no stdin and no process of ours, so recovery goes
// through the source's Nudge (Claude's inbox socket) or escalates; a
// session the app did not launch is never signalled and never typed into.

// ExternalSource is a source of sessions the app did not launch.
type ExternalSource = sessions.ExternalSource

// extHandle is an observed session's link to its source.
type extHandle struct {
	src sessions.ExternalSource
	es  sessions.ExternalSession
	// live: its Observe stream runs (false once the session went away).
	live   bool
	cancel context.CancelFunc
}

// externalID is an observed session's id: derived from its source and key,
// so a restart of the app finds the same row again instead of adding one.
func externalID(agent, key string) string {
	h := sha256.Sum256([]byte("external\x00" + agent + "\x00" + key))
	b := h[:16]
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	x := hex.EncodeToString(b)
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// startExternal starts every source's discovery for the loop's lifetime.
func (r *Runtime) startExternal(ctx context.Context) {
	for _, src := range r.external {
		ch, err := src.Watch(ctx)
		if err != nil {
			r.log.Warn("terminal sessions are not observed", "agent", src.Name(), "err", err)
			continue
		}
		go func() {
			for list := range ch {
				r.syncExternal(ctx, src, list)
			}
		}()
	}
}

// syncExternal starts observing every listed session not observed yet.
// A session that leaves the list ends through its own Observe stream.
func (r *Runtime) syncExternal(ctx context.Context, src sessions.ExternalSource, list []sessions.ExternalSession) {
	for _, es := range list {
		id := externalID(src.Name(), es.Key)
		r.mu.Lock()
		if r.ownsPIDLocked(es.PID) {
			r.mu.Unlock()
			continue // one of our own processes, registered by the CLI too
		}
		e, known := r.sess[id]
		if known && e.ext != nil && e.ext.live {
			r.mu.Unlock()
			continue
		}
		now := time.Now()
		if !known {
			created := es.StartedAt
			if created.IsZero() {
				created = now
			}
			e = r.newEntry(sessions.Session{
				ID: id, Name: es.Name, Agent: src.Name(), AgentSessionID: es.AgentSessionID, Source: sessions.Observed,
				Cwd: es.Cwd, CreatedAt: created, UpdatedAt: now, StateChangedAt: now, Evidence: "found in a terminal",
			})
			r.sess[id] = e
		}
		octx, cancel := context.WithCancel(ctx)
		h := &extHandle{src: src, es: es, live: true, cancel: cancel}
		e.ext = h
		r.applyLocked(e, sessions.Event{Kind: sessions.EvProcessStarted, PID: es.PID},
			newRow(e.s, now, "discovered", map[string]any{
				"message": fmt.Sprintf("found %s running in a terminal: process %d in %s", src.DisplayName(), es.PID, es.Cwd),
				"pid":     es.PID,
			}))
		r.mu.Unlock()
		events, err := src.Observe(octx, es)
		if err != nil {
			cancel()
			r.mu.Lock()
			h.live = false
			r.mu.Unlock()
			r.log.Warn("observing a terminal session", "session", id, "err", err)
			continue
		}
		go r.pumpExternal(id, h, events)
	}
}

// ownsPIDLocked reports whether pid is the process of a managed session.
func (r *Runtime) ownsPIDLocked(pid int) bool {
	for _, e := range r.sess {
		if e.proc != nil && e.proc.PID() == pid {
			return true
		}
	}
	return false
}

// pumpExternal applies an observed session's events until its stream ends.
func (r *Runtime) pumpExternal(id string, h *extHandle, events <-chan sessions.Event) {
	for ev := range events {
		r.mu.Lock()
		if e, ok := r.sess[id]; ok && e.ext == h {
			r.applyLocked(e, ev)
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	h.live = false
	r.mu.Unlock()
	h.cancel()
}

// probeExternal is an observed session's liveness for the tick, from its
// pid through its source (outside the lock).
func probeExternal(h *extHandle) core.Probe {
	alive, known := h.src.Alive(h.es)
	return core.Probe{Known: known, Alive: alive && known}
}

// errNotOurs explains an action that needs a process the app owns.
var errNotOurs = errors.New("the session runs in a terminal the app did not launch: it is never signalled or typed into")

// dispatchExternal carries out an action on an observed session. The nudge
// goes through the source (Claude: the inbox socket); the hard-stall
// interrupt is the same nudge sent urgently, which aborts the stalled turn
// and runs the nudge at once. Nothing else can reach the session.
func (r *Runtime) dispatchExternal(e *entry, h *extHandle, a core.Action) error {
	switch a.Kind {
	case core.ActEscalate:
		return nil // the state change (needs-attention) was committed with the decision
	case core.ActResume:
		_, _, err := r.resumeInBackground(e, sessions.BySupervisor)
		return err
	case core.ActNudge, core.ActContinue, core.ActInterrupt:
		if h == nil {
			// Loaded from the database, not found running since the app started.
			return fmt.Errorf("the terminal session is not running")
		}
		if !h.src.CanNudge(h.es) {
			return fmt.Errorf("the terminal session offers no way to deliver a nudge (no inbox socket)")
		}
		urgent := a.Kind == core.ActInterrupt
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.src.Nudge(ctx, h.es, core.NudgeText, urgent); err != nil {
			return fmt.Errorf("nudging through the inbox socket: %w", err)
		}
		if urgent {
			r.mu.Lock()
			row := newRow(e.s, time.Now(), core.TimelineNudgeSent, map[string]any{
				"message": "the continuation nudge went with the interrupt (priority now) through the inbox socket"})
			r.commitRowsLocked(e, e.s, []storage.TimelineEvent{row}, false, false)
			r.mu.Unlock()
		}
		return nil
	}
	return errNotOurs
}
