package core

import (
	"fmt"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Reconcile is the pure decision core of the watchdog, the counterpart of
// sessions.Apply for the passage of time and for probes: it returns the
// session as it should be at now, the observations to record, and the
// actions to execute. It never mutates s, starts no goroutine and does no
// I/O. Only Reconcile writes s.Supervision.
//
// Each call runs, in order:
//
//  0. repair: an unknown state → Errored; Working/Suspect with no turn in
//     flight → Idle (no rule could ever move them otherwise);
//  1. liveness: a turn in flight whose process is gone → Interrupted, or
//     WaitingOnUser(review) when the user had asked to stop it;
//  2. bookkeeping hygiene: forget a stall chain or a recovery the session
//     has moved past (a new turn, a clean completion);
//  3. the compaction timeout: Compacting too long → Errored (overflow),
//     escalated at once with nothing re-driven (the agent may still be
//     compacting);
//  4. stalls: Working silent → Suspect; Suspect silent past the hard limit →
//     interrupt, then SIGTERM, SIGKILL and escalation, one step per grace;
//     a user's interrupt the turn ignored past the grace → SIGTERM, SIGKILL
//     and escalation (a terminal session: escalation), instead of them;
//  5. budgets: a session past a budget (OverBudget) is escalated once,
//     naming it, and, like one the user switched recovery off for
//     (Session.RecoveryOff), is not recovered: step 6 runs as with
//     AutoRecover off, for this session, with that reason;
//  6. recovery (only with AutoRecover): overflow compact-and-retry,
//     rate-limit drain, auth resume, transient retries (transient.go), the
//     continuation nudge, and escalation when nothing automatic is left.
//     Never while the user is being asked. Every attempt also counts
//     against the incident's one shared budget (Supervision.IncidentAttempts),
//     so alternating failure kinds escalate.
//
// A state change made in steps 1–4 is acted on in step 5 of the same call,
// so a dead process is nudged at once rather than one tick later. Every
// state change yields one observation, in order (Errored → Recovering in one
// call is two). changed reports whether the session differs from s in any
// field: a session nothing happens to comes back deeply equal to s
// (UpdatedAt included) with changed false, so the loop can skip writing it
// without comparing fields (the tests hold changed to reflect.DeepEqual on
// every call, so a field written without setting it fails them).
func Reconcile(s sessions.Session, now time.Time, p Policy, probe Probe) (next sessions.Session, obs []Observation, acts []Action, changed bool) {
	if !p.Enabled {
		return s.Clone(), nil, nil, false
	}
	// A shallow copy, not a Clone: the reconciler only ever assigns to the
	// session's maps and pointers (endTurn sets them to nil), never writes
	// through them, so s cannot be changed through r.n — and the steady
	// tick, where nothing happens, allocates nothing.
	r := reconciler{n: s, now: now, p: p, probe: probe}
	if r.hit, r.over = OverBudget(p.SessionBudget, p.DailyBudget, probe.Spent); r.over {
		r.off = r.hit.String()
	} else if s.RecoveryOff {
		r.off = "recovery is switched off for this session"
	}
	if r.off != "" {
		// Everything that recovers reads AutoRecover; the reason it is
		// off here is said instead of the global switch's.
		r.p.AutoRecover = false
	}
	r.run()
	return r.n, r.obs, r.acts, r.changed
}

// reconciler carries one Reconcile call. It lives on the caller's stack; the
// only allocations are for what actually happens (evidence, observations,
// actions). Every write to n sets changed.
type reconciler struct {
	n       sessions.Session
	now     time.Time
	p       Policy
	probe   Probe
	obs     []Observation
	acts    []Action
	changed bool
	// off is why recovery is off for this session alone (a budget it is
	// past, the user's switch); "" when only the policy decides.
	off string
	// hit is the budget the session is past, when over.
	hit  BudgetHit
	over bool
}

// offReason is why recovery does not act: the session's own reason, else
// the global switch.
func (r *reconciler) offReason() string {
	if r.off != "" {
		return r.off
	}
	return "automatic recovery is off"
}

func (r *reconciler) run() {
	r.rejectIncoherentState()
	r.probeLiveness()
	r.forgetStaleBookkeeping()
	r.timeOutCompaction()
	r.completeLostResult()
	if !r.enforceUserStop() {
		r.watchStall()
	}
	r.budgetStop()
	if !r.sharedConversation() {
		r.recover()
	}
	if r.n.Evidence == "" {
		// Every state carries its evidence; a session that arrived without
		// one (old data) gets the plainest true sentence rather than none.
		r.n.Evidence = fallbackEvidence(r.n)
		r.changed = true
	}
	if r.changed {
		r.n.UpdatedAt = r.now
	}
}

// --- status reconciliation (always, while Enabled) ---

// rejectIncoherentState repairs the two states no rule could otherwise
// ever leave: a state this build does not know (corrupt or newer data)
// becomes an honest Errored, which recovery then escalates; Working or
// Suspect with no turn in flight (InTurn is the authority, as for boot
// reconciliation) is a stale spinner and becomes Idle.
func (r *reconciler) rejectIncoherentState() {
	n := &r.n
	switch {
	case !n.State.Valid():
		bad := int(n.State)
		endTurn(n)
		n.Failure = sessions.Failure{Kind: sessions.OtherFailure, Message: fmt.Sprintf("unknown session state %d", bad)}
		r.mark(sessions.Errored, fmt.Sprintf("the session was in an unknown state (%d); marked errored", bad), TimelineStateChanged)
	case (n.State == sessions.Working || n.State == sessions.Suspect) && !n.InTurn:
		r.mark(sessions.Idle, fmt.Sprintf("no turn is in flight; the %s state was stale", strings.ToLower(n.State.Label())), TimelineStateChanged)
	}
}

// probeLiveness: a turn that claims to be in flight on a dead process is
// over, whatever state it claimed (this is the fix for a permanent spinner
// after a lost exit event). An unknown probe changes nothing.
func (r *reconciler) probeLiveness() {
	if !r.probe.Known {
		return
	}
	if r.n.ProcessAlive != r.probe.Alive {
		r.n.ProcessAlive = r.probe.Alive
		r.changed = true
	}
	if r.probe.Alive || !r.n.InTurn {
		return
	}
	gen, byUser := r.n.TurnGeneration, r.n.StoppedByUser()
	endTurn(&r.n)
	proc := "agent process"
	if r.n.PID > 0 {
		proc = fmt.Sprintf("agent process %d", r.n.PID)
	}
	if byUser {
		// The user asked to stop this turn: its end is theirs to review,
		// never a nudge.
		r.n.WaitReason = sessions.WaitReview
		r.mark(sessions.WaitingOnUser, fmt.Sprintf("turn %d stopped at your request (%s is gone); waiting for review", gen, proc), TimelineStateChanged)
		return
	}
	r.mark(sessions.Interrupted, fmt.Sprintf("%s is gone; turn %d was in flight", proc, gen), TimelineMarkedInterrupted)
	r.obs[len(r.obs)-1].Cause = sessions.CauseProbe
}

// forgetStaleBookkeeping drops Supervision entries that describe a past the
// session has moved on from. Apply never touches Supervision, so this is
// where a finished incident ends.
func (r *reconciler) forgetStaleBookkeeping() {
	sv := &r.n.Supervision
	if sv.Recovery == RecoveryStall && !r.stallChainLive() {
		r.clearRecovery()
	}
	if sv.Recovery == RecoveryUserStop && !r.n.InTurn {
		r.endUserStop()
	} else if sv.Recovery == RecoveryUserStop && !r.n.StoppedByUser() {
		r.clearRecovery()
	}
	if sv.Recovery != RecoveryStall && sv.Recovery != RecoveryUserStop && !sv.InterruptSentAt.IsZero() {
		sv.InterruptSentAt = time.Time{}
		r.changed = true
	}
	// A turn that ended cleanly (a review, or idle, with no failure) closes
	// the incident and refills every recovery budget — except the
	// compaction we sent ourselves, whose completion is the cue to retry.
	if !compactionDone(&r.n) && atCleanRest(&r.n) {
		r.closeTransient()
		r.endIncident()
	}
}

// stallChainLive reports whether the interrupt sent for a stall still
// concerns the turn in flight: still in flight, still Suspect, still silent
// since. Only Reconcile marks Suspect, and only from a state it has seen, so
// a new turn (Apply → Working) always breaks the chain before it could
// stall again; no clock comparison with TurnStarted is needed (nor wanted:
// a skewed TurnStarted would restart the chain and re-send the interrupt).
func (r *reconciler) stallChainLive() bool {
	n, sent := &r.n, r.n.Supervision.InterruptSentAt
	return n.InTurn && n.State == sessions.Suspect && !sent.IsZero() && !n.LastEventAt.After(sent)
}

// timeOutCompaction fails a compaction running past CompactTimeout instead
// of latching the session busy forever.
func (r *reconciler) timeOutCompaction() {
	n := &r.n
	if n.State != sessions.Compacting {
		return
	}
	start := n.CompactionStarted
	if start.IsZero() {
		start = n.StateChangedAt
	}
	if start.IsZero() {
		// No start recorded anywhere: start the clock now, so the timeout
		// still bounds it.
		n.CompactionStarted = r.now
		r.changed = true
		return
	}
	if r.now.Sub(start) < r.p.CompactTimeout {
		return
	}
	endTurn(n)
	msg := fmt.Sprintf("compaction ran past %d s and was failed", int64(r.p.CompactTimeout/time.Second))
	n.Failure = sessions.Failure{Kind: sessions.ContextOverflow, Message: msg}
	r.mark(sessions.Errored, msg, TimelineCompactionTimeout)
	// No automatic retry: the agent may still be compacting, and a /compact
	// or a retried turn written now would land in that running turn and
	// start a needless extra one. Escalating also ends any overflow round
	// of ours, so the late end of this compaction books no retry either.
	r.escalate("a compaction that hangs is not retried automatically")
}

// watchStall applies the stall thresholds. Silence is measured from the last
// genuine stream event (see quietSince).
func (r *reconciler) watchStall() {
	n := &r.n
	switch n.State {
	case sessions.Working:
		since := quietSince(n)
		if since.IsZero() {
			return // nothing to measure from; the liveness probe still guards it
		}
		silent := r.now.Sub(since)
		if r.launchHung(silent) {
			return
		}
		if silent < r.p.suspectAfter(n) {
			return
		}
		// Only Suspect this tick, even if the hard limit is already past
		// (the machine slept, the app was stopped): the stream gets one tick
		// to prove itself alive before a turn is interrupted.
		r.mark(sessions.Suspect, r.suspectEvidence(silent, ""), TimelineMarkedSuspect)

	case sessions.Suspect:
		r.stallChain()

	case sessions.Recovering:
		// The agent's own retry (InTurn) is the agent's business while its
		// countdown runs. Once the announced retry time has passed and the
		// stream stayed silent, it is an ordinary stall, not a latch.
		if !n.InTurn {
			return
		}
		since := quietSince(n)
		if since.IsZero() {
			return
		}
		silent := r.now.Sub(since)
		if silent < r.p.suspectAfter(n) {
			return
		}
		clause := ""
		if !n.Failure.RetryAt.IsZero() {
			clause = fmt.Sprintf(" since the agent's retry was due at %s", clockPhrase(n.Failure.RetryAt, r.now))
		}
		r.mark(sessions.Suspect, r.suspectEvidence(silent, clause), TimelineMarkedSuspect)
	}
}

// launchHung fails a managed turn whose agent process has printed nothing
// by the suspect threshold: a trust dialog, a stuck MCP server or a login
// prompt holds it before its first event, and waiting on to the hard limit
// and nudging would only repeat it. The turn is Errored (launch) and
// escalated with the agent's last stderr line; a launch failure is never
// nudged (see recover).
func (r *reconciler) launchHung(silent time.Duration) bool {
	n := &r.n
	if n.Source != sessions.Managed || !n.InTurn || n.ProcessSpoke || silent < r.p.StallSuspect {
		return false
	}
	gen := n.TurnGeneration
	endTurn(n)
	msg := "the agent printed nothing in " + humanSpan(silent)
	if r.probe.Stderr != "" {
		msg += "; its last error output: " + r.probe.Stderr
	}
	n.Failure = sessions.Failure{Kind: sessions.Launch, Message: sessions.SanitizeMessage(msg)}
	r.mark(sessions.Errored, fmt.Sprintf("the agent failed to start turn %d: %s", gen, n.Failure.Message), TimelineStateChanged)
	r.escalate("a launch that hangs before its first output is neither retried nor nudged")
	return true
}

// stallChain is the bounded escalation of a hard stall, one step per call
// and never a step twice: the agent's interrupt; after InterruptGrace
// SIGTERM to the process group; after 2×grace SIGKILL; after 3×grace,
// escalation. It stops by itself when the turn ends or speaks again (see
// stallChainLive); Suspect never returns to Working here — only a genuine
// event does, in Apply.
func (r *reconciler) stallChain() {
	n, sv := &r.n, &r.n.Supervision
	if sv.Recovery != RecoveryStall {
		since := quietSince(n)
		if since.IsZero() {
			return
		}
		silent := r.now.Sub(since)
		if silent < r.p.StallHard {
			return
		}
		if n.Source != sessions.Managed && r.probe.Unreachable {
			// The urgent nudge is the only interrupt a terminal session
			// gets, and this one cannot receive it.
			r.escalate(fmt.Sprintf("turn %d silent for %s, past the %s hard-stall limit, and the session offers no way in to interrupt it (no inbox)",
				n.TurnGeneration, humanSpan(silent), humanSpan(r.p.StallHard)))
			return
		}
		if n.Source != sessions.Managed {
			// A terminal session's interrupt is the continuation nudge sent
			// with priority "now": typed into the user's session, so it
			// obeys both switches and spends the nudge budget like every
			// other nudge; refused, the session is escalated instead.
			why, wait := r.nudgeRefused()
			if wait {
				return
			}
			if why != "" {
				r.escalate(fmt.Sprintf("turn %d silent for %s, past the %s hard-stall limit; its interrupt is the continuation nudge, and %s",
					n.TurnGeneration, humanSpan(silent), humanSpan(r.p.StallHard), why))
				return
			}
			n.Nudge.Attempts++
			n.Nudge.LastNudge = r.now
		}
		*sv = sessions.Supervision{
			Recovery:            RecoveryStall,
			RecoveryAttempts:    stallInterrupted,
			InterruptSentAt:     r.now,
			NextAttemptAt:       r.now.Add(r.p.InterruptGrace),
			EscalatedGeneration: sv.EscalatedGeneration,
			IncidentAttempts:    sv.IncidentAttempts,
			BudgetKey:           sv.BudgetKey,
			Budget:              sv.Budget,
		}
		r.note("interrupt sent at " + clockPhrase(r.now, r.now))
		r.act(ActInterrupt, TimelineStallInterrupt, fmt.Sprintf(
			"turn %d silent for %s, past the %s hard-stall limit%s; interrupting it",
			n.TurnGeneration, humanSpan(silent), humanSpan(r.p.StallHard), openCallPhrase(n)))
		return
	}
	waited := r.now.Sub(sv.InterruptSentAt)
	grace := r.p.InterruptGrace
	switch sv.RecoveryAttempts {
	case stallInterrupted:
		if waited < grace {
			return
		}
		if n.Source != sessions.Managed {
			// The urgent nudge was the only way in: a session the app did
			// not launch is never signalled.
			sv.RecoveryAttempts = stallEscalated
			sv.NextAttemptAt = time.Time{}
			r.changed = true
			r.escalate("the stalled terminal session did not answer the interrupt sent through its inbox, and the app never signals a process it did not launch")
			return
		}
		sv.RecoveryAttempts = stallTerminated
		sv.NextAttemptAt = sv.InterruptSentAt.Add(2 * grace)
		r.note("interrupt ignored; SIGTERM sent at " + clockPhrase(r.now, r.now))
		r.act(ActTerminate, TimelineStallInterrupt, fmt.Sprintf(
			"turn %d ignored the interrupt for %s; terminating the agent's process group", n.TurnGeneration, humanSpan(waited)))
	case stallTerminated:
		if waited < 2*grace {
			return
		}
		sv.RecoveryAttempts = stallKilled
		sv.NextAttemptAt = sv.InterruptSentAt.Add(3 * grace)
		r.note("SIGTERM ignored; SIGKILL sent at " + clockPhrase(r.now, r.now))
		r.act(ActKill, TimelineStallInterrupt, fmt.Sprintf(
			"turn %d survived SIGTERM for %s; killing the agent's process group", n.TurnGeneration, humanSpan(waited-grace)))
	case stallKilled:
		if waited < 3*grace {
			return
		}
		sv.RecoveryAttempts = stallEscalated
		sv.NextAttemptAt = time.Time{}
		r.changed = true // even when the incident was already escalated
		r.escalate("the stalled turn survived its interrupt, SIGTERM and SIGKILL")
	}
}

// LostResultSuspected reports whether a managed turn may have lost its end:
// in flight, Working or Suspect, nothing open (no tool, no background task,
// no permission asked), the agent's session id known, and silent for
// LostResultAfter. Only then is the agent's own record read (the loop's
// probe, Probe.TurnEndedAt, once per tick while it holds), so a turn that
// is busy or talking is never read at all.
func LostResultSuspected(s sessions.Session, now time.Time, p Policy) bool {
	if s.Source != sessions.Managed || !s.InTurn || s.HasOpenWork() || len(s.Permissions) > 0 || s.AgentSessionID == "" ||
		s.State != sessions.Working && s.State != sessions.Suspect || p.LostResultAfter <= 0 {
		return false
	}
	since := quietSince(&s)
	return !since.IsZero() && now.Sub(since) >= p.LostResultAfter
}

// completeLostResult ends a managed turn whose end the stream lost (Claude's
// result line never came after its tools finished) when the agent's own
// record says it ended after the turn began: a review, as a completed turn
// is, instead of a stall and a nudge 10 + 150 minutes later.
func (r *reconciler) completeLostResult() {
	n := &r.n
	ended := r.probe.TurnEndedAt
	if ended.IsZero() || ended.Before(n.TurnStarted) || !LostResultSuspected(*n, r.now, r.p) {
		return
	}
	gen, silent := n.TurnGeneration, r.now.Sub(quietSince(n))
	endTurn(n)
	n.Failure = sessions.Failure{}
	n.Nudge = sessions.NudgeBudget{} // a completed turn refills the nudge budget, as in Apply
	n.WaitReason = sessions.WaitReview
	r.mark(sessions.WaitingOnUser, fmt.Sprintf(
		"turn %d completed at %s by the agent's transcript; its result never arrived on the stream (silent for %s); waiting for review",
		gen, clockPhrase(ended, r.now), humanSpan(silent)), TimelineStateChanged)
}

// enforceUserStop makes the user's interrupt stick when the agent ignores
// it: once the turn has run InterruptGrace past the request, a managed
// agent's process group gets SIGTERM, SIGKILL after a second grace, and the
// session is escalated after a third if the turn survived both. Its end is
// Apply's (the process exit of a turn the user stopped is a review) and is
// never nudged. A terminal session is never signalled: it is escalated once
// the grace is over. It reports whether the user's stop owns the turn, so
// the stall rules leave it alone (their interrupt would repeat the user's,
// and their nudge is never wanted after a user's stop).
func (r *reconciler) enforceUserStop() bool {
	n, sv := &r.n, &r.n.Supervision
	if !n.InTurn || !n.StoppedByUser() || n.InterruptAt.IsZero() || sv.Recovery == RecoveryStall {
		return false
	}
	switch n.State {
	case sessions.Working, sessions.Suspect, sessions.Compacting, sessions.Recovering:
	case sessions.WaitingOnUser:
		// The agent waits on the user (a permission, a question): the user
		// can still answer or deny it, and nothing is ever sent meanwhile.
		return true
	default:
		return false // a turn that ended another way is not the user's stop to enforce
	}
	asked, grace := n.InterruptAt, r.p.InterruptGrace
	waited := r.now.Sub(asked)
	if sv.Recovery != RecoveryUserStop {
		if waited < grace {
			return true
		}
		*sv = sessions.Supervision{
			Recovery:            RecoveryUserStop,
			RecoveryAttempts:    stallTerminated,
			InterruptSentAt:     asked,
			NextAttemptAt:       asked.Add(2 * grace),
			EscalatedGeneration: sv.EscalatedGeneration,
			IncidentAttempts:    sv.IncidentAttempts,
			BudgetKey:           sv.BudgetKey,
			Budget:              sv.Budget,
		}
		r.changed = true
		if n.Source != sessions.Managed {
			sv.RecoveryAttempts, sv.NextAttemptAt = stallEscalated, time.Time{}
			r.escalate(fmt.Sprintf("you asked to stop turn %d %s ago and it still runs; the app never signals a process it did not launch, so stop it in its terminal",
				n.TurnGeneration, humanSpan(waited)))
			return true
		}
		r.note(fmt.Sprintf("your interrupt was ignored for %s; SIGTERM sent at %s", humanSpan(waited), clockPhrase(r.now, r.now)))
		r.act(ActTerminate, TimelineStopEnforced, fmt.Sprintf(
			"turn %d ignored your interrupt for %s; terminating the agent's process group", n.TurnGeneration, humanSpan(waited)))
		return true
	}
	switch sv.RecoveryAttempts {
	case stallTerminated:
		if waited < 2*grace {
			return true
		}
		sv.RecoveryAttempts = stallKilled
		sv.NextAttemptAt = asked.Add(3 * grace)
		r.note("your interrupt and SIGTERM were ignored; SIGKILL sent at " + clockPhrase(r.now, r.now))
		r.act(ActKill, TimelineStopEnforced, fmt.Sprintf(
			"turn %d survived SIGTERM for %s after your interrupt; killing the agent's process group", n.TurnGeneration, humanSpan(waited-grace)))
	case stallKilled:
		if waited < 3*grace {
			return true
		}
		sv.RecoveryAttempts = stallEscalated
		sv.NextAttemptAt = time.Time{}
		r.changed = true
		r.escalate("the turn you stopped survived your interrupt, SIGTERM and SIGKILL")
	}
	return true
}

// endUserStop closes an enforced user's stop once its turn is over (the
// signalled process exited: Apply made it a review), saying in the
// evidence what it took.
func (r *reconciler) endUserStop() {
	sv := &r.n.Supervision
	how := "SIGTERM"
	if sv.RecoveryAttempts >= stallKilled {
		how = "SIGKILL"
	}
	managed := r.n.Source == sessions.Managed && sv.RecoveryAttempts < stallEscalated
	r.clearRecovery()
	if managed && r.n.State == sessions.WaitingOnUser && r.n.WaitReason == sessions.WaitReview {
		r.note(fmt.Sprintf("the agent ignored your interrupt, so its process group was sent %s", how))
	}
}

// --- recovery (only with AutoRecover) ---

func (r *reconciler) recover() {
	n := &r.n
	if compactionDone(n) {
		// The compaction we sent finished (Apply brought the session back
		// to a review or to Idle): retry the turn. This is the one review
		// the supervisor acts on — it is the review of its own compaction,
		// not of the user's work.
		if !r.p.AutoRecover {
			r.clearRecovery()
			return
		}
		r.retryAfterCompaction()
		return
	}
	if n.Source != sessions.Managed && !n.ProcessAlive && !r.escalated() &&
		(n.State == sessions.Errored || n.State == sessions.Interrupted || n.State == sessions.Recovering && !n.InTurn) {
		// A terminal session whose process is gone: no nudge can reach it.
		// When the user allowed it, a turn that died mid-work is resumed in
		// the background as a managed session (the nudge goes there);
		// otherwise the app never starts a process in its place by itself.
		if n.State == sessions.Interrupted && r.p.ResumeTerminal && n.AgentSessionID != "" {
			r.recoverInterrupted()
			return
		}
		r.clearRecovery()
		r.escalate("resume it in the background, or start it again in its terminal")
		return
	}
	if n.Source != sessions.Managed && r.probe.Unreachable && !r.escalated() &&
		(n.State == sessions.Errored || n.State == sessions.Interrupted || n.State == sessions.Recovering && !n.InTurn) {
		// Alive, but no nudge can be delivered: waiting for a retry that
		// can never be sent would only delay telling the user.
		r.clearRecovery()
		r.escalate("it offers no way in for a nudge (no inbox), so continue it in its terminal")
		return
	}
	switch n.State {
	case sessions.WaitingOnUser:
		// Never act while the user is asked something (question, plan,
		// permission) or has a finished turn to review.
	case sessions.Errored:
		if !r.escalated() {
			r.recoverErrored()
		}
	case sessions.Recovering:
		if !n.InTurn {
			r.holdRecovering()
		}
	case sessions.Interrupted:
		if !r.escalated() {
			r.recoverInterrupted()
		}
	}
}

func (r *reconciler) recoverErrored() {
	if !r.p.AutoRecover {
		r.escalate(r.offReason())
		return
	}
	switch r.n.Failure.Kind {
	case sessions.ContextOverflow:
		if r.n.Source != sessions.Managed {
			// Compacting needs a way to type /compact: a terminal session
			// offers none.
			r.escalate("a terminal session's context is compacted in its terminal")
			return
		}
		r.redriveOverflow()
	case sessions.RateLimit, sessions.Network, sessions.Overloaded, sessions.Auth:
		// These continue the session with the continuation text: nudges,
		// under both switches (the one rule, for managed and terminal
		// sessions alike).
		if !r.p.NudgeEnabled {
			r.escalate("the continuation nudge is off, and continuing after " + r.n.Failure.Kind.Label() + " sends it")
			return
		}
		switch r.n.Failure.Kind {
		case sessions.RateLimit:
			r.scheduleDrain()
		case sessions.Auth:
			r.scheduleAuth()
		default:
			r.recoverTransient()
		}
	case sessions.Billing:
		r.escalate("a billing error cannot be fixed automatically")
	case sessions.Launch:
		r.escalate("the agent failed to start, and a nudge would fail the same way")
	default:
		r.escalate("there is no automatic recovery for this error")
	}
}

// redriveOverflow is the overflow compact-and-retry, in three steps spread
// over ticks, all keyed by Supervision.Recovery:
//
//  1. Errored(overflow) → Recovering, ActCompact; Recovery=overflow,
//     RecoveryAttempts+1 (the budget counts compactions).
//  2. The executor sends the compaction; Apply shows Working/Compacting,
//     then WaitingOnUser(review) or Idle. Reconcile sees overflow at rest →
//     Recovering, ActRetryTurn (RetryTurnText); Recovery=overflow_retry.
//  3. The retried turn runs; a clean completion closes the incident
//     (forgetStaleBookkeeping). If it overflows again the next round starts
//     at step 1 with the budget carried over; a spent budget escalates.
//
// A step that never starts (Recovering with no turn for CompactTimeout)
// counts as a failed round. A compaction that times out ends the incident
// in escalation instead (see timeOutCompaction).
func (r *reconciler) redriveOverflow() {
	sv := &r.n.Supervision
	if sv.Recovery != RecoveryOverflow && sv.Recovery != RecoveryOverflowRetry {
		r.startIncident(RecoveryOverflow)
	}
	limit := r.p.OverflowMaxAttempts
	if sv.RecoveryAttempts >= limit {
		r.escalate(fmt.Sprintf("%d of %d compact-and-retry attempts spent", sv.RecoveryAttempts, limit))
		return
	}
	if r.incidentSpent() {
		return
	}
	sv.Recovery = RecoveryOverflow
	sv.RecoveryAttempts++
	sv.IncidentAttempts++
	sv.NextAttemptAt = r.now.Add(r.p.CompactTimeout)
	attempt := fmt.Sprintf("attempt %d/%d", sv.RecoveryAttempts, limit)
	r.mark(sessions.Recovering, fmt.Sprintf("context overflow; compacting, then retrying the turn (%s)", attempt), TimelineStateChanged)
	r.act(ActCompact, TimelineOverflowRedrive, fmt.Sprintf(
		"turn %d overflowed its context; compacting it before retrying the turn (%s)", r.n.TurnGeneration, attempt))
}

func (r *reconciler) retryAfterCompaction() {
	sv := &r.n.Supervision
	sv.Recovery = RecoveryOverflowRetry
	sv.NextAttemptAt = r.now.Add(r.p.CompactTimeout)
	attempt := fmt.Sprintf("attempt %d/%d", sv.RecoveryAttempts, r.p.OverflowMaxAttempts)
	r.mark(sessions.Recovering, fmt.Sprintf("context compacted; retrying the turn (%s)", attempt), TimelineStateChanged)
	r.act(ActRetryTurn, TimelineOverflowRedrive, fmt.Sprintf("the compaction finished; retrying the overflowed turn (%s)", attempt))
}

// scheduleDrain holds a rate-limited session in Recovering until the
// provider's reset time, or an exponential backoff when there is none;
// holdRecovering continues it when the countdown ends. (An overload is a
// transient incident: see transient.go.)
func (r *reconciler) scheduleDrain() {
	r.scheduleHold(scheduledHold{
		recovery: RecoveryRateLimit, limit: r.p.RateLimitMaxAttempts, timeline: TimelineRateLimitDrain,
		attempts: "attempts to continue", until: "continuing at",
		delay: Policy.rateLimitDelay, providerReset: true,
	})
}

// scheduleAuth holds an auth failure in Recovering for AuthRetryInterval, the
// time a credential refresh (a login in another terminal, a token renewal)
// plausibly needs, then resumes.
func (r *reconciler) scheduleAuth() {
	r.scheduleHold(scheduledHold{
		recovery: RecoveryAuth, limit: r.p.AuthMaxAttempts, timeline: TimelineAuthResume,
		attempts: "resumes after refreshed credentials", until: "waiting for refreshed credentials, resuming at",
		delay: func(p Policy, _ int) time.Duration { return p.AuthRetryInterval },
	})
}

// scheduledHold is a recovery that waits in Recovering for a time, within
// a budget of its own and the incident's.
type scheduledHold struct {
	recovery string
	limit    int
	timeline string
	// attempts names what the budget counts, until what the countdown
	// ends in, for the evidence.
	attempts, until string
	// delay is the wait before the next attempt, given the attempts made.
	// It captures nothing: a closure over the reconciler would move it to
	// the heap on every call, the steady tick's included.
	delay func(p Policy, attempts int) time.Duration
	// providerReset: the provider's own reset time, when it gave one, wins
	// over any guess.
	providerReset bool
}

// scheduleHold starts (or carries on) h's recovery and holds the session
// until its next attempt, or escalates when a budget is spent.
func (r *reconciler) scheduleHold(h scheduledHold) {
	sv := &r.n.Supervision
	if sv.Recovery != h.recovery {
		r.startIncident(h.recovery)
	}
	if sv.RecoveryAttempts >= h.limit {
		r.escalate(fmt.Sprintf("%d of %d %s spent", sv.RecoveryAttempts, h.limit, h.attempts))
		return
	}
	if r.incidentSpent() {
		return
	}
	next := r.now.Add(h.delay(r.p, sv.RecoveryAttempts))
	if h.providerReset {
		// The failure's own reset time first; else a spent plan window the
		// agent reported earlier (a rate_limit_event of a previous turn, the
		// account's rate limits) says when the limit lifts.
		at := r.n.Failure.RetryAt
		if !at.After(r.now) {
			at = sessions.ResetAfter(r.n.RateWindows, r.now)
		}
		if at.After(r.now) {
			next = at
		}
	}
	sv.NextAttemptAt = next
	ev := fmt.Sprintf("%s; %s %s (attempt %d/%d)",
		r.n.Failure.Kind.Label(), h.until, clockPhrase(next, r.now), sv.RecoveryAttempts+1, h.limit)
	r.transition(sessions.Recovering, ev)
	r.observe(h.timeline, "scheduled: "+ev)
}

// holdRecovering runs a supervisor hold: Recovering with no turn in flight.
// It acts when the countdown ends, and bounds every hold so that Recovering
// can never latch.
func (r *reconciler) holdRecovering() {
	n, sv := &r.n, &r.n.Supervision
	switch sv.Recovery {
	case RecoveryTransient:
		r.holdTransient()

	case RecoveryOverflow, RecoveryOverflowRetry:
		if !r.p.AutoRecover {
			r.abandonHold()
			return
		}
		if r.now.Before(sv.NextAttemptAt) {
			return
		}
		// The compaction, or the retried turn, never started: a failed round.
		msg := fmt.Sprintf("the overflow recovery made no progress in %s", humanSpan(r.p.CompactTimeout))
		n.Failure = sessions.Failure{Kind: sessions.ContextOverflow, Message: msg}
		r.mark(sessions.Errored, "context overflow; "+msg, TimelineStateChanged)
		r.redriveOverflow()

	case RecoveryRateLimit, RecoveryAuth:
		if !r.p.AutoRecover || !r.p.NudgeEnabled {
			r.abandonHold()
			return
		}
		if r.now.Before(sv.NextAttemptAt) {
			return
		}
		limit, wait, kind, what := r.p.RateLimitMaxAttempts, r.p.rateLimitDelay(sv.RecoveryAttempts+1), TimelineRateLimitDrain, "attempts to continue"
		if sv.Recovery == RecoveryAuth {
			limit, wait, kind, what = r.p.AuthMaxAttempts, r.p.AuthRetryInterval, TimelineAuthResume, "resumes after refreshed credentials"
		}
		if sv.RecoveryAttempts >= limit {
			// The last continue had its full countdown to take and did not.
			r.restoreErrored("the last attempt did not take")
			r.escalate(fmt.Sprintf("%d of %d %s spent", sv.RecoveryAttempts, limit, what))
			return
		}
		if sv.IncidentAttempts >= r.p.incidentMaxAttempts() {
			r.restoreErrored("the incident's attempts are spent")
			r.incidentSpent()
			return
		}
		sv.RecoveryAttempts++
		sv.IncidentAttempts++
		// If the continue does not take (the resume failed, the process is
		// gone for good), the hold acts again at NextAttemptAt.
		sv.NextAttemptAt = r.now.Add(wait)
		attempt := fmt.Sprintf("attempt %d/%d", sv.RecoveryAttempts, limit)
		r.note(fmt.Sprintf("continued at %s (%s)", clockPhrase(r.now, r.now), attempt))
		detail := fmt.Sprintf("%s on turn %d; continuing the session (%s)", n.Failure.Kind.Label(), n.TurnGeneration, attempt)
		if sv.Recovery == RecoveryAuth {
			detail = fmt.Sprintf("%s on turn %d; resuming the session with refreshed credentials (%s)", n.Failure.Kind.Label(), n.TurnGeneration, attempt)
		}
		r.act(ActContinue, kind, detail)

	default:
		// Recovering with no turn in flight and no hold of ours behind it
		// (bookkeeping lost, or a stall chain's leftovers): nobody would ever
		// move it. Re-drive it as the failure it carries.
		r.clearRecovery()
		r.restoreErrored("no recovery was in progress")
		if !r.escalated() {
			r.recoverErrored()
		}
	}
}

// abandonHold ends a hold when AutoRecover was switched off mid-way: the
// session goes back to an honest Errored and escalates.
//
// A hold ends in a continue, which is a nudge: either switch turned off
// while it counts down abandons it.
func (r *reconciler) abandonHold() {
	if !r.p.AutoRecover {
		if r.off != "" {
			r.restoreErrored(r.off)
		} else {
			r.restoreErrored("automatic recovery was switched off")
		}
		r.escalate(r.offReason())
		return
	}
	r.restoreErrored("the continuation nudge was switched off")
	r.escalate("the continuation nudge is off")
}

// restoreErrored moves a hold back to Errored with the failure it was holding for.
func (r *reconciler) restoreErrored(why string) {
	n := &r.n
	if n.Failure.Kind == sessions.NoFailure {
		n.Failure = sessions.Failure{Kind: sessions.OtherFailure, Message: n.Failure.Message}
	}
	ev := n.Failure.Kind.Label()
	if n.Failure.Message != "" {
		ev += ": " + n.Failure.Message
	}
	r.mark(sessions.Errored, fmt.Sprintf("turn %d failed (%s); %s", n.TurnGeneration, ev, why), TimelineStateChanged)
}

// nudgeRefused says whether a continuation nudge may be sent now: why
// not (the session is then escalated), or wait (the cooldown runs; the
// last nudge gets its cooldown to take before escalating, so a resume
// that is merely slow is not reported as a failure). One rule for every
// nudge: after an interruption, and a terminal session's stall interrupt.
func (r *reconciler) nudgeRefused() (why string, wait bool) {
	if !r.p.AutoRecover {
		return r.offReason(), false
	}
	if !r.p.NudgeEnabled {
		return "the continuation nudge is off", false
	}
	b, limit := &r.n.Nudge, r.p.NudgeMaxAttempts
	cooled := b.LastNudge.IsZero() || !r.now.Before(b.LastNudge.Add(r.p.NudgeCooldown))
	switch {
	case b.Attempts >= limit && b.Attempts > 0 && !cooled:
		return "", true
	case b.Attempts >= limit && limit <= 0:
		return "the nudge budget is zero", false
	case b.Attempts >= limit:
		return fmt.Sprintf("%d of %d continuation nudges spent", b.Attempts, limit), false
	case !cooled:
		return "", true
	}
	return "", false
}

// recoverInterrupted sends the continuation nudge for a turn that died
// mid-work: at most NudgeMaxAttempts per incident (Apply refills the budget
// when a turn completes), at least NudgeCooldown apart.
func (r *reconciler) recoverInterrupted() {
	n := &r.n
	// Whatever recovery drove the turn that died (a retry, a continue, the
	// stall chain) is over; the nudge takes it from here.
	r.clearRecovery()
	if why, wait := r.nudgeRefused(); wait {
		return
	} else if why != "" {
		r.escalate(why)
		return
	}
	b, limit := &n.Nudge, r.p.NudgeMaxAttempts
	if at := n.Failure.RetryAt; at.After(r.now) {
		// A provider reset is still pending (the agent was rate limited when
		// the turn died): a nudge before it would only fail again.
		return
	}
	b.Attempts++
	b.LastNudge = r.now
	r.changed = true
	next := ""
	if b.Attempts < limit {
		next = "; next nudge not before " + clockPhrase(r.now.Add(r.p.NudgeCooldown), r.now)
	}
	if n.Source != sessions.Managed && !n.ProcessAlive {
		// Only reached with ResumeTerminal (see recover): the nudge goes to
		// a managed resume of the agent's session, one attempt of the same
		// budget, so a resume that keeps failing still ends in escalation.
		r.note(fmt.Sprintf("resume %d/%d in the background at %s%s", b.Attempts, limit, clockPhrase(r.now, r.now),
			strings.Replace(next, "next nudge", "next resume", 1)))
		r.act(ActResume, TimelineBackgroundResume, fmt.Sprintf(
			"turn %d was interrupted (%s); resuming agent session %s in the background as a managed session, with the continuation nudge (%d/%d)",
			n.TurnGeneration, evidenceBase(n.Evidence), n.AgentSessionID, b.Attempts, limit))
		return
	}
	r.note(fmt.Sprintf("nudge %d/%d sent at %s%s", b.Attempts, limit, clockPhrase(r.now, r.now), next))
	r.act(ActNudge, TimelineNudgeSent, fmt.Sprintf("turn %d was interrupted (%s); sending the continuation nudge (%d/%d)",
		n.TurnGeneration, evidenceBase(n.Evidence), b.Attempts, limit))
}

// sharedConversation holds the recovery of a session whose conversation
// another live process runs (SharedWith, set by the tick): a nudge or a
// resume would be a second writer of one agent session. A session that
// runs, or that recovery would have acted on, is escalated once per other
// session; one that ended quietly only records it. It reports whether the
// hold applies.
func (r *reconciler) sharedConversation() bool {
	n := &r.n
	sup := &n.Supervision
	if n.SharedWith == "" {
		if sup.SharedEscalated != "" {
			sup.SharedEscalated = ""
			r.changed = true
			r.observe(TimelineSharedConversation, "no other process runs its conversation now; recovery applies again")
		}
		return false
	}
	if sup.SharedEscalated == n.SharedWith {
		return true
	}
	sup.SharedEscalated = n.SharedWith
	r.changed = true
	what := fmt.Sprintf("session %s runs its conversation (%s session %s) in a process of its own", sessions.ShortID(n.SharedWith), n.Agent, n.AgentSessionID)
	r.observe(TimelineSharedConversation, what+"; neither is resumed or nudged while both run")
	if n.ProcessAlive || n.State == sessions.Interrupted || n.State == sessions.Errored || n.State == sessions.Recovering {
		r.escalate(what + ": two processes on one conversation interleave their turns, so it is not resumed or nudged")
	}
	return true
}

// budgetStop records the budget the session is past, once per budget (and
// day, for what counts by day), escalating it when recovery would matter to
// it: a turn in flight, or a failure or interruption recovery would act on.
// A session at rest records nothing until then, so a daily budget another
// session spent does not escalate every idle one. When no budget stops it
// any more (a new day, a budget raised or switched off), recovery applies
// again and the timeline says so.
func (r *reconciler) budgetStop() {
	n, sv := &r.n, &r.n.Supervision
	if !r.over {
		if sv.BudgetKey != "" {
			was := sv.Budget
			sv.BudgetKey, sv.Budget = "", ""
			r.changed = true
			r.observe(TimelineBudgetCleared, "no budget stops it now (it was: "+was+"); recovery applies again")
		}
		return
	}
	key := r.hit.Key(r.now)
	if sv.BudgetKey == key {
		return
	}
	atRest := !n.InTurn && n.State != sessions.Errored && n.State != sessions.Interrupted && n.State != sessions.Recovering
	if atRest && sv.BudgetKey == "" {
		return
	}
	sv.BudgetKey, sv.Budget = key, r.hit.String()
	r.changed = true
	r.observe(TimelineBudgetReached, sv.Budget+"; it is not recovered automatically while the budget is spent")
	if atRest {
		// Stopped before, at rest now, and past a budget again (a new
		// day): what it shows is what stops it now, with no news to
		// escalate.
		return
	}
	r.escalate(sv.Budget + ", so it is not recovered automatically")
}

// escalate raises needs-attention once per incident (a turn generation). The
// state is left exactly as it is — honestly Errored, Interrupted, Suspect —
// never dressed up as Idle.
func (r *reconciler) escalate(reason string) {
	n := &r.n
	if r.escalated() {
		return
	}
	if n.Supervision.Recovery != RecoveryStall && n.Supervision.Recovery != RecoveryUserStop {
		if n.State == sessions.Recovering && !n.InTurn {
			// A hold of ours ends here. Left Recovering, it would claim a
			// recovery nothing drives any more (held for as long as another
			// process runs its conversation, or until a tick repairs it):
			// it is the failure it was holding for.
			r.restoreErrored("its recovery stops here")
		}
		// Escalation ends automatic recovery for the incident: a leftover
		// hold or compaction marker must not act after the user acknowledges.
		// (The signal chains keep their final step so they never restart.)
		r.clearRecovery()
	}
	base := evidenceBase(n.Evidence)
	n.NeedsAttention = true
	n.Supervision.EscalatedGeneration = n.TurnGeneration
	r.changed = true
	r.note(reason + "; needs your attention")
	if base == "" {
		// A state that arrived with no evidence (a source's observation
		// that carried none, old data): no empty clause before the reason.
		r.act(ActEscalate, TimelineEscalated, fmt.Sprintf("%s: %s, so nothing automatic is left", n.State.Label(), reason))
		return
	}
	r.act(ActEscalate, TimelineEscalated, fmt.Sprintf("%s: %s; %s, so nothing automatic is left", n.State.Label(), base, reason))
}

func (r *reconciler) escalated() bool {
	return r.n.NeedsAttention && r.n.Supervision.EscalatedGeneration == r.n.TurnGeneration
}

// --- small helpers ---

// mark changes the state and records the change as one observation of kind.
func (r *reconciler) mark(st sessions.State, evidence, kind string) {
	from := r.n.State
	r.transition(st, evidence)
	detail := evidence
	if kind == TimelineStateChanged {
		detail = from.Label() + " → " + st.Label() + ": " + evidence
	}
	r.obs = append(r.obs, Observation{Kind: kind, Detail: detail, From: from, To: st})
}

func (r *reconciler) transition(st sessions.State, evidence string) {
	if r.n.State != st {
		r.n.StateChangedAt = r.now
	}
	r.n.State = st
	r.n.Evidence = evidence
	r.changed = true
}

func (r *reconciler) observe(kind, detail string) {
	r.obs = append(r.obs, Observation{Kind: kind, Detail: detail})
}

func (r *reconciler) act(kind ActionKind, timeline, detail string) {
	if r.probe.Unreachable && r.n.Source != sessions.Managed && (kind == ActNudge || kind == ActContinue || kind == ActInterrupt) {
		// Nothing can be delivered: tell the user what would have been.
		r.escalate(fmt.Sprintf("the %s it needs cannot reach it: the terminal it runs in offers no way in", kind))
		return
	}
	r.acts = append(r.acts, Action{
		Kind: kind, SessionID: r.n.ID, TurnGeneration: r.n.TurnGeneration,
		TimelineKind: timeline, Detail: detail,
	})
	r.changed = true
}

// noteSep separates the state's evidence from the supervisor's latest note
// about it ("…; turn 3 was in flight — nudge 1/2 sent at 09:00:00"). A new
// note replaces the previous one, so evidence never grows tick after tick.
const noteSep = " — "

func (r *reconciler) note(note string) {
	base := evidenceBase(r.n.Evidence)
	if base == "" {
		r.n.Evidence = note
	} else {
		r.n.Evidence = base + noteSep + note
	}
	r.changed = true
}

func evidenceBase(evidence string) string {
	base, _, _ := strings.Cut(evidence, noteSep)
	return base
}

// startIncident starts a recovery of a new kind. The incident's shared
// budget carries over: a turn that alternates failure kinds is still one
// incident.
func (r *reconciler) startIncident(recovery string) {
	sv := r.n.Supervision
	r.n.Supervision = lasting(sv)
	r.n.Supervision.Recovery = recovery
	r.changed = true
}

// lasting is what outlives a recovery: the once-only escalation marks
// (EscalatedGeneration, and SharedEscalated for a shared conversation),
// the incident's spent attempts (only a clean end refills them) and the
// budget reached.
func lasting(sv sessions.Supervision) sessions.Supervision {
	return sessions.Supervision{EscalatedGeneration: sv.EscalatedGeneration, IncidentAttempts: sv.IncidentAttempts,
		BudgetKey: sv.BudgetKey, Budget: sv.Budget, SharedEscalated: sv.SharedEscalated}
}

// clearRecovery forgets the current recovery, keeping what lasts.
func (r *reconciler) clearRecovery() {
	sv := &r.n.Supervision
	if sv.Recovery == "" && sv.RecoveryAttempts == 0 && sv.NextAttemptAt.IsZero() && sv.InterruptSentAt.IsZero() {
		return
	}
	*sv = lasting(*sv)
	r.changed = true
}

// endIncident is the clean end of an incident: every budget is refilled.
func (r *reconciler) endIncident() {
	r.clearRecovery()
	if r.n.Supervision.IncidentAttempts != 0 {
		r.n.Supervision.IncidentAttempts = 0
		r.changed = true
	}
}

// incidentSpent escalates, and reports true, when the incident has used its
// one budget of automatic attempts, whatever kinds of failure spent it.
func (r *reconciler) incidentSpent() bool {
	sv, limit := &r.n.Supervision, r.p.incidentMaxAttempts()
	if sv.IncidentAttempts < limit {
		return false
	}
	r.escalate(fmt.Sprintf("%d of %d automatic attempts for this incident spent", sv.IncidentAttempts, limit))
	return true
}

// suspectEvidence: "12 min silent, Bash open, pid 4242 alive".
func (r *reconciler) suspectEvidence(silent time.Duration, since string) string {
	var b strings.Builder
	b.WriteString(humanSpan(silent))
	b.WriteString(" silent")
	b.WriteString(since)
	if c, ok := r.n.OldestOpenCall(); ok {
		b.WriteString(", ")
		b.WriteString(orText(c.Name, "a tool"))
		b.WriteString(" open")
	}
	b.WriteString(", ")
	if r.n.PID > 0 {
		fmt.Fprintf(&b, "pid %d", r.n.PID)
	} else {
		b.WriteString("agent process")
	}
	switch {
	case !r.probe.Known:
		b.WriteString(" not probed")
	case r.probe.Alive:
		b.WriteString(" alive")
	default:
		b.WriteString(" gone")
	}
	return b.String()
}

func openCallPhrase(n *sessions.Session) string {
	if c, ok := n.OldestOpenCall(); ok {
		return " with " + orText(c.Name, "a tool") + " open"
	}
	return ""
}

// quietSince is when the silence began: the last genuine stream event (the
// turn's start if there was none yet). A retry time the agent announced
// itself is not silence, so it counts as activity while the turn is in flight.
func quietSince(n *sessions.Session) time.Time {
	t := n.LastEventAt
	if t.IsZero() {
		t = n.TurnStarted
	}
	if t.IsZero() {
		t = n.StateChangedAt
	}
	if n.InTurn && n.Failure.RetryAt.After(t) {
		t = n.Failure.RetryAt
	}
	return t
}

// atCleanRest: no turn in flight, no failure, and either idle or a finished
// turn awaiting review — the end of an incident.
func atCleanRest(n *sessions.Session) bool {
	if n.InTurn || !n.Failure.IsZero() {
		return false
	}
	return n.State == sessions.Idle || n.State == sessions.WaitingOnUser && n.WaitReason == sessions.WaitReview
}

// compactionDone reports whether the compaction the supervisor sent for an
// overflow has finished: no turn in flight and back at a review or at Idle.
// The failure is not consulted — a compaction that ran outside a turn ends
// at Idle with the original overflow still recorded (Apply clears it only
// when a turn starts), and a failed one lands in Errored instead.
func compactionDone(n *sessions.Session) bool {
	return n.Supervision.Recovery == RecoveryOverflow && !n.InTurn &&
		(n.State == sessions.Idle || n.State == sessions.WaitingOnUser && n.WaitReason == sessions.WaitReview)
}

// endTurn mirrors sessions' own end-of-turn bookkeeping for the turns
// Reconcile ends (liveness, compaction timeout).
func endTurn(n *sessions.Session) {
	n.InTurn = false
	n.TurnAcked = false
	n.OpenTools, n.OpenTasks = nil, nil
	n.CompactionStarted = time.Time{}
	n.Permissions, n.Permission = nil, nil
	n.InterruptBy, n.InterruptAt = nil, time.Time{}
	n.WaitReason = sessions.NoWait
}

func fallbackEvidence(n sessions.Session) string {
	switch n.State {
	case sessions.Idle:
		return "nothing in flight"
	case sessions.Working:
		return fmt.Sprintf("turn %d in flight", n.TurnGeneration)
	}
	return n.State.Label() + " (no evidence was recorded)"
}

// humanSpan: "45 s", "12 min", "3 h 5 min".
func humanSpan(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < time.Minute:
		return fmt.Sprintf("%d s", int64(d/time.Second))
	case d < 3*time.Hour:
		return fmt.Sprintf("%d min", int64(d/time.Minute))
	}
	h, m := int64(d/time.Hour), int64(d%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

// clockPhrase formats t for evidence: the time of day when t falls on the
// same day as now (in now's location), the full date and time otherwise.
func clockPhrase(t, now time.Time) string {
	t = t.In(now.Location())
	ty, tm, td := t.Date()
	ny, nm, nd := now.Date()
	if ty == ny && tm == nm && td == nd {
		return t.Format(time.TimeOnly)
	}
	return t.Format(time.DateTime)
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// HumanSpan is how every sentence of the supervisor says a duration: "45 s",
// "12 min", "3 h 5 min".
func HumanSpan(d time.Duration) string { return humanSpan(d) }

// ClockPhrase is how the supervisor's sentences give a time: the time of
// day when it falls on now's day, the full date and time otherwise.
func ClockPhrase(t, now time.Time) string { return clockPhrase(t, now) }
