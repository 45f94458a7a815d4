package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/storage"
)

// pruneEvery is how often old timeline rows are pruned.
const pruneEvery = 6 * time.Hour

// Run is the supervisor loop: a reconciliation tick every
// supervisor.tick_seconds, a full snapshot every snapshot_interval_seconds,
// and timeline pruning in the background. Settings are re-read every round,
// so a change applies at the next tick without a restart.
func (r *Runtime) Run(ctx context.Context) {
	var lastTick, lastSnapshot, lastPrune time.Time
	start := time.Now()
	lastTick, lastSnapshot = start, start
	for {
		set := r.settings(ctx)
		now := time.Now()
		wait := min(set.Tick-now.Sub(lastTick), set.SnapshotInterval-now.Sub(lastSnapshot))
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		// Read the settings again: the ones above were read before the
		// wait, so a change made meanwhile would otherwise apply one round
		// late rather than at the next tick.
		set = r.settings(ctx)
		now = time.Now()
		if now.Sub(lastTick) >= set.Tick {
			lastTick = now
			r.Tick(ctx, set)
		}
		if now.Sub(lastSnapshot) >= set.SnapshotInterval {
			lastSnapshot = now
			r.PublishSnapshot()
		}
		if now.Sub(lastPrune) >= pruneEvery {
			lastPrune = now
			r.prune(ctx, set, now)
		}
	}
}

// settings loads the current settings; on a read error the defaults keep
// the loop safe rather than stopping it.
func (r *Runtime) settings(ctx context.Context) storage.Settings {
	set, err := r.store.LoadSettings(ctx)
	if err != nil {
		r.log.Error("loading settings; using defaults this round", "err", err)
		return storage.DefaultSettings()
	}
	return set
}

// pruner is the optional store capability to drop old timeline rows.
type pruner interface {
	PruneEvents(ctx context.Context, olderThan time.Time) (int64, error)
}

// prune drops timeline rows older than the retention in its own goroutine,
// so a long delete never holds up a tick.
func (r *Runtime) prune(ctx context.Context, set storage.Settings, now time.Time) {
	p, ok := r.store.(pruner)
	if !ok {
		return
	}
	cutoff := now.AddDate(0, 0, -set.RetentionDays)
	go func() {
		n, err := p.PruneEvents(ctx, cutoff)
		if err != nil {
			r.log.Warn("pruning the timeline", "err", err)
		} else if n > 0 {
			r.log.Info("pruned old timeline rows", "rows", n, "before", cutoff)
		}
	}()
}

// PolicyFromSettings turns settings into the reconciliation policy.
func PolicyFromSettings(set storage.Settings) Policy {
	p := basePolicy()
	p.Enabled = set.Enabled
	p.AutoRecover = set.AutoRecover
	p.NudgeEnabled = set.NudgeEnabled
	p.StallSuspect = set.StallSuspect
	p.StallToolSuspect = set.StallToolSuspect
	p.StallHard = set.StallHard
	p.NudgeMaxAttempts = set.NudgeMaxAttempts
	p.NudgeCooldown = set.NudgeCooldown
	p.CompactTimeout = set.CompactTimeout
	if set.AuthRetry > 0 {
		p.AuthRetryInterval = set.AuthRetry
	}
	return p
}

// Tick runs one reconciliation round over every session: probe, decide
// (Reconcile, pure), record the observations and the intents of the actions,
// then execute the actions.
func (r *Runtime) Tick(ctx context.Context, set storage.Settings) {
	policy := PolicyFromSettings(set)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked(ctx)
	for _, e := range r.sess {
		probe := probeLocked(e)
		next, obs, acts := Reconcile(e.s, now, policy, probe)
		var rows []storage.TimelineEvent
		for _, o := range obs {
			detail := map[string]any{"message": o.Detail}
			if o.From != o.To {
				// The same keys as the state changes Apply causes.
				detail["from"], detail["to"] = o.From.String(), o.To.String()
			}
			rows = append(rows, newRow(next, now, o.Kind, detail))
		}
		if len(rows) > 0 || !sameSession(e.s, next) {
			r.commitRowsLocked(ctx, e, next, rows, false)
		}
		for _, a := range acts {
			r.executeLocked(ctx, e, a)
		}
	}
}

// livenessProber is the optional Process capability to tell whether the
// agent process itself still runs, independently of its stdout. Without it
// the runtime only knows what the exit event told it, and an exit that never
// arrives (stdout held open by an orphaned grandchild in the tool's process
// tree) would leave a turn spinning forever.
type livenessProber interface {
	// Alive reports whether the process runs; known is false when it
	// cannot tell.
	Alive() (alive, known bool)
}

// probeLocked probes e's process for the tick. A process the probe finds
// dead is dropped from the entry as its exit event would have done, so the
// recovery resumes a fresh process instead of writing to a dead one; its
// pump's late output is then ignored as a stale process's (see observe).
func probeLocked(e *entry) Probe {
	if e.proc == nil {
		return Probe{Known: e.s.Source == sessions.Managed}
	}
	if lp, ok := e.proc.(livenessProber); ok {
		if alive, known := lp.Alive(); known && !alive {
			e.proc = nil
			return Probe{Known: true}
		}
	}
	return Probe{Known: e.s.Source == sessions.Managed, Alive: true}
}

// sameSession reports whether Reconcile left the session unchanged in every
// field worth a write. It must cover every field Reconcile may change
// without a state change or an observation, or the change is lost and made
// again every tick (CompactionStarted: a compaction with no recorded start
// gets its clock started by the tick; dropping that restarts it forever).
func sameSession(a, b sessions.Session) bool {
	return a.State == b.State && a.Evidence == b.Evidence && a.NeedsAttention == b.NeedsAttention &&
		a.Supervision == b.Supervision && a.Nudge == b.Nudge && a.InTurn == b.InTurn &&
		a.Failure == b.Failure && a.ProcessAlive == b.ProcessAlive &&
		a.CompactionStarted.Equal(b.CompactionStarted)
}

