package sessions

import (
	"fmt"
	"slices"
	"time"
)

// Apply is the pure reducer for stream evidence: it returns the session after
// event e observed at now. It never mutates s, does no I/O, and every state it
// sets carries an evidence sentence. It is the only code that changes a
// session's state from stream evidence (time and probes are supervisor.Reconcile's).
func Apply(s Session, e Event, now time.Time) Session {
	n := s.Clone()
	n.UpdatedAt = now
	// Whatever happens to an archived session (the user's prompt, its
	// process found again) brings it back to the lists.
	n.ArchivedAt = time.Time{}
	if len(n.Permissions) == 0 && n.Permission != nil {
		// Stored by a build that kept a single request: it is the list.
		n.Permissions = []Permission{*n.Permission}
	}
	if e.AgentSessionID != "" {
		n.AgentSessionID = e.AgentSessionID
	}
	if e.Kind.Genuine() {
		n.LastEventAt = now
	}
	if e.Kind.fromAgent() {
		n.ProcessSpoke = true
	}

	switch e.Kind {
	case EvProcessStarted:
		n.PID = e.PID
		n.PIDStart = e.PIDStart
		n.ProcessAlive = true
		n.LastExitCode = nil
		n.ProcessSpoke = false
		n.PromptQueued = false // a prompt written to the old process died with it
		if n.State == Idle {
			setState(&n, Idle, fmt.Sprintf("agent process %d started; no turn yet", e.PID), now)
		}

	case EvSessionInit:
		if !n.InTurn && n.PromptQueued {
			// A prompt sent as the last turn ended was not injected into it:
			// the agent started a turn of its own with it (Claude prints
			// init at the start of every turn). Supervise that turn.
			startTurn(&n, now)
			n.TurnAcked = true
			setState(&n, Working, fmt.Sprintf("turn %d started by a prompt sent as the previous turn ended", n.TurnGeneration), now)
			break
		}
		if n.InTurn {
			n.TurnAcked = true
		}
		resumeWorking(&n, orDefault(e.Detail, "stream active"), now)

	case EvActivity:
		resumeWorking(&n, orDefault(e.Detail, "stream active"), now)

	case EvPromptAdded:
		// The app's own prompt is not a sign of life: the stall clock and
		// the state stay as they are.
		if n.InTurn {
			n.PromptQueued = true
		}

	case EvMetrics, EvUnknown:
		// Usage counters are not activity: the stall clock stays where it was.

	case EvToolStarted:
		if n.InTurn {
			n.TurnTools++
			n.OpenTools = withCall(n.OpenTools, e.CallID, e.Name, now)
		}
		resumeWorking(&n, fmt.Sprintf("running %s", orDefault(e.Name, "a tool")), now)

	case EvToolFinished:
		name := callName(n.OpenTools, e.CallID, e.Name)
		delete(n.OpenTools, e.CallID)
		resumeWorking(&n, fmt.Sprintf("%s finished", orDefault(name, "tool")), now)

	case EvTaskStarted:
		if n.InTurn {
			n.OpenTasks = withCall(n.OpenTasks, e.CallID, e.Name, now)
		}
		resumeWorking(&n, fmt.Sprintf("background task %s started", orDefault(e.Name, e.CallID)), now)

	case EvTaskFinished:
		name := callName(n.OpenTasks, e.CallID, e.Name)
		delete(n.OpenTasks, e.CallID)
		resumeWorking(&n, fmt.Sprintf("background task %s finished", orDefault(name, e.CallID)), now)

	case EvTurnStarted:
		if e.By == ByUser {
			// A turn the user starts is a fresh start, not the incident
			// the nudges were spent on: the budget is refilled.
			n.Nudge = NudgeBudget{}
		}
		startTurn(&n, now)
		setState(&n, Working, fmt.Sprintf("turn %d started by the %s", n.TurnGeneration, e.By), now)

	case EvCompactionStarted:
		// Claude repeats status "compacting" every ~30 s: keep the first start
		// time, or a stuck compaction would never time out.
		if n.State != Compacting || n.CompactionStarted.IsZero() {
			n.CompactionStarted = now
		}
		setState(&n, Compacting, "compacting the context", now)

	case EvCompactionFinished:
		n.CompactionStarted = time.Time{}
		if n.InTurn {
			n.Failure = Failure{}
		}
		switch {
		case e.OK && n.InTurn:
			setState(&n, Working, "compaction finished; turn continues", now)
		case e.OK:
			setState(&n, Idle, "compaction finished", now)
		case n.InTurn:
			setState(&n, Working, fmt.Sprintf("compaction failed (%s); turn continues", orDefault(e.Detail, "no reason given")), now)
		default:
			n.Failure = Failure{Kind: ContextOverflow, Message: SanitizeMessage("compaction failed: " + orDefault(e.Detail, "no reason given"))}
			setState(&n, Errored, n.Failure.Message, now)
		}

	case EvWaitingOnUser:
		// Every open request is kept: a second one (a parallel tool, a
		// subagent) adds to the first rather than replacing it.
		if e.Permission != nil {
			n.Permissions = withPermission(n.Permissions, *e.Permission)
		}
		n.WaitReason = e.Reason
		ev := waitEvidence(e)
		if e.Permission != nil && len(n.Permissions) > 1 {
			ev = permissionEvidence(n.Permissions)
		}
		setState(&n, WaitingOnUser, ev, now)

	case EvUserAnswered:
		if n.State != WaitingOnUser || n.WaitReason == WaitReview {
			// Nothing was waiting for an answer: treat it as plain activity
			// so a late answer cannot hide an error or a pending review.
			// It is no sign that a compaction ended either.
			n.Permissions = withoutPermission(n.Permissions, e.Permission)
			if n.State != Compacting {
				resumeWorking(&n, orDefault(e.Detail, "answered; turn continues"), now)
			}
			break
		}
		if e.Permission != nil && e.Permission.RequestID != "" && !slices.ContainsFunc(n.Permissions, samePermission(*e.Permission)) {
			// An answer to, or a withdrawal of, a request nobody is waiting
			// on: whatever else is open stays open.
			resumeWorking(&n, orDefault(e.Detail, "answered; turn continues"), now)
			break
		}
		n.Permissions = withoutPermission(n.Permissions, e.Permission)
		n.WaitReason = NoWait
		if len(n.Permissions) > 0 {
			n.WaitReason = WaitPermission
			setState(&n, WaitingOnUser, fmt.Sprintf("%s; %s", orDefault(e.Detail, "answered"), permissionEvidence(n.Permissions)), now)
			break
		}
		if n.InTurn {
			setState(&n, Working, orDefault(e.Detail, "answered; turn continues"), now)
		} else {
			setState(&n, Idle, orDefault(e.Detail, "answered"), now)
		}

	case EvRetryScheduled:
		n.Failure = Failure{
			Kind:    retryFailureKind(e),
			RetryAt: now.Add(e.Delay),
			Message: SanitizeMessage(e.Failure.Message),
		}
		setState(&n, Recovering, retryEvidence(e, n.Failure), now)

	case EvTurnCompleted:
		if !n.InTurn && (n.State == Errored || n.State == Recovering) {
			// A late completion must not overwrite a terminal failure or the
			// supervisor's hold on one.
			break
		}
		recordTurn(&n, now)
		endTurn(&n)
		n.Failure = Failure{}
		n.Nudge = NudgeBudget{} // a completed turn refills the nudge budget
		n.WaitReason = WaitReview
		setState(&n, WaitingOnUser, fmt.Sprintf("turn %d completed; waiting for review", n.TurnGeneration), now)

	case EvTurnFailed:
		f := e.Failure
		f.Message = SanitizeMessage(f.Message)
		if e.Delay > 0 {
			// The agent reported the failure but is retrying on its own: the
			// turn is still in flight and recovering, with a countdown.
			f.RetryAt = now.Add(e.Delay)
			n.Failure = f
			setState(&n, Recovering, fmt.Sprintf("%s; the agent retries at %s", failureEvidence(f), f.RetryAt.Format(time.TimeOnly)), now)
			break
		}
		endTurn(&n)
		n.Failure = f
		setState(&n, Errored, fmt.Sprintf("turn %d failed: %s", n.TurnGeneration, failureEvidence(f)), now)

	case EvInterruptRequested:
		if n.StoppedByUser() {
			// The user's stop wins: a stall interrupt that follows it must
			// not turn it into a nudgeable interruption.
			break
		}
		by := e.By
		n.InterruptBy = &by
		n.InterruptAt = now

	case EvTurnAborted:
		if !n.InTurn && holdsAfterTurn(n) {
			break // a late abort must not turn a failure or a review into a nudgeable interruption
		}
		by := n.InterruptBy
		endTurn(&n)
		switch {
		case by != nil && *by == ByUser:
			n.WaitReason = WaitReview
			setState(&n, WaitingOnUser, fmt.Sprintf("turn %d stopped at your request; waiting for review", n.TurnGeneration), now)
		case by != nil && *by == BySupervisor:
			setState(&n, Interrupted, fmt.Sprintf("turn %d interrupted by the supervisor after a stall", n.TurnGeneration), now)
		default:
			setState(&n, Interrupted, fmt.Sprintf("turn %d aborted by the agent (%s)", n.TurnGeneration, orDefault(e.Detail, "no reason given")), now)
		}

	case EvIdle:
		switch {
		case n.InTurn && !n.TurnAcked:
			// The agent has not announced this turn yet: the idle is the
			// previous turn's, arriving after the next prompt was sent.
		case n.InTurn && len(n.OpenTasks) > 0:
			// Background tasks still run: the turn is not over, whatever
			// the agent's foreground says. Stall rules keep watching it.
			if n.State == Working {
				c, _ := oldestCall(n.OpenTasks)
				setState(&n, Working, fmt.Sprintf("agent idle; background task %s still running", orDefault(c.Name, "a task")), now)
			}
		case n.InTurn:
			endTurn(&n)
			n.WaitReason = WaitReview
			setState(&n, WaitingOnUser, fmt.Sprintf("turn %d ended (agent idle); waiting for review", n.TurnGeneration), now)
		case holdsAfterTurn(n):
			// A terminal failure, an interruption or a pending review is not
			// overwritten by a later idle signal.
		default:
			setState(&n, Idle, "agent idle", now)
		}

	case EvAcknowledged:
		escalated := n.NeedsAttention
		n.NeedsAttention = false
		if n.InTurn && n.State == Suspect && escalated {
			// The supervisor gave up on this stalled turn and told the user;
			// acknowledging it gives the turn up too, or nothing would ever
			// move the session again.
			gen := n.TurnGeneration
			endTurn(&n)
			setState(&n, Idle, fmt.Sprintf("acknowledged (Suspect); stalled turn %d given up", gen), now)
			break
		}
		if !n.InTurn && n.State == Recovering {
			// The supervisor holds the session for a recovery (a rate
			// limit's reset, an auth retry): the user's acknowledgement
			// takes it over, so the recovery stops, and the evidence says
			// so. Supervision is Reconcile's: at Idle with no failure it
			// ends the incident at its next look, before any recovery.
			what := orDefault(n.Supervision.Recovery, "pending")
			n.Failure = Failure{}
			n.Nudge = NudgeBudget{}
			setState(&n, Idle, fmt.Sprintf("acknowledged (Recovering); the %s recovery stopped", what), now)
			break
		}
		if !n.InTurn && (n.State == WaitingOnUser && n.WaitReason == WaitReview || n.State == Errored || n.State == Interrupted) {
			prev := n.State
			n.WaitReason = NoWait
			n.Failure = Failure{}
			n.Nudge = NudgeBudget{}
			// Detail, when set, says how it was settled ("resumed in the
			// background as session …").
			setState(&n, Idle, orDefault(e.Detail, fmt.Sprintf("acknowledged (%s)", prev.Label())), now)
		}

	case EvObserved:
		applyObserved(&n, e.Observed, now)

	case EvProcessExited, EvSessionEnded:
		n.ProcessAlive = false
		if e.Kind == EvProcessExited {
			code := e.ExitCode
			n.LastExitCode = &code
		}
		how := exitPhrase(e)
		switch {
		case n.InTurn && n.StoppedByUser():
			gen := n.TurnGeneration
			endTurn(&n)
			n.WaitReason = WaitReview
			setState(&n, WaitingOnUser, fmt.Sprintf("turn %d stopped at your request (%s); waiting for review", gen, how), now)
		case n.InTurn && e.Kind == EvProcessExited && !s.ProcessSpoke:
			// The process printed nothing before it died: the turn never
			// started, and a nudge would only fail the same way.
			gen := n.TurnGeneration
			endTurn(&n)
			n.Failure = Failure{Kind: Launch, Message: SanitizeMessage(how)}
			setState(&n, Errored, fmt.Sprintf("the agent failed to start turn %d: %s", gen, n.Failure.Message), now)
		case n.InTurn:
			gen := n.TurnGeneration
			endTurn(&n)
			setState(&n, Interrupted, fmt.Sprintf("%s during turn %d", how, gen), now)
		case holdsAfterTurn(n):
			n.Evidence = appendOnce(n.Evidence, how)
		case e.Kind == EvProcessExited && !s.ProcessSpoke && (e.ExitCode != 0 || e.Signal != ""):
			// It died before its first prompt even reached it (the prompt
			// could not be written): the same launch failure.
			n.Failure = Failure{Kind: Launch, Message: SanitizeMessage(how)}
			setState(&n, Errored, "the agent failed to start: "+n.Failure.Message, now)
		default:
			setState(&n, Idle, how+"; session closed", now)
		}
	}
	syncPermission(&n)
	// After the switch: a turn that starts with this event has its turn
	// usage reset first, then this report counts into it.
	if e.Usage != nil {
		n.Usage = applyUsage(n.Usage, *e.Usage)
	}
	if e.Todos != nil {
		applyTodos(&n, *e.Todos, now)
	}
	if e.RateWindow != nil {
		applyRateWindow(&n, *e.RateWindow, now)
	}
	return n
}

