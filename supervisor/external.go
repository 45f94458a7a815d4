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

// externalIDLocked is the id of the session a source's key is: a managed
// session handed over to that terminal keeps its own (aliases).
func (r *Runtime) externalIDLocked(agent, key string) string {
	id := externalID(agent, key)
	if a, ok := r.aliases[id]; ok {
		return a
	}
	return id
}

// startExternal starts every source's discovery for the loop's lifetime.
func (r *Runtime) startExternal(ctx context.Context) {
	for _, src := range r.external {
		ch, err := src.Watch(ctx)
		if err != nil {
			r.log.Warn("terminal sessions are not observed", "agent", src.Name(), "err", err)
			continue
		}
		r.loopWork.Add(1)
		go func() {
			defer r.loopWork.Done()
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
		// Kept with the session (outside the lock: it reads /proc), so the
		// next boot can tell this process from one that reused its pid.
		stamp := startStamp(es.PID)
		r.mu.Lock()
		id := r.externalIDLocked(src.Name(), es.Key)
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
			// A managed session handed over to this terminal becomes it.
			if h := r.adoptHandoverLocked(src, es, now); h != nil {
				e, known, id = h, true, h.s.ID
				r.aliases[externalID(src.Name(), es.Key)] = id
			}
		}
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
		r.applyLocked(e, sessions.Event{Kind: sessions.EvProcessStarted, PID: es.PID, PIDStart: stamp},
			newRow(e.s, now, "discovered", sessions.TimelineDetail{
				Message: fmt.Sprintf("found %s running in a terminal: process %d in %s", src.DisplayName(), es.PID, es.Cwd),
				PID:     es.PID,
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
		r.loopWork.Add(1) // from a watcher Run counts: never after Run's Wait began
		go func() {
			defer r.loopWork.Done()
			r.pumpExternal(id, h, events)
		}()
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
// pid through its source (outside the lock), and whether anything the
// supervisor sends can reach it at all.
func probeExternal(h *extHandle) core.Probe {
	alive, known := h.src.Alive(h.es)
	p := core.Probe{Known: known, Alive: alive && known}
	// A live session its source cannot reach (no inbox) is escalated
	// instead of being sent what can never arrive; a dead one is the
	// liveness rule's (resume in the background, or escalate).
	p.Unreachable = p.Alive && !h.src.CanNudge(h.es)
	return p
}

// errNotOurs explains an action that needs a process the app owns.
var errNotOurs = errors.New("the session runs in a terminal the app did not launch: it is never signalled or typed into")

// dispatchExternal carries out an action on an observed session. The nudge
// goes through the source (Claude: the inbox socket); the hard-stall
// interrupt is the same nudge sent urgently, which aborts the stalled turn
// and runs the nudge at once (the session records that the supervisor asked
// for the abort). Nothing else can reach the session.
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
			return r.nudgeFailed(e, a, "the terminal session is not running")
		}
		if !h.src.CanNudge(h.es) {
			return r.nudgeFailed(e, a, "the terminal session offers no way to deliver a nudge (no inbox socket)")
		}
		urgent := a.Kind == core.ActInterrupt
		r.mu.Lock()
		if urgent {
			// Recorded before the frame goes, as a managed interrupt is:
			// the CLI writes the abort that answers it as the user's
			// ("[Request interrupted by user]"), and only this tells Apply
			// the supervisor stopped the turn, not the user.
			r.applyLocked(e, sessions.Event{Kind: sessions.EvInterruptRequested, By: sessions.BySupervisor})
		}
		before := e.s
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.src.Nudge(ctx, h.es, core.NudgeText, urgent); err != nil {
			return r.nudgeFailed(e, a, "delivering it: "+err.Error())
		}
		how, ok := r.awaitDelivery(e, before)
		if !ok {
			return r.nudgeFailed(e, a, fmt.Sprintf(
				"it was delivered to the session's inbox, but within %s the session neither went busy nor wrote to its transcript", core.HumanSpan(r.nudgeVerify)))
		}
		msg := "the continuation nudge arrived: " + how
		if urgent {
			msg = "the continuation nudge went with the interrupt (priority now) and arrived: " + how
		}
		r.mu.Lock()
		r.commitRowsLocked(e, e.s, []storage.TimelineEvent{newRow(e.s, time.Now(), core.TimelineNudgeSent,
			sessions.TimelineDetail{Message: msg, Urgent: sessions.Flag(urgent)})}, false, false)
		r.mu.Unlock()
		return nil
	}
	return errNotOurs
}

// DefaultNudgeVerify is how long a terminal session may take to show a
// nudge arrived. The CLI reads its inbox at once; measured on 2.1.328, a
// "now" frame reached the next model request in 3.7 s, and the session file
// says busy, or the transcript grows, before that.
const DefaultNudgeVerify = 15 * time.Second

// nudgeVerifyPoll is how often the wait re-reads the session: the source's
// events change it under the lock, so there is nothing to block on.
const nudgeVerifyPoll = 100 * time.Millisecond

// awaitDelivery waits, outside the lock, for the session to show that the
// nudge arrived: its source reported a new turn (the session file went
// busy) or any new evidence since before (its transcript grew or its status
// changed), while its process still runs.
func (r *Runtime) awaitDelivery(e *entry, before sessions.Session) (string, bool) {
	deadline := time.Now().Add(r.nudgeVerify)
	for {
		r.mu.Lock()
		s := e.s
		r.mu.Unlock()
		if how := delivered(before, s); how != "" {
			return how, true
		}
		if !time.Now().Before(deadline) {
			return "", false
		}
		time.Sleep(min(nudgeVerifyPoll, time.Until(deadline)))
	}
}

// delivered says how s shows a nudge sent when the session was before
// arrived ("" when it does not).
func delivered(before, s sessions.Session) string {
	switch {
	case s.TurnGeneration > before.TurnGeneration || s.InTurn && !before.InTurn:
		return fmt.Sprintf("turn %d started", s.TurnGeneration)
	case !s.LastEventAt.Equal(before.LastEventAt) && s.ProcessAlive:
		return "the session showed new activity (its transcript grew or its status changed)"
	}
	return ""
}

// nudgeFailed records a nudge into a terminal session that did not arrive
// (nudge_failed, with the reason) and returns it as the action's failure.
// The attempt was already counted when Reconcile decided it, so failures
// spend the same budget and escalate by the same rules as any nudge.
func (r *Runtime) nudgeFailed(e *entry, a core.Action, reason string) error {
	reason = sessions.SanitizeMessage(reason)
	r.mu.Lock()
	r.commitRowsLocked(e, e.s, []storage.TimelineEvent{newRow(e.s, time.Now(), core.TimelineNudgeFailed,
		sessions.TimelineDetail{Message: "the continuation nudge did not arrive: " + reason, Action: a.Kind.String()})}, false, false)
	r.mu.Unlock()
	return errors.New("the nudge did not arrive: " + reason)
}

// intentKind is the timeline kind an action's intent row is recorded as:
// its own, except that a nudge into a terminal session is only a
// nudge_sent once its arrival is verified (see dispatchExternal), so its
// intent is a nudge_attempt.
func intentKind(a core.Action, src sessions.Source) string {
	if src != sessions.Managed && a.TimelineKind == core.TimelineNudgeSent {
		return TimelineNudgeAttempt
	}
	return a.TimelineKind
}

// TimelineNudgeAttempt is the intent of a nudge into a terminal session.
const TimelineNudgeAttempt = "nudge_attempt"
