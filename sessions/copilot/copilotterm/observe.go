package copilotterm

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Observe follows one session: its process and its events file's tail
// (found again at every look: /new or a resumed session moves the TUI to
// another directory). Events written before following began are the past;
// a file that appears later (at the first prompt) is all news, and so is
// another session the TUI moved to, unless it is the first found (a
// resumed session's past). It sends an EvObserved whenever the inferred
// state changes or the file grows (growth is activity: the stall clock),
// and ends with EvSessionEnded when the process is gone
// (observe.FileObserver).
func (s *Source) Observe(ctx context.Context, es sessions.ExternalSession) (<-chan sessions.Event, error) {
	o := s.newObserver(es)
	return s.RelayProcess(ctx, es, o.Dirs, o.Step)
}

// observer is one Observe loop's memory.
type observer = observe.FileObserver[Workspace, Summary, *Summary]

func (s *Source) newObserver(es sessions.ExternalSession) *observer {
	return observe.NewFileObserver(observe.Files[Workspace, Summary, *Summary]{
		Pair:        func(pid int) (Workspace, bool) { return observe.PairOf(s.scan, pid) },
		Path:        Workspace.Events,
		Before:      s.StateDir,
		FoundIsPast: true,
		Infer: func(l observe.Look[Workspace, *Summary]) sessions.ObservedState {
			exists := l.Following && (l.Summary.Records > 0 || l.Lines > 0)
			st, _ := Infer(Evidence{Liveness: l.Liveness, Events: exists, Summary: *l.Summary})
			return st
		},
		Prompt: func(sum *Summary) string { return sum.FirstPrompt },
		// The directory's name is the id `copilot --resume` takes.
		SessionID: func(w Workspace, sum *Summary) string { return observe.OrDefault(w.ID, sum.SessionID) },
		Gone:      "the Copilot terminal was closed, or it was killed",
	}, s.ProcessAlive, es)
}
