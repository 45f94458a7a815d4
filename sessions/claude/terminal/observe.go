package terminal

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Observe follows one session: its session file (status, sessionId after
// /clear or /resume), its process, and its transcript's tail. It sends an
// EvObserved whenever the inferred state changes or the transcript grows
// (growth is activity: the stall clock), and ends with EvSessionEnded when
// the session goes away.
func (s *Source) Observe(ctx context.Context, es sessions.ExternalSession) (<-chan sessions.Event, error) {
	f, ok := s.sessionFile(es)
	if !ok {
		return nil, fmt.Errorf("session %s: its session file is gone", es.Key)
	}
	out := make(chan sessions.Event, 8)
	go s.observe(ctx, es, f, out)
	return out, nil
}

// observer is one Observe loop's memory.
type observer struct {
	src     *Source
	es      sessions.ExternalSession
	file    SessionFile
	tail    *Tailer
	sum     Summary
	name    string
	last    sessions.ObservedState
	emitted bool
}

func (s *Source) observe(ctx context.Context, es sessions.ExternalSession, f SessionFile, out chan<- sessions.Event) {
	defer close(out)
	o := &observer{src: s, es: es, file: f}
	o.follow(f)
	dirs := []string{s.SessionsDir(), filepath.Dir(o.tail.Path())}
	wake, stop := s.wake(ctx, dirs)
	defer stop()
	send := func(ev sessions.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		evs, done := o.step()
		for _, ev := range evs {
			if !send(ev) {
				return
			}
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
	}
}

// follow starts tailing the transcript of the file's current sessionId.
func (o *observer) follow(f SessionFile) {
	path := o.src.TranscriptPath(f.Cwd, f.SessionID)
	o.tail = NewTailer(path)
	o.sum = Summary{}
	o.name = f.Name
	if o.name == "" {
		o.name = Title(FirstPrompt(path))
	}
}

// step reads what changed and returns the events to send; done is true
// when the session ended.
func (o *observer) step() (evs []sessions.Event, done bool) {
	f, ok := o.src.sessionFile(o.es)
	if !ok {
		// The CLI removes its file on a clean exit (/exit, Ctrl-D, a closed
		// terminal): the user ended it, so a turn cut short is theirs to
		// review, never a nudge.
		if o.last.InTurn {
			evs = append(evs, o.observed(sessions.ObservedState{State: sessions.WaitingOnUser, Wait: sessions.WaitReview,
				Evidence: "the session was closed in the terminal during a turn; waiting for review"}))
		}
		return append(evs, sessions.Event{Kind: sessions.EvSessionEnded, Detail: "the session was closed in the terminal"}), true
	}
	if f.SessionID != o.file.SessionID {
		// /clear or /resume: the same process now writes another transcript.
		o.follow(f)
	}
	statusChanged := f.Status != o.file.Status || f.WaitingFor != o.file.WaitingFor
	if f.Name != "" && f.Name != o.name {
		o.name = f.Name
	} else if o.name == "" && o.sum.FirstPrompt != "" {
		o.name = Title(o.sum.FirstPrompt)
	}
	o.file = f
	lines, reset, _ := o.tail.Poll()
	if reset {
		o.sum.Reset()
	}
	for _, l := range lines {
		o.sum.Feed(l)
	}
	if o.name == "" && o.sum.FirstPrompt != "" {
		o.name = Title(o.sum.FirstPrompt)
	}
	alive, known := o.src.probe(f)
	st, _ := Infer(Evidence{PID: f.PID, Alive: alive, Known: known, File: f, Transcript: o.sum})
	st.Name = o.name
	gone := known && !alive
	if !o.emitted || st != o.last || len(lines) > 0 || statusChanged || gone {
		evs = append(evs, o.observed(st))
	}
	if gone {
		return append(evs, sessions.Event{Kind: sessions.EvSessionEnded,
			Detail: fmt.Sprintf("process %d is gone (its session file was left behind: killed or crashed)", f.PID)}), true
	}
	return evs, false
}

func (o *observer) observed(st sessions.ObservedState) sessions.Event {
	o.last, o.emitted = st, true
	return sessions.Event{Kind: sessions.EvObserved, AgentSessionID: o.file.SessionID, PID: o.file.PID, Observed: &st}
}
