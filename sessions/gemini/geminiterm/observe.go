package geminiterm

import (
	"context"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Observe follows one session: its process and its chat file's tail
// (found again at every look: the CLI switches files on /clear and
// /resume, whose turns are new). Reading costs what was appended since the
// last look (a first look at a large file reads at most its last 2 MB; a
// line over 1 MB is skipped without being buffered: observe.Tailer). A
// file read again from its start is the one already read, rewritten by
// the CLI (an unreadable file replaced with the same history): its turns
// are the past. It sends an EvObserved whenever the inferred state changes
// or the file grows (growth is activity: the stall clock), and ends with
// EvSessionEnded when the process is gone (observe.FileObserver).
func (s *Source) Observe(ctx context.Context, es sessions.ExternalSession) (<-chan sessions.Event, error) {
	o := s.newObserver(es)
	return s.RelayProcess(ctx, es, o.Dirs, o.Step)
}

// observer is one Observe loop's memory.
type observer = observe.FileObserver[Chat, Summary, *Summary]

func (s *Source) newObserver(es sessions.ExternalSession) *observer {
	return observe.NewFileObserver(observe.Files[Chat, Summary, *Summary]{
		Pair: func(pid int) (Chat, bool) { return observe.PairOf(s.scan, pid) },
		Path: func(c Chat) string { return c.Path },
		// tmp/, where the session's project directory appears.
		Before:       s.TmpDir,
		RereadIsPast: true,
		Infer: func(l observe.Look[Chat, *Summary]) sessions.ObservedState {
			ev := Evidence{Liveness: l.Liveness, Chat: l.Following, Summary: *l.Summary, Now: time.Now()}
			if l.Summary.Phase == CallPending && l.Alive {
				ev.Children, ev.ChildrenKnown = s.children(l.PID)
			}
			st, _ := Infer(ev)
			return st
		},
		Prompt: func(sum *Summary) string { return sum.FirstPrompt },
		// The metadata line is read apart: a tail window may start past it.
		SessionID: func(c Chat, sum *Summary) string { return observe.OrDefault(sum.SessionID, c.Meta.SessionID) },
		Gone:      "the Gemini CLI terminal was closed, or it was killed",
	}, s.ProcessAlive, es)
}