// executeLocked dispatches one action. Its intent is recorded first; the
// outcome is recorded after, so an intent with no outcome found at boot is
// known to be uncertain and is never replayed.
func (r *Runtime) executeLocked(ctx context.Context, e *entry, a Action) {
	if Stale(a, e.s) {
		r.log.Info("dropping a stale action", "session", e.s.ID, "action", a.Kind, "for_turn", a.TurnGeneration, "turn", e.s.TurnGeneration)
		return
	}
	intent := newRow(e.s, time.Now(), a.TimelineKind, map[string]any{"message": a.Detail, "action": a.Kind.String(), "outcome": "pending"})
	id, err := r.recordIntent(ctx, intent)
	if err != nil {
		r.log.Error("recording an action's intent; not dispatching it", "session", e.s.ID, "action", a.Kind, "err", err)
		return
	}
	outcome := "ok"
	if err := r.dispatchLocked(ctx, e, a); err != nil {
		outcome = "failed: " + sessions.SanitizeMessage(err.Error())
		r.log.Warn("action failed", "session", e.s.ID, "action", a.Kind, "err", err)
	}
	r.recordOutcome(ctx, id, outcome)
	intent.ID = id
	intent.Detail = mergeDetail(intent.Detail, "outcome", outcome)
	r.bus.Publish(Message{Type: MsgTimeline, Event: &intent})
	if a.Kind == ActEscalate {
		s := e.s.Clone()
		r.bus.Publish(Message{Type: MsgEscalation, Session: &s})
	}
}

// dispatchLocked performs an action's side effect through the agent process.
func (r *Runtime) dispatchLocked(ctx context.Context, e *entry, a Action) error {
	switch a.Kind {
	case ActInterrupt:
		if e.proc == nil {
			return fmt.Errorf("no running process to interrupt")
		}
		if err := e.proc.Interrupt(); err != nil {
			return err
		}
		r.applyLocked(ctx, e, sessions.Event{Kind: sessions.EvInterruptRequested, By: sessions.BySupervisor})
		return nil
	case ActTerminate, ActKill:
		if e.proc == nil {
			return nil // already gone: the exit event did the job
		}
		sig := syscall.SIGTERM
		if a.Kind == ActKill {
			sig = syscall.SIGKILL
		}
		return e.proc.Signal(sig)
	case ActCompact:
		if err := r.ensureProcessLocked(ctx, e); err != nil {
			return err
		}
		if err := e.proc.Compact(); err != nil {
			return err
		}
		r.applyLocked(ctx, e, sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.BySupervisor})
		return nil
	case ActNudge, ActContinue:
		return r.promptLocked(ctx, e, NudgeText, sessions.BySupervisor, "")
	case ActRetryTurn:
		return r.promptLocked(ctx, e, RetryTurnText, sessions.BySupervisor, "")
	case ActEscalate:
		return nil // the state change (needs-attention) was committed with the decision
	}
	return fmt.Errorf("unknown action %v", a.Kind)
}

// ensureProcessLocked resumes the agent's session when its process is gone.
func (r *Runtime) ensureProcessLocked(ctx context.Context, e *entry) error {
	if e.proc != nil {
		return nil
	}
	if e.s.Source != sessions.Managed || e.s.AgentSessionID == "" {
		return fmt.Errorf("session %s cannot be resumed by the app", e.s.DisplayName())
	}
	return r.startLocked(ctx, e, e.s.AgentSessionID)
}

// recordIntent writes an action's intent row and returns its id.
func (r *Runtime) recordIntent(ctx context.Context, row storage.TimelineEvent) (int64, error) {
	return r.store.AppendEvent(ctx, row)
}

// recordOutcome completes an intent row with what happened.
func (r *Runtime) recordOutcome(ctx context.Context, id int64, outcome string) {
	if err := r.store.SetEventOutcome(ctx, id, outcome); err != nil {
		r.log.Error("recording an action's outcome", "event", id, "err", err)
	}
}

// reportUncertain runs at boot: an action whose intent was recorded but whose
// outcome never was (the app died while dispatching it) may or may not have
// happened. It is reported as uncertain and never replayed.
func (r *Runtime) reportUncertainLocked(ctx context.Context) error {
	pending, err := r.store.PendingIntents(ctx)
	if err != nil {
		return fmt.Errorf("reading unfinished actions: %w", err)
	}
	for _, in := range pending {
		if err := r.store.SetEventOutcome(ctx, in.ID, "uncertain"); err != nil {
			return fmt.Errorf("marking action %d uncertain: %w", in.ID, err)
		}
		e, ok := r.sess[in.SessionID]
		if !ok {
			continue
		}
		row := newRow(e.s, time.Now(), "uncertain_action", map[string]any{
			"message": fmt.Sprintf("%s decided at %s has no recorded outcome (the app stopped while dispatching it); it is not replayed",
				in.Kind, in.Time.Local().Format(time.DateTime)),
			"intent_id": in.ID,
		})
		row.TurnGeneration = in.TurnGeneration
		r.commitLocked(ctx, e, e.s, []storage.TimelineEvent{row})
	}
	return nil
}

func mergeDetail(detail []byte, key, value string) []byte {
	var m map[string]any
	if json.Unmarshal(detail, &m) != nil || m == nil {
		m = map[string]any{}
	}
	m[key] = value
	b, err := json.Marshal(m)
	if err != nil {
		return detail
	}
	return b
}