// resumeWorking applies genuine activity: a turn in flight that was Suspect,
// held by the agent's own retry, or waiting on a question that has since been
// answered is Working again. Compacting, a finished turn and terminal states
// are left alone.
func resumeWorking(n *Session, evidence string, now time.Time) {
	if !n.InTurn {
		return
	}
	switch n.State {
	case Working, Idle:
	case Suspect:
		// The stalled turn spoke again: whatever the supervisor escalated
		// about it is over.
		n.NeedsAttention = false
	case Compacting:
		// Ordinary activity after a compaction started means it finished
		// (its own end line can be missing).
		n.CompactionStarted = time.Time{}
	case Recovering:
		n.Failure = Failure{}
	case WaitingOnUser:
		n.WaitReason = NoWait
	default:
		return
	}
	setState(n, Working, evidence, now)
}

// startTurn is the bookkeeping of a new turn: a new generation, and nothing
// of the previous turn carried over.
func startTurn(n *Session, now time.Time) {
	n.TurnGeneration++
	n.InTurn = true
	n.TurnStarted = now
	n.TurnAcked = false
	n.PromptQueued = false
	n.Failure = Failure{}
	n.WaitReason = NoWait
	n.Permissions = nil
	n.InterruptBy, n.InterruptAt = nil, time.Time{}
	n.OpenTools, n.OpenTasks = nil, nil
	n.CompactionStarted = time.Time{}
	n.NeedsAttention = false
	n.Usage.Turn = nil
	n.TurnTools = 0
}

