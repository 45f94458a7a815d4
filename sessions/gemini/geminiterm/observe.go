package geminiterm

import (
	"context"
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
	o := &observer{src: s, es: es}
	if c, ok := s.chatFor(es); ok {
		// The chat exists already: the turns it holds are the past.
		o.follow(c, true)
	}
	return s.RelayProcess(ctx, es, o.dirs, o.step)
}

// observer is one Observe loop's memory.
type observer struct {
	src  *Source
	es   sessions.ExternalSession
	chat Chat
	file observe.Follower[Summary, *Summary]
}

// follow starts tailing a chat file (the first found, or another one);
// history: it existed when following began, so the turns its first read
// finds are not news. A file read again from its start is the one already
// read, rewritten by the CLI (an unreadable file replaced with the same
// history): its turns are the past too.
func (o *observer) follow(c Chat, history bool) {
	o.chat = c
	o.file.RereadIsPast = true
	o.file.Follow(c.Path, history)
}

// dirs are the directories whose change is news: the chat's, else tmp/,
// where its project directory appears.
func (o *observer) dirs() []string {
	if o.file.Following() {
		return []string{filepath.Dir(o.file.Path())}
	}
	return []string{o.src.TmpDir()}
}

// step reads what changed and returns the events to send; done is true
// when the session ended.
func (o *observer) step() (evs []sessions.Event, done bool) {
	alive, known := o.src.ProcessAlive(o.es.PID, o.es.StartedAt)
	if c, ok := o.src.chatFor(o.es); ok && c.Path != o.chat.Path {
		// Found at the start, or another file (/clear, /resume): its
		// turns are new.
		o.follow(c, false)
	}
	o.file.Read()
	sum := o.file.Summary()
	if sum.SessionID == "" {
		sum.SessionID = o.chat.Meta.SessionID // a tail window past the first line
	}
	ev := Evidence{PID: o.es.PID, Alive: alive, Known: known, Chat: o.file.Following(), Summary: *sum, Now: time.Now()}
	if sum.Phase == CallPending && alive {
		ev.Children, ev.ChildrenKnown = o.src.children(o.es.PID)
	}
	st, _ := Infer(ev)
	st.Name = observe.Title(sum.FirstPrompt)
	gone := known && !alive
	if st, send := o.file.Next(st, gone); send {
		evs = append(evs, o.observed(st))
	}
	if gone {
		return append(evs, observe.Ended(o.es.PID, "the Gemini CLI terminal was closed, or it was killed")), true
	}
	return evs, false
}

func (o *observer) observed(st sessions.ObservedState) sessions.Event {
	return sessions.Event{Kind: sessions.EvObserved, AgentSessionID: o.file.Summary().SessionID, PID: o.es.PID, Observed: &st}
}
