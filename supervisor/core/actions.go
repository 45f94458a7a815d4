package core

import (
	"fmt"

	"github.com/session-supervisor/session-supervisor/enum"
	"github.com/session-supervisor/session-supervisor/sessions"
)

// NudgeText is the continuation nudge. It is a constant on purpose: the
// supervisor never composes prompt content.
const NudgeText = "Your previous turn was interrupted before it finished. Please continue where you left off."

// RetryTurnText is what the executor sends for ActRetryTurn, after the
// context was compacted following an overflow. Constant for the same reason
// as NudgeText.
const RetryTurnText = "The context was compacted after it overflowed. Please continue where you left off."

// ActionKind is what the supervisor decided to do to a session.
type ActionKind int

// The action kinds. The zero value is deliberately not an action, so a
// forgotten Kind is caught rather than read as an interrupt.
const (
	// ActInterrupt asks the agent to stop the stalled turn (its own interrupt).
	ActInterrupt ActionKind = iota + 1
	// ActTerminate sends SIGTERM to the agent's process group: the interrupt
	// was ignored for InterruptGrace.
	ActTerminate
	// ActKill sends SIGKILL to the process group after a second grace.
	ActKill
	// ActCompact sends the agent's compaction after a context overflow.
	ActCompact
	// ActRetryTurn re-sends the turn (RetryTurnText) once the compaction finished.
	ActRetryTurn
	// ActContinue resumes the agent session after a rate-limit reset or an
	// auth refresh.
	ActContinue
	// ActNudge sends NudgeText: on the live process, or by resuming the agent
	// session when the process is gone (the executor decides from liveness).
	ActNudge
	// ActEscalate raises needs-attention and notifies: nothing automatic is left.
	ActEscalate
	// ActResume launches a session the app did not launch, whose process is
	// gone mid-turn, as a managed session of the same agent (its launcher's
	// resume of the agent's own session id, in its cwd) and sends NudgeText
	// there: "Resume in the background". Decided only with
	// Policy.ResumeTerminal; the user can ask for it at any time.
	ActResume
)

var actionNames = [...]string{
	ActInterrupt: "interrupt",
	ActTerminate: "terminate",
	ActKill:      "kill",
	ActCompact:   "compact",
	ActRetryTurn: "retry_turn",
	ActContinue:  "continue",
	ActNudge:     "nudge",
	ActEscalate:  "escalate",
	ActResume:    "resume",
}

// String returns the stable lower_snake name.
func (k ActionKind) String() string { return enum.Name(k, "action_kind", actionNames[:]) }

// Valid reports whether k is one of the action kinds.
func (k ActionKind) Valid() bool { return k > 0 && int(k) < len(actionNames) }

// MarshalText implements encoding.TextMarshaler with the lower_snake name.
func (k ActionKind) MarshalText() ([]byte, error) {
	if !k.Valid() {
		return nil, fmt.Errorf("invalid action kind %d", int(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *ActionKind) UnmarshalText(b []byte) error {
	for i, n := range actionNames {
		if i > 0 && n == string(b) {
			*k = ActionKind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown action kind %q", b)
}

// The supervisor_events kinds Reconcile produces, as observations or as the
// TimelineKind of an action. (boot_reconciled and uncertain_action are the
// loop's.)
const (
	TimelineStateChanged      = "state_changed"
	TimelineMarkedInterrupted = "marked_interrupted"
	TimelineMarkedSuspect     = "marked_suspect"
	TimelineCompactionTimeout = "compaction_timeout"
	// TimelineStallInterrupt is the kind of ActInterrupt and of its bounded
	// escalation (ActTerminate, ActKill): one incident, one kind.
	TimelineStallInterrupt = "stall_interrupt"
	// TimelineStopEnforced is the kind of the signals that enforce a user's
	// interrupt the agent ignored (ActTerminate, ActKill).
	TimelineStopEnforced = "stop_enforced"
	// TimelineOverflowRedrive is the kind of ActCompact and ActRetryTurn.
	TimelineOverflowRedrive = "overflow_redrive"
	// TimelineRateLimitDrain is the kind of a rate-limit continue, and of the
	// observation that schedules it.
	TimelineRateLimitDrain = "rate_limit_drain"
	// TimelineAuthResume is the kind of an auth resume, and of the
	// observation that schedules it.
	TimelineAuthResume = "auth_resume"
	TimelineNudgeSent  = "nudge_sent"
	TimelineEscalated  = "escalated"
	// TimelineNudgeFailed records a nudge into a session the app did not
	// launch whose delivery was not verified (the session never went busy
	// and its transcript did not grow): it counts against the nudge budget.
	TimelineNudgeFailed = "nudge_failed"
	// TimelineBackgroundResume is the kind of ActResume's intent.
	TimelineBackgroundResume = "background_resume"
	// TimelineResumedAs is recorded on the session that was resumed in the
	// background, pointing at the managed session now running it
	// ("resumed_as"); TimelineResumedFrom on that managed session, pointing
	// back ("resumed_from").
	TimelineResumedAs   = "resumed_as"
	TimelineResumedFrom = "resumed_from"
	// TimelineHandoverStopped records that a managed session's process was
	// stopped to continue it in a terminal; TimelineHandedOver that the
	// terminal's process was found and the session continues as it (the
	// agent session ids it links).
	TimelineHandoverStopped = "handover_stopped"
	TimelineHandedOver      = "handed_over"
	// TimelineSharedConversation records that another session's process
	// runs this session's conversation (and, with an empty SharedWith, that
	// it no longer does).
	TimelineSharedConversation = "shared_conversation"
	// TimelineBudgetReached records that the session is past a budget and
	// is not recovered while it is; TimelineBudgetCleared that no budget
	// stops it any more.
	TimelineBudgetReached = "budget_reached"
	TimelineBudgetCleared = "budget_cleared"
)

// Action is one side effect Reconcile decided. The loop writes its intent to
// the timeline (as TimelineKind, with Detail), checks Stale against the
// session it holds at dispatch time, then executes it.
type Action struct {
	Kind      ActionKind
	SessionID string
	// TurnGeneration is the generation the action was decided for: the key
	// of the generation guard (see Stale).
	TurnGeneration int64
	// TimelineKind is the supervisor_events kind it is recorded as.
	TimelineKind string
	// Detail is one human sentence explaining why. It never carries secrets:
	// it is built from sanitized evidence and failure messages only.
	Detail string
}

// Observation is something Reconcile noticed and changed without a side
// effect outside the session (marked_suspect, marked_interrupted,
// compaction_timeout, state_changed, a scheduled rate_limit_drain or
// auth_resume). Each is one timeline row.
type Observation struct {
	Kind   string
	Detail string
	// From and To are the states around a state change the observation
	// records; equal when it records none.
	From, To sessions.State
	// Cause is why a marked_interrupted observation's session became
	// Interrupted (the probe, the boot).
	Cause sessions.InterruptCause
}

// Stale is the generation guard: it reports whether a must be dropped rather
// than executed against s. An action belongs to exactly one (session, turn
// generation); once a new turn started — a user prompt, a nudge that took —
// anything decided for the old turn is void. Signals aimed at a turn
// (interrupt, SIGTERM, SIGKILL) are also void once that turn is no longer in
// flight, even within the same generation: the abort may have landed between
// the decision and the dispatch, and killing an idle agent is never intended.
func Stale(a Action, s sessions.Session) bool {
	if a.SessionID != s.ID || a.TurnGeneration != s.TurnGeneration {
		return true
	}
	switch a.Kind {
	case ActInterrupt, ActTerminate, ActKill:
		return !s.InTurn
	}
	return false
}