func endTurn(n *Session) {
	n.InTurn = false
	n.TurnAcked = false
	n.OpenTools, n.OpenTasks = nil, nil
	n.CompactionStarted = time.Time{}
	n.Permissions = nil
	n.InterruptBy, n.InterruptAt = nil, time.Time{}
	n.WaitReason = NoWait
}

// syncPermission keeps Permission, the JSON contract's single request, equal
// to the oldest open one.
func syncPermission(n *Session) {
	if len(n.Permissions) == 0 {
		n.Permissions, n.Permission = nil, nil
		return
	}
	p := n.Permissions[0]
	n.Permission = &p
}

func samePermission(p Permission) func(Permission) bool {
	return func(q Permission) bool { return q.RequestID == p.RequestID }
}

// withPermission adds p to the open requests, once per request id.
func withPermission(ps []Permission, p Permission) []Permission {
	if p.RequestID != "" {
		if i := slices.IndexFunc(ps, samePermission(p)); i >= 0 {
			ps[i] = p
			return ps
		}
	}
	return append(ps, p)
}

// withoutPermission removes the request answered or withdrawn: the one
// named, or the oldest when the answer names none (approve/deny answers the
// oldest).
func withoutPermission(ps []Permission, p *Permission) []Permission {
	if len(ps) == 0 {
		return ps
	}
	if p == nil || p.RequestID == "" {
		return ps[1:]
	}
	return slices.DeleteFunc(ps, samePermission(*p))
}

