package codexterm

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Observe follows one session: its process and its rollout's tail (found
// again at every look: Codex writes it at the first prompt and may
// re-create it). It sends an EvObserved whenever the inferred state changes
// or the rollout grows (growth is activity: the stall clock), and ends with
// EvSessionEnded when the process is gone.
func (s *Source) Observe(ctx context.Context, es sessions.ExternalSession) (<-chan sessions.Event, error) {
	if es.PID <= 0 {
		return nil, fmt.Errorf("session %s: no process to follow", es.Key)
	}
	out := make(chan sessions.Event, 8)
	o := &observer{src: s, es: es}
	if r, ok := s.rolloutFor(es); ok {
		// The rollout exists already: the turns it holds are the past.
		o.follow(r, true)
	}
	go observe.Relay(ctx, s.wake(ctx, o.dirs), o.step, out)
	return out, nil
}

// observer is one Observe loop's memory.
type observer struct {
	src     *Source
	es      sessions.ExternalSession
	rollout Rollout
	tail    *observe.Tailer
	sum     Summary
	emit    observe.Emitter
	// history: the rollout existed when following began, so the turns its
	// first read finds are not news.
	history bool
}

// follow starts tailing a rollout (the first found, or a re-created one).
func (o *observer) follow(r Rollout, history bool) {
	o.rollout, o.tail, o.history = r, observe.NewTailer(r.Path), history
	o.sum.Reset()
	o.emit.SetTurns(0)
}

// dirs are the directories whose change is news: the rollout's, else the
// day's, where it will appear.
func (o *observer) dirs() []string {
	if o.tail != nil {
		return []string{filepath.Dir(o.tail.Path())}
	}
	return []string{o.src.today()}
}

// step reads what changed and returns the events to send; done is true
// when the session ended.
func (o *observer) step() (evs []sessions.Event, done bool) {
	alive, known := o.src.probe(o.es.PID, o.es.StartedAt)
	if r, ok := o.src.rolloutFor(o.es); ok && r.Path != o.rollout.Path {
		// Found at the first prompt, or re-created (after the trust
		// prompt, or /new): its turns are new.
		o.follow(r, false)
	}
	var lines [][]byte
	if o.tail != nil {
		var reset bool
		lines, reset, _ = o.tail.Poll()
		if reset {
			o.sum.Reset()
			o.emit.SetTurns(0)
		}
		first := reset && o.history
		if reset {
			o.history = false // a later truncation or re-creation brings new turns
		}
		for _, l := range lines {
			o.sum.Feed(l)
		}
		if first {
			o.emit.SetTurns(o.sum.Turns) // the past, except a turn still in flight
		}
	}
	st, _ := Infer(Evidence{PID: o.es.PID, Alive: alive, Known: known, Rollout: o.tail != nil, Summary: o.sum})
	st.Name = observe.Title(o.sum.FirstPrompt)
	gone := known && !alive
	if st, send := o.emit.Next(st, o.sum.Turns, len(lines) > 0, gone); send {
		evs = append(evs, o.observed(st))
	}
	if gone {
		return append(evs, sessions.Event{Kind: sessions.EvSessionEnded,
			Detail: fmt.Sprintf("process %d is gone (the Codex terminal was closed, or it was killed)", o.es.PID)}), true
	}
	return evs, false
}

func (o *observer) observed(st sessions.ObservedState) sessions.Event {
	return sessions.Event{Kind: sessions.EvObserved, AgentSessionID: o.rollout.Meta.ID, PID: o.es.PID, Observed: &st}
}
