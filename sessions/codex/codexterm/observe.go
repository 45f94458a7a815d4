package codexterm

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Observe follows one session: its process and its rollout's tail (found
// again at every look: Codex writes it at the first prompt and may
// re-create it, after the trust prompt or /new: its turns are new). It
// sends an EvObserved whenever the inferred state changes or the rollout
// grows (growth is activity: the stall clock), and ends with
// EvSessionEnded when the process is gone (observe.FileObserver).
func (s *Source) Observe(ctx context.Context, es sessions.ExternalSession) (<-chan sessions.Event, error) {
	o := s.newObserver(es)
	return s.RelayProcess(ctx, es, o.Dirs, o.Step)
}

// observer is one Observe loop's memory.
type observer = observe.FileObserver[Rollout, Summary, *Summary]

func (s *Source) newObserver(es sessions.ExternalSession) *observer {
	return observe.NewFileObserver(observe.Files[Rollout, Summary, *Summary]{
		Pair:   func(pid int) (Rollout, bool) { return observe.PairOf(s.scan, pid) },
		Path:   func(r Rollout) string { return r.Path },
		Before: s.today,
		Infer: func(l observe.Look[Rollout, *Summary]) sessions.ObservedState {
			st, _ := Infer(Evidence{Liveness: l.Liveness, Rollout: l.Following, Summary: *l.Summary})
			return st
		},
		Prompt:    func(sum *Summary) string { return sum.FirstPrompt },
		SessionID: func(r Rollout, _ *Summary) string { return r.Meta.ID },
		Gone:      "the Codex terminal was closed, or it was killed",
	}, s.ProcessAlive, es)
}