func permissionEvidence(ps []Permission) string {
	tool := orDefault(ps[0].Tool, "a tool")
	if len(ps) == 1 {
		return fmt.Sprintf("the agent asks permission to use %s", tool)
	}
	return fmt.Sprintf("the agent asks permission to use %s (%d requests open)", tool, len(ps))
}

func oldestCall(m map[string]OpenCall) (OpenCall, bool) {
	var best OpenCall
	found := false
	for _, c := range m {
		if !found || c.Started.Before(best.Started) {
			best, found = c, true
		}
	}
	return best, found
}

// holdsAfterTurn reports whether a session with no turn in flight is in a
// state that later idle or exit signals must not overwrite.
func holdsAfterTurn(n Session) bool {
	switch n.State {
	case Errored, Interrupted, Recovering:
		return true
	case WaitingOnUser:
		return n.WaitReason == WaitReview
	}
	return false
}

func setState(n *Session, st State, evidence string, now time.Time) {
	switch st {
	case Working, Compacting, Recovering, Suspect:
		if len(n.Permissions) > 0 {
			// Other work of the turn (a parallel tool, a subagent, a status
			// line) does not answer an open permission request: the agent
			// still waits on it, and so does the session.
			st, evidence = WaitingOnUser, permissionEvidence(n.Permissions)
			n.WaitReason = WaitPermission
		}
	case Idle, Errored, Interrupted:
		// Nothing is left to ask permission for.
		n.Permissions = nil
	}
	if st != WaitingOnUser {
		// Only a waiting session waits for something. Open permission
		// requests stay until answered, withdrawn or the turn ends.
		n.WaitReason = NoWait
	}
	if n.State != st {
		n.StateChangedAt = now
	}
	n.State = st
	n.Evidence = evidence
}

