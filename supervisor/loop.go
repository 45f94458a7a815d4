package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/services"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
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
	r.health.start(start, r.settings().Tick)
	// Every goroutine the loop starts ends with ctx; returning only after
	// them leaves nothing of the loop running once Run has returned.
	defer r.loopWork.Wait()
	r.startExternal(ctx)
	for {
		set := r.settings()
		now := time.Now()
		wait := min(set.Tick-now.Sub(lastTick), set.SnapshotInterval-now.Sub(lastSnapshot))
		if !services.Sleep(ctx, wait) {
			return
		}
		// Read the settings again: the ones above were read before the
		// wait, so a change made meanwhile would otherwise apply one round
		// late rather than at the next tick.
		set = r.settings()
		now = time.Now()
		if now.Sub(lastTick) >= set.Tick {
			due := lastTick.Add(set.Tick)
			lastTick = now
			r.Tick(ctx, set)
			r.health.ticked(now, now.Sub(due), time.Since(now), set.Tick)
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

// pruner is the optional store capability to drop old timeline rows.
type pruner interface {
	PruneEvents(ctx context.Context, olderThan time.Time) (int64, error)
}

// prune drops timeline rows older than the retention in its own goroutine,
// so a long delete never holds up a tick.
func (r *Runtime) prune(ctx context.Context, set settings.Settings, now time.Time) {
	p, ok := r.store.(pruner)
	if !ok {
		return
	}
	cutoff := now.AddDate(0, 0, -set.RetentionDays)
	r.loopWork.Add(1)
	go func() {
		defer r.loopWork.Done()
		n, err := p.PruneEvents(ctx, cutoff)
		if err != nil {
			r.log.Warn("pruning the timeline", "err", err)
		} else if n > 0 {
			r.log.Info("pruned old timeline rows", "rows", n, "before", cutoff)
		}
	}()
}

// DefaultPolicy returns the spec's defaults, chosen so that an unconfigured
// install behaves safely with multi-hour turns: the settings' defaults
// (settings.Defaults, where every default lives) over core.BasePolicy.
func DefaultPolicy() core.Policy { return PolicyFromSettings(settings.Defaults()) }

// PolicyFromSettings turns settings into the reconciliation policy.
func PolicyFromSettings(set settings.Settings) core.Policy {
	p := core.BasePolicy()
	p.Enabled = set.Enabled
	p.AutoRecover = set.AutoRecover
	p.NudgeEnabled = set.NudgeEnabled
	p.ResumeTerminal = set.ResumeTerminal
	p.ArchiveAfter = time.Duration(set.ArchiveAfterDays) * 24 * time.Hour
	p.StallSuspect = set.StallSuspect
	p.StallToolSuspect = set.StallToolSuspect
	p.StallHard = set.StallHard
	p.NudgeMaxAttempts = set.NudgeMaxAttempts
	p.NudgeCooldown = set.NudgeCooldown
	p.CompactTimeout = set.CompactTimeout
	if set.AuthRetry > 0 {
		p.AuthRetryInterval = set.AuthRetry
	}
	if set.TransientWindow > 0 {
		p.TransientWindow = set.TransientWindow
	}
	budgetPolicy(&p, set.Budgets)
	return p
}

// Tick runs one reconciliation round over every session: probe (outside the
// lock: it reads /proc), decide (Reconcile, pure, under the lock), queue the
// rows for the writer and the actions on each session's own queue. Nothing
// in it waits for an agent or for the disk, so one wedged agent cannot stop
// the watchdog. A session whose queue is still busy with an earlier side
// effect is left for the next tick rather than decided twice.
func (r *Runtime) Tick(ctx context.Context, set settings.Settings) {
	policy := PolicyFromSettings(set)
	r.w.kick() // retry writes that failed earlier
	r.refreshTerminals(ctx, time.Now())

	type probed struct {
		e     *entry
		proc  Process
		src   sessions.Source
		ext   *extHandle
		probe core.Probe
		state sessions.State
		// witness, when set, is asked whether the turn ended (a managed
		// turn that may have lost its result; core.LostResultSuspected).
		witness         sessions.TurnWitness
		cwd, agentSesID string
	}
	r.mu.Lock()
	shared := r.sharedConversationsLocked()
	list := make([]probed, 0, len(r.sess))
	seen := time.Now()
	day := r.todayLocked(seen)
	r.publishTodayLocked(day)
	budgets := policy.SessionBudget != (core.Budget{}) || policy.DailyBudget != (core.Budget{})
	for _, e := range r.sess {
		if e.q.busy() {
			continue
		}
		p := probed{e: e, proc: e.proc, src: e.s.Source, ext: e.ext, state: e.s.State}
		if e.proc != nil && core.LostResultSuspected(e.s, seen, policy) {
			p.witness, p.cwd, p.agentSesID = r.turnWitness(e.s.Agent), e.s.Cwd, e.s.AgentSessionID
		}
		list = append(list, p)
	}
	r.mu.Unlock()
	offline := r.connectivity() == ConnOffline
	for i := range list {
		list[i].probe = probeProcess(list[i].src, list[i].proc)
		if list[i].ext != nil {
			list[i].probe = probeExternal(list[i].ext)
		}
		list[i].probe.Offline = offline
		if w := list[i].witness; w != nil && list[i].probe.Alive {
			if at, ok := w.TurnEnded(list[i].cwd, list[i].agentSesID); ok {
				list[i].probe.TurnEndedAt = at
			}
		}
	}

	type decided struct {
		e    *entry
		acts []core.Action
	}
	var todo []decided
	now := time.Now()
	// The lock is taken per session, not for the whole round: a reader
	// (ls, the tray) waits at most one session's decision, however many
	// sessions there are.
	var held, maxHeld time.Duration
	for _, p := range list {
		r.mu.Lock()
		locked := time.Now()
		if budgets {
			// Priced here, in the session's own hold, not in the one
			// hold over every session above.
			p.probe.Spent = r.spentLocked(p.e, policy, day)
		}
		if acts := r.reconcileLocked(p.e, p.proc, p.probe, now, policy, shared[p.e.s.ID]); len(acts) > 0 {
			todo = append(todo, decided{p.e, acts})
		}
		d := time.Since(locked)
		r.mu.Unlock()
		held += d
		maxHeld = max(maxHeld, d)
	}
	r.health.lockHeld(held, maxHeld)
	for _, d := range todo {
		for _, a := range d.acts {
			e, a := d.e, a
			e.q.do(func() { r.execute(e, a) })
		}
	}
}

// turnWitness is the agent's own record of its sessions, when its terminal
// source keeps one (sessions.TurnWitness): the runtime names no agent, it
// matches the source registered under the same name.
func (r *Runtime) turnWitness(agent string) sessions.TurnWitness {
	for _, src := range r.external {
		if w, ok := src.(sessions.TurnWitness); ok && src.Name() == agent {
			return w
		}
	}
	return nil
}

// reconcileLocked decides one session for the tick and commits what
// Reconcile changed; it returns the actions to run on the session's queue.
// sharedWith is the session whose process also runs e's conversation, as
// the tick found it.
func (r *Runtime) reconcileLocked(e *entry, proc Process, probe core.Probe, now time.Time, policy core.Policy, sharedWith string) []core.Action {
	if e.proc != proc || e.q.busy() {
		return nil // changed since the probe; the next tick sees it
	}
	cur := e.s
	sharedChanged := cur.SharedWith != sharedWith
	cur.SharedWith = sharedWith
	if proc != nil && probe.Known && !probe.Alive {
		// Dropped as its exit event would have done, so the recovery
		// resumes a fresh process instead of writing to a dead one; its
		// pump's late output is then ignored as a stale process's.
		e.proc = nil
	}
	next, obs, acts, changed := core.Reconcile(cur, now, policy, probe)
	changed = changed || sharedChanged
	if archived, aobs, ok := core.Archive(next, now, policy.ArchiveAfter, probe); ok && len(acts) == 0 {
		next, obs, changed = archived, append(obs, aobs...), true
	}
	rows := observationRows(next, now, obs)
	if len(rows) > 0 || changed {
		r.commitRowsLocked(e, next, rows, false, false)
	}
	return acts
}

// sharedConversationsLocked names, for each session, another session whose
// live process runs its agent conversation (core.SharedConversations).
func (r *Runtime) sharedConversationsLocked() map[string]string {
	list := make([]core.ConversationProcess, 0, len(r.sess))
	for _, e := range r.sess {
		if e.s.AgentSessionID == "" {
			continue
		}
		live := e.proc != nil
		if e.ext != nil {
			live = e.ext.live && e.s.ProcessAlive
		}
		list = append(list, core.ConversationProcess{ID: e.s.ID, Agent: e.s.Agent, AgentSessionID: e.s.AgentSessionID,
			Live: live, ResumedFrom: e.s.ResumedFrom, CreatedAt: e.s.CreatedAt, Archived: !e.s.ArchivedAt.IsZero()})
	}
	return core.SharedConversations(list)
}

// claimConversationLocked reserves the start of a process on e's agent
// conversation: refused while another session's live process runs it, or
// while another start on it is under way (decided on another session's
// queue: a background resume of a terminal session and a nudge of the
// managed one, in the same tick). The caller releases it once its process
// is attached (or failed to start).
func (r *Runtime) claimConversationLocked(e *entry) (release func(), err error) {
	if other := r.sharedConversationsLocked()[e.s.ID]; other != "" {
		return nil, conflictf("session %s runs its conversation (%s session %s) in a process of its own",
			sessions.ShortID(other), e.s.Agent, e.s.AgentSessionID)
	}
	key := e.s.Agent + "\x00" + e.s.AgentSessionID
	if r.starting[key] {
		return nil, conflictf("another process is being started on its conversation (%s session %s)", e.s.Agent, e.s.AgentSessionID)
	}
	if r.starting == nil {
		r.starting = map[string]bool{}
	}
	r.starting[key] = true
	return func() {
		r.mu.Lock()
		delete(r.starting, key)
		r.mu.Unlock()
	}, nil
}

// observationRows are the timeline rows recording what a pure rule
// observed of s; never nil, so a caller can tell "save, with no row" from
// "nothing to save".
func observationRows(s sessions.Session, now time.Time, obs []core.Observation) []storage.TimelineEvent {
	rows := make([]storage.TimelineEvent, 0, len(obs))
	for _, o := range obs {
		detail := sessions.TimelineDetail{Message: o.Detail, Cause: o.Cause.String()}
		if o.From != o.To {
			// The same keys as the state changes Apply causes.
			detail.From, detail.To = o.From.String(), o.To.String()
		}
		rows = append(rows, newRow(s, now, o.Kind, detail))
	}
	return rows
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

// probeProcess probes a session's process for the tick, outside the lock.
// A process that cannot be probed (no probe on this platform, or the probe
// cannot tell) is not known: Reconcile then neither trusts it alive nor
// declares it dead, and the evidence says "not probed".
func probeProcess(src sessions.Source, proc Process) core.Probe {
	if proc == nil {
		return core.Probe{Known: src == sessions.Managed}
	}
	lp, ok := proc.(livenessProber)
	if !ok {
		return core.Probe{}
	}
	alive, known := lp.Alive()
	switch {
	case !known:
		return core.Probe{}
	case !alive:
		return core.Probe{Known: true}
	}
	return core.Probe{Known: true, Alive: true, Stderr: sessions.StderrLine(proc.StderrTail())}
}

// execute carries out one action on its session's queue, outside the lock.
// Its intent is written first (and waited for: it must be on disk before
// the side effect), the outcome after, so an intent with no outcome found at
// boot is known to be uncertain and is never replayed.
func (r *Runtime) execute(e *entry, a core.Action) {
	r.mu.Lock()
	if core.Stale(a, e.s) {
		r.mu.Unlock()
		r.log.Info("dropping a stale action", "session", a.SessionID, "action", a.Kind, "for_turn", a.TurnGeneration)
		return
	}
	detail := sessions.TimelineDetail{Message: a.Detail, Action: a.Kind.String(), Outcome: "pending"}
	intent := newRow(e.s, time.Now(), intentKind(a, e.s.Source), detail)
	r.mu.Unlock()
	res := <-r.w.submit(storage.BatchItem{Events: []storage.TimelineEvent{intent}}, true)
	if res.err != nil || len(res.ids) != 1 {
		r.log.Error("recording an action's intent; not dispatching it", "session", a.SessionID, "action", a.Kind, "err", res.err)
		return
	}
	id := res.ids[0]
	outcome := "ok"
	if err := r.dispatch(e, a); err != nil {
		outcome = "failed: " + sessions.SanitizeMessage(err.Error())
		r.log.Warn("action failed", "session", a.SessionID, "action", a.Kind, "err", sessions.SanitizeMessage(err.Error()))
	}
	r.w.submit(storage.BatchItem{OutcomeID: id, Outcome: outcome}, false)
	intent.ID = id
	detail.Outcome = outcome
	intent.Detail = detail.JSON()
	r.mu.Lock()
	if a.Kind.Recovers() {
		// Counted once its intent is on disk, whatever its outcome: an
		// attempt that failed was still an attempt (Boot counts the rows).
		r.recoveredLocked(a.SessionID, time.Now())
	}
	r.bus.Publish(localapi.Message{Type: localapi.MsgTimeline, Event: &intent})
	if a.Kind == core.ActEscalate {
		s := e.s.Clone()
		r.bus.Publish(localapi.Message{Type: localapi.MsgEscalation, Session: &s})
	}
	r.mu.Unlock()
}

// dispatch performs an action's side effect through the agent process.
func (r *Runtime) dispatch(e *entry, a core.Action) error {
	r.mu.Lock()
	src, h := e.s.Source, e.ext
	r.mu.Unlock()
	if src != sessions.Managed {
		return r.dispatchExternal(e, h, a)
	}
	switch a.Kind {
	case core.ActInterrupt:
		r.mu.Lock()
		proc := e.proc
		if proc == nil {
			r.mu.Unlock()
			return fmt.Errorf("no running process to interrupt")
		}
		// Recorded before the write, so the abort that answers it finds it.
		r.applyLocked(e, sessions.Event{Kind: sessions.EvInterruptRequested, By: sessions.BySupervisor})
		r.mu.Unlock()
		if err := proc.Interrupt(); err != nil {
			_, ferr := r.deliveryFailed(e, proc, "the interrupt", 0, err)
			return ferr
		}
		return nil
	case core.ActTerminate, core.ActKill:
		r.mu.Lock()
		proc := e.proc
		r.mu.Unlock()
		if proc == nil {
			return nil // already gone: the exit event did the job
		}
		sig := syscall.SIGTERM
		if a.Kind == core.ActKill {
			sig = syscall.SIGKILL
		}
		return proc.Signal(sig)
	case core.ActCompact:
		proc, err := r.ensureProcess(e)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.applyLocked(e, sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.BySupervisor})
		r.mu.Unlock()
		if err := proc.Compact(); err != nil {
			_, ferr := r.deliveryFailed(e, proc, "the compaction", 0, err)
			return ferr
		}
		return nil
	case core.ActNudge, core.ActContinue:
		_, err := r.deliverPrompt(e, core.NudgeText, sessions.BySupervisor, "")
		return err
	case core.ActRetryTurn:
		_, err := r.deliverPrompt(e, core.RetryTurnText, sessions.BySupervisor, "")
		return err
	case core.ActEscalate:
		return nil // the state change (needs-attention) was committed with the decision
	}
	return fmt.Errorf("unknown action %v", a.Kind)
}

// reportUncertainLocked runs at boot: an action whose intent was recorded
// but whose outcome never was (the app died while dispatching it) may or may
// not have happened. It is reported as uncertain and never replayed.
func (r *Runtime) reportUncertainLocked(pending []storage.TimelineEvent) {
	for _, in := range pending {
		r.w.submit(storage.BatchItem{OutcomeID: in.ID, Outcome: "uncertain"}, false)
		e, ok := r.sess[in.SessionID]
		if !ok {
			continue
		}
		row := newRow(e.s, time.Now(), "uncertain_action", sessions.TimelineDetail{
			Message: fmt.Sprintf("%s decided at %s has no recorded outcome (the app stopped while dispatching it); it is not replayed",
				in.Kind, in.Time.Local().Format(time.DateTime)),
			IntentID: in.ID,
		})
		row.TurnGeneration = in.TurnGeneration
		r.commitRowsLocked(e, e.s, []storage.TimelineEvent{row}, true, false)
	}
}

// editDetail returns a stored detail changed by edit; a detail that cannot
// be read is replaced by what edit makes of an empty one.
func editDetail(detail json.RawMessage, edit func(*sessions.TimelineDetail)) json.RawMessage {
	var d sessions.TimelineDetail
	if json.Unmarshal(detail, &d) != nil {
		d = sessions.TimelineDetail{}
	}
	edit(&d)
	return d.JSON()
}
