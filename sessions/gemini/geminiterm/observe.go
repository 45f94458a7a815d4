package geminiterm

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Observe follows one session: its process and its chat file's tail
// (found again at every look: the CLI switches files on /clear and
// /resume). Reading costs what was appended since the last look (a first
// look at a large file reads at most its last 2 MB; a line over 1 MB is
// skipped without being buffered: observe.Tailer). It sends an
// EvObserved whenever the inferred state changes or the file grows (growth
// is activity: the stall clock), and ends with EvSessionEnded when the
// process is gone.
func (s *Source) Observe(ctx context.Context, es sessions.ExternalSession) (<-chan sessions.Event, error) {
	if es.PID <= 0 {
		return nil, fmt.Errorf("session %s: no process to follow", es.Key)
	}
	out := make(chan sessions.Event, 8)
	o := &observer{src: s, es: es}
	if c, ok := s.chatFor(es); ok {
		// The chat exists already: the turns it holds are the past.
		o.follow(c, true)
	}
	go observe.Relay(ctx, s.wake(ctx, o.dirs), o.step, out)
	return out, nil
}

// observer is one Observe loop's memory.
type observer struct {
	src     *Source
	es      sessions.ExternalSession
	chat    Chat
	tail    *observe.Tailer
	sum     Summary
	last    sessions.ObservedState
	emitted bool
	// turns is the summary's prompt count at the last observation.
	turns int
	// history: the chat existed when following began, so the turns its
	// first read finds are not news; read: it has been read once.
	history, read bool
}

// follow starts tailing a chat file (the first found, or another one).
func (o *observer) follow(c Chat, history bool) {
	o.chat, o.tail, o.history, o.read = c, observe.NewTailer(c.Path), history, false
	o.sum.Reset()
	o.turns = 0
}

// dirs are the directories whose change is news: the chat's, else tmp/,
// where its project directory appears.
func (o *observer) dirs() []string {
	if o.tail != nil {
		return []string{filepath.Dir(o.tail.Path())}
	}
	return []string{o.src.TmpDir()}
}

// step reads what changed and returns the events to send; done is true
// when the session ended.
func (o *observer) step() (evs []sessions.Event, done bool) {
	alive, known := o.src.probe(o.es.PID, o.es.StartedAt)
	if c, ok := o.src.chatFor(o.es); ok && c.Path != o.chat.Path {
		// Found at the start, or another file (/clear, /resume): its
		// turns are new.
		o.follow(c, false)
	}
	var lines [][]byte
	if o.tail != nil {
		var reset bool
		lines, reset, _ = o.tail.Poll()
		if reset {
			o.sum.Reset()
			o.turns = 0
		}
		// Read again from its start: the file was there before we followed
		// it, or it is the one already read, rewritten by the CLI (an
		// unreadable file replaced with the same history): its turns are
		// the past. A file found after we began is read as news.
		past := reset && (o.history || o.read)
		o.read = o.read || reset
		for _, l := range lines {
			o.sum.Feed(l)
		}
		if past {
			o.turns = o.sum.Turns // the past, except a turn still in flight (below)
		}
	}
	if o.sum.SessionID == "" {
		o.sum.SessionID = o.chat.Meta.SessionID // a tail window past the first line
	}
	ev := Evidence{PID: o.es.PID, Alive: alive, Known: known, Chat: o.tail != nil, Summary: o.sum, Now: time.Now()}
	if o.sum.Phase == CallPending && alive {
		ev.Children, ev.ChildrenKnown = o.src.children(o.es.PID)
	}
	st, _ := Infer(ev)
	if st.Name = observe.Title(o.sum.FirstPrompt); st.Name == "" {
		st.Name = o.last.Name
	}
	delta := o.sum.Turns - o.turns
	o.turns = o.sum.Turns
	if st.InTurn && !o.last.InTurn && delta == 0 {
		// The first read began inside a turn: it is the one in flight.
		delta = 1
	}
	st.NewTurns = delta
	gone := known && !alive
	// A change of state is news; the turn count of the last one is not.
	same := st
	same.NewTurns = o.last.NewTurns
	if !o.emitted || same != o.last || len(lines) > 0 || gone {
		evs = append(evs, o.observed(st))
	}
	if gone {
		return append(evs, sessions.Event{Kind: sessions.EvSessionEnded,
			Detail: fmt.Sprintf("process %d is gone (the Gemini CLI terminal was closed, or it was killed)", o.es.PID)}), true
	}
	return evs, false
}

func (o *observer) observed(st sessions.ObservedState) sessions.Event {
	o.last, o.emitted = st, true
	return sessions.Event{Kind: sessions.EvObserved, AgentSessionID: o.sum.SessionID, PID: o.es.PID, Observed: &st}
}