func withCall(m map[string]OpenCall, id, name string, now time.Time) map[string]OpenCall {
	if m == nil {
		m = map[string]OpenCall{}
	}
	if id == "" {
		id = name
	}
	m[id] = OpenCall{Name: name, Started: now}
	return m
}

func callName(m map[string]OpenCall, id, fallback string) string {
	if c, ok := m[id]; ok && c.Name != "" {
		return c.Name
	}
	return fallback
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func appendOnce(evidence, more string) string {
	if evidence == "" {
		return more
	}
	if len(evidence) >= len(more) && evidence[len(evidence)-len(more):] == more {
		return evidence
	}
	return evidence + "; " + more
}

func exitPhrase(e Event) string {
	if e.Kind == EvSessionEnded {
		return orDefault(e.Detail, "session ended")
	}
	how := fmt.Sprintf("process exited with code %d", e.ExitCode)
	if e.Signal != "" {
		how = fmt.Sprintf("process exited by signal %s", e.Signal)
	}
	if e.Stderr != "" {
		how += ": " + SanitizeMessage(e.Stderr)
	}
	return how
}

func waitEvidence(e Event) string {
	switch e.Reason {
	case WaitQuestion:
		return "the agent asks you a question"
	case WaitPlan:
		return "the agent waits for you to approve its plan"
	case WaitPermission:
		tool := "a tool"
		if e.Permission != nil && e.Permission.Tool != "" {
			tool = e.Permission.Tool
		}
		return fmt.Sprintf("the agent asks permission to use %s", tool)
	case WaitReview:
		return "waiting for review"
	}
	return "waiting on you"
}

// retryFailureKind classifies an agent retry from its HTTP status when the
// adapter did not already.
func retryFailureKind(e Event) FailureKind {
	if e.Failure.Kind != NoFailure {
		return e.Failure.Kind
	}
	return KindFromStatus(e.Status)
}

// KindFromStatus maps a provider HTTP status to a failure kind.
func KindFromStatus(status int) FailureKind {
	switch {
	case status == 429:
		return RateLimit
	case status == 529 || status == 503:
		return Overloaded
	case status == 401 || status == 403:
		return Auth
	case status == 402:
		return Billing
	case status == 413:
		return ContextOverflow
	case status >= 500 && status <= 599:
		return Network
	}
	return OtherFailure
}

func retryEvidence(e Event, f Failure) string {
	attempt := fmt.Sprintf("%d", e.Attempt)
	if e.MaxAttempts > 0 {
		attempt = fmt.Sprintf("%d/%d", e.Attempt, e.MaxAttempts)
	}
	status := ""
	if e.Status != 0 {
		status = fmt.Sprintf(" after %d", e.Status)
	}
	return fmt.Sprintf("agent retry %s%s (%s); next attempt at %s", attempt, status, f.Kind.Label(), f.RetryAt.Format(time.TimeOnly))
}

func failureEvidence(f Failure) string {
	s := f.Kind.Label()
	if f.Message != "" {
		s += ": " + f.Message
	}
	if !f.RetryAt.IsZero() {
		s += fmt.Sprintf(" (resets at %s)", f.RetryAt.Format(time.DateTime))
	}
	return s
}

// applyObserved takes an external source's inferred state as-is. The turn
// bookkeeping follows it: every turn the source counted (NewTurns) begins a
// new generation (so actions decided for the previous turn go stale), a
// turn it sees end is ended. The supervisor's own hold on a failure it already
// handles (Recovering with no turn in flight, for the same kind of failure)
// is not undone by the source repeating that failure.
func applyObserved(n *Session, o *ObservedState, now time.Time) {
	if o == nil || !o.State.Valid() {
		return
	}
	if o.Name != "" {
		n.Name = o.Name
	}
	if o.Hooked && n.Source == Observed {
		n.Source = Hooked
	}
	// Who asked to stop the turn in flight; ending the turn forgets it.
	by, wasInTurn := n.InterruptBy, n.InTurn
	switch {
	case o.NewTurns > 0:
		// Every turn the source saw start is a generation, even one that
		// already ended; the one in flight (if any) is the last.
		if n.InTurn {
			endTurn(n)
		}
		n.TurnGeneration += int64(o.NewTurns - 1)
		startTurn(n, now)
		n.TurnAcked = true
		if !o.InTurn {
			endTurn(n)
		}
	case o.InTurn && !n.InTurn:
		// The source counts turns (NewTurns); this is the turn it already
		// counted, seen in flight again (its status flipped back and forth
		// before its prompt was written).
		n.InTurn, n.TurnAcked = true, true
		if n.TurnStarted.IsZero() {
			n.TurnStarted = now
		}
	case !o.InTurn && n.InTurn:
		if o.Failure.IsZero() && !o.Aborted && (o.State == WaitingOnUser || o.State == Idle) {
			// A turn seen finishing cleanly is a duration the estimate can use.
			recordTurn(n, now)
		}
		endTurn(n)
	}
	if !o.InTurn && n.State == Recovering && o.State == Errored && o.Failure.Kind == n.Failure.Kind {
		return
	}
	if !o.InTurn && o.State == n.State && (o.State == Interrupted || o.State == Errored) && n.NeedsAttention {
		// The same incident, seen again: its escalation stands.
		return
	}
	if o.Aborted && !o.InTurn && o.NewTurns == 0 {
		switch {
		case wasInTurn && by != nil && *by == BySupervisor:
			// The supervisor's own interrupt (a terminal session's hard
			// stall, sent through its inbox): the agent writes it as the
			// user's stop, but it is not one. Interrupted, as a managed
			// session's aborted turn is, so the recovery rules nudge or
			// escalate it; never a review, and the nudge budget the
			// interrupt spent is not refilled.
			n.OpenTools, n.Failure, n.WaitReason = nil, Failure{}, NoWait
			setState(n, Interrupted, fmt.Sprintf("turn %d interrupted by the supervisor after a stall (the agent records it as the user's interrupt)", n.TurnGeneration), now)
			return
		case !wasInTurn && n.State == Interrupted:
			// That interrupt, seen again (the transcript grew, the status
			// changed): it stays the supervisor's.
			return
		}
	}
	switch {
	case o.Tool != "" && n.InTurn:
		if callName(n.OpenTools, "observed", "") != o.Tool {
			// A new tool: its clock (the tool stall threshold) starts now.
			n.OpenTools = withCall(nil, "observed", o.Tool, now)
			n.TurnTools++ // at least this one: quick calls between two reads go unseen
		}
	default:
		n.OpenTools = nil
	}
	if o.State == WaitingOnUser && o.Wait == WaitReview && !o.InTurn {
		// A turn that ended refills the nudge budget, as a completion does.
		n.Nudge = NudgeBudget{}
	}
	n.Failure = o.Failure
	n.Failure.Message = SanitizeMessage(n.Failure.Message)
	// A terminal session's only request is the dialog its source sees now
	// (set before the state: setState keeps a session with a request open
	// waiting on it).
	n.Permissions = nil
	if o.State == WaitingOnUser && o.Wait == WaitPermission && o.Permission != nil {
		n.Permissions = []Permission{{Tool: SanitizeMessage(o.Permission.Tool), Input: o.Permission.Input}}
	}
	setState(n, o.State, SanitizeMessage(o.Evidence), now)
	n.WaitReason = NoWait
	if o.State == WaitingOnUser {
		n.WaitReason = o.Wait
	}
}

// InterruptCause is why a session became Interrupted, for the
// marked_interrupted row every such change leaves.
type InterruptCause string

// The causes.
const (
	NoInterruptCause InterruptCause = ""
	// CauseExitEvent: the agent's process exited mid-turn (its exit event).
	CauseExitEvent InterruptCause = "exit_event"
	// CauseAbort: the turn was aborted (the agent's abort, the stall
	// interrupt taking).
	CauseAbort InterruptCause = "abort"
	// CauseObservedDeath: a terminal session's source saw its process gone.
	CauseObservedDeath InterruptCause = "observed_death"
	// CauseProbe: the tick's liveness probe found the process gone.
	CauseProbe InterruptCause = "probe"
	// CauseBoot: the turn was in flight when the app stopped.
	CauseBoot InterruptCause = "boot"
	// CauseEvent: any other stream evidence.
	CauseEvent InterruptCause = "event"
)

func (c InterruptCause) String() string { return string(c) }

// InterruptCauseOf is the cause of the change from prev to next that event e
// made, when it is a change into Interrupted; NoInterruptCause otherwise.
func InterruptCauseOf(prev, next Session, e Event) InterruptCause {
	if prev.State == Interrupted || next.State != Interrupted {
		return NoInterruptCause
	}
	switch e.Kind {
	case EvProcessExited, EvSessionEnded:
		return CauseExitEvent
	case EvTurnAborted:
		return CauseAbort
	case EvObserved:
		if e.Observed != nil && e.Observed.Aborted {
			return CauseAbort // the supervisor's interrupt of a terminal turn
		}
		return CauseObservedDeath
	}
	return CauseEvent
}
