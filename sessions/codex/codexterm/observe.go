package codexterm

import (
	"context"
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
	o := &observer{src: s, es: es}
	if r, ok := s.rolloutFor(es); ok {
		// The rollout exists already: the turns it holds are the past.
		o.follow(r, true)
	}
	return s.RelayProcess(ctx, es, o.dirs, o.step)
}

// observer is one Observe loop's memory.
type observer struct {
	src     *Source
	es      sessions.ExternalSession
	rollout Rollout
	file    observe.Follower[Summary, *Summary]
}

// follow starts tailing a rollout (the first found, or a re-created one);
// history: it existed when following began, so the turns its first read
// finds are not news (a later truncation or re-creation brings new turns).
func (o *observer) follow(r Rollout, history bool) {
	o.rollout = r
	o.file.Follow(r.Path, history)
}

// dirs are the directories whose change is news: the rollout's, else the
// day's, where it will appear.
func (o *observer) dirs() []string {
	if o.file.Following() {
		return []string{filepath.Dir(o.file.Path())}
	}
	return []string{o.src.today()}
}

// step reads what changed and returns the events to send; done is true
// when the session ended.
func (o *observer) step() (evs []sessions.Event, done bool) {
	alive, known := o.src.ProcessAlive(o.es.PID, o.es.StartedAt)
	if r, ok := o.src.rolloutFor(o.es); ok && r.Path != o.rollout.Path {
		// Found at the first prompt, or re-created (after the trust
		// prompt, or /new): its turns are new.
		o.follow(r, false)
	}
	o.file.Read()
	sum := o.file.Summary()
	st, _ := Infer(Evidence{PID: o.es.PID, Alive: alive, Known: known, Rollout: o.file.Following(), Summary: *sum})
	st.Name = observe.Title(sum.FirstPrompt)
	gone := known && !alive
	if st, send := o.file.Next(st, gone); send {
		evs = append(evs, o.observed(st))
	}
	if gone {
		return append(evs, observe.Ended(o.es.PID, "the Codex terminal was closed, or it was killed")), true
	}
	return evs, false
}

func (o *observer) observed(st sessions.ObservedState) sessions.Event {
	return sessions.Event{Kind: sessions.EvObserved, AgentSessionID: o.rollout.Meta.ID, PID: o.es.PID, Observed: &st}
}
