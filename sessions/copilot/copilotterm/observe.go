package copilotterm

import (
	"context"
	"os"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Observe follows one session: its process and its events file's tail
// (found again at every look: /new or a resumed session moves the TUI to
// another directory). It sends an EvObserved whenever the inferred state
// changes or the file grows (growth is activity: the stall clock), and
// ends with EvSessionEnded when the process is gone.
func (s *Source) Observe(ctx context.Context, es sessions.ExternalSession) (<-chan sessions.Event, error) {
	o := s.newObserver(es)
	return s.RelayProcess(ctx, es, o.dirs, o.step)
}

func (s *Source) newObserver(es sessions.ExternalSession) *observer {
	o := &observer{src: s, es: es}
	if w, ok := s.workspaceFor(es); ok {
		// The events written so far are the past; a file that appears
		// later (at the first prompt) is all news.
		_, err := os.Stat(w.Events())
		o.follow(w, err == nil)
	}
	return o
}

// observer is one Observe loop's memory.
type observer struct {
	src   *Source
	es    sessions.ExternalSession
	space Workspace
	file  observe.Follower[Summary, *Summary]
}

// follow starts tailing a session's events (the first found, or another
// session the TUI moved to); history: the events existed when following
// began, so the turns the first read finds are not news.
func (o *observer) follow(w Workspace, history bool) {
	o.space = w
	o.file.Follow(w.Events(), history)
}

// dirs are the directories whose change is news: the session's, else
// session-state, where it will appear.
func (o *observer) dirs() []string {
	if o.file.Following() {
		return []string{o.space.Dir}
	}
	return []string{o.src.StateDir()}
}

// step reads what changed and returns the events to send; done is true
// when the session ended.
func (o *observer) step() (evs []sessions.Event, done bool) {
	alive, known := o.src.ProcessAlive(o.es.PID, o.es.StartedAt)
	if w, ok := o.src.workspaceFor(o.es); ok && w.Dir != o.space.Dir {
		// Found, or another session (/new, /resume): its turns are new
		// unless it already has some (a resumed session's past).
		o.follow(w, !o.file.Following())
	}
	exists := false
	if o.file.Following() {
		lines := o.file.Read()
		exists = o.file.Summary().Records > 0 || lines > 0
	}
	sum := o.file.Summary()
	st, _ := Infer(Evidence{PID: o.es.PID, Alive: alive, Known: known, Events: exists, Summary: *sum})
	st.Name = observe.Title(sum.FirstPrompt)
	gone := known && !alive
	if st, send := o.file.Next(st, gone); send {
		evs = append(evs, o.observed(st))
	}
	if gone {
		return append(evs, observe.Ended(o.es.PID, "the Copilot terminal was closed, or it was killed")), true
	}
	return evs, false
}

func (o *observer) observed(st sessions.ObservedState) sessions.Event {
	// The directory's name is the id `copilot --resume` takes.
	id := observe.OrDefault(o.space.ID, o.file.Summary().SessionID)
	return sessions.Event{Kind: sessions.EvObserved, AgentSessionID: id, PID: o.es.PID, Observed: &st}
}
