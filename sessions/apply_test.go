package sessions

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// t0 is "now" for every Apply in these tests; base sessions are set up in
// the minutes before it.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// baseSession is a realistic session in the named situation, as the stream
// would have left it. Every call returns a fresh value.
func baseSession(name string) Session {
	s := Session{
		ID: "0f4c2a9e-sess", Name: "api-refactor", Agent: "claude", AgentSessionID: "agent-abc",
		Source: Managed, Cwd: "/home/u/api", PID: 4242, ProcessAlive: true,
		TurnGeneration: 3, TurnStarted: t0.Add(-10 * time.Minute),
		LastEventAt: t0.Add(-2 * time.Minute), StateChangedAt: t0.Add(-5 * time.Minute),
		Nudge:     NudgeBudget{Attempts: 1, LastNudge: t0.Add(-20 * time.Minute)},
		CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0.Add(-time.Minute),
	}
	bash := map[string]OpenCall{"t1": {Name: "Bash", Started: t0.Add(-3 * time.Minute)}}
	// The process has printed events (it launched), and a turn in flight
	// was announced by the agent (init): see the launch and late-idle tests.
	s.ProcessSpoke = true
	switch name {
	case "working":
		s.State, s.InTurn, s.OpenTools = Working, true, bash
		s.Evidence = "running Bash"
	case "compacting":
		s.State, s.InTurn = Compacting, true
		s.CompactionStarted = t0.Add(-30 * time.Second)
		s.Evidence = "compacting the context"
	case "waiting_permission":
		s.State, s.InTurn, s.WaitReason = WaitingOnUser, true, WaitPermission
		s.Permissions = []Permission{{RequestID: "req-7", Tool: "Bash"}}
		s.Permission = &Permission{RequestID: "req-7", Tool: "Bash"}
		s.Evidence = "the agent asks permission to use Bash"
	case "waiting_review":
		s.State, s.InTurn, s.WaitReason = WaitingOnUser, false, WaitReview
		s.NeedsAttention = true
		s.Evidence = "turn 3 completed; waiting for review"
	case "recovering_retry": // the agent's own backoff, turn still in flight
		s.State, s.InTurn = Recovering, true
		s.Failure = Failure{Kind: Overloaded, RetryAt: t0.Add(20 * time.Second), Message: "Overloaded"}
		s.Evidence = "agent retry 1/10 after 529 (API overloaded); next attempt at 12:00:20"
	case "recovering_hold": // the supervisor holding a rate-limited session until the reset
		s.State, s.InTurn = Recovering, false
		s.Failure = Failure{Kind: RateLimit, RetryAt: t0.Add(time.Hour), Message: "usage limit reached"}
		s.Evidence = "rate limited; holding until 13:00:00"
	case "suspect":
		s.State, s.InTurn, s.OpenTools = Suspect, true, bash
		s.LastEventAt = t0.Add(-12 * time.Minute)
		s.Evidence = "Suspect: 12 min silent, Bash open, pid 4242 alive"
	case "interrupted":
		s.State, s.InTurn = Interrupted, false
		s.Evidence = "turn 3 interrupted by the supervisor after a stall"
	case "errored":
		s.State, s.InTurn = Errored, false
		s.Failure = Failure{Kind: RateLimit, RetryAt: t0.Add(time.Hour), Message: "usage limit reached"}
		s.Evidence = "turn 3 failed: rate limited: usage limit reached"
	case "idle":
		s.State, s.InTurn = Idle, false
		s.Evidence = "agent idle"
	default:
		panic("no base session " + name)
	}
	s.TurnAcked = s.InTurn
	return s
}

var baseNames = []string{
	"working", "compacting", "waiting_permission", "waiting_review", "recovering_retry",
	"recovering_hold", "suspect", "interrupted", "errored", "idle",
}

// matrixEvent is the representative event of each kind used by the matrix.
func matrixEvent(k EventKind) Event {
	e := Event{Kind: k}
	switch k {
	case EvProcessStarted:
		e.PID = 5151
	case EvSessionInit:
		e.AgentSessionID = "agent-xyz"
	case EvTurnStarted:
		e.By = ByUser
	case EvActivity:
		e.Detail = "writing the patch"
	case EvToolStarted:
		e.CallID, e.Name = "t2", "Grep"
	case EvToolFinished:
		e.CallID, e.Name = "t1", "Bash"
	case EvTaskStarted, EvTaskFinished:
		e.CallID, e.Name = "bg1", "npm test"
	case EvCompactionFinished:
		e.OK = true
	case EvWaitingOnUser:
		e.Reason = WaitQuestion
	case EvRetryScheduled:
		e.Attempt, e.MaxAttempts, e.Delay, e.Status = 2, 10, 30*time.Second, 529
	case EvTurnFailed:
		e.Failure = Failure{Kind: Auth, Message: "OAuth session expired"}
	case EvInterruptRequested:
		e.By = ByUser
	case EvProcessExited:
		e.ExitCode = 1
	case EvObserved:
		e.Observed = &ObservedState{State: WaitingOnUser, Wait: WaitReview, Evidence: "the terminal turn ended; waiting for review"}
	}
	return e
}

// The state × event matrix: every base session × every event kind, written
// out so that any change in behaviour breaks a named row. wait is checked
// only when the resulting state is WaitingOnUser; evidence is a substring the
// resulting evidence must contain ("" = any non-empty evidence).
//
// Rows marked BUG expect what ARCHITECTURE.md asks for and fail against the
// current Apply (see the focused tests named in each mark).
type matrixRow struct {
	base     string
	kind     EventKind
	state    State
	wait     WaitReason
	inTurn   bool
	failure  FailureKind
	evidence string
}

var matrix = []matrixRow{
	// Working, in a turn, Bash open.
	{"working", EvProcessStarted, Working, NoWait, true, NoFailure, "running Bash"},
	{"working", EvSessionInit, Working, NoWait, true, NoFailure, "stream active"},
	{"working", EvTurnStarted, Working, NoWait, true, NoFailure, "turn 4 started by the user"},
	{"working", EvActivity, Working, NoWait, true, NoFailure, "writing the patch"},
	{"working", EvMetrics, Working, NoWait, true, NoFailure, "running Bash"},
	{"working", EvToolStarted, Working, NoWait, true, NoFailure, "running Grep"},
	{"working", EvToolFinished, Working, NoWait, true, NoFailure, "Bash finished"},
	{"working", EvTaskStarted, Working, NoWait, true, NoFailure, "npm test started"},
	{"working", EvTaskFinished, Working, NoWait, true, NoFailure, "npm test finished"},
	{"working", EvCompactionStarted, Compacting, NoWait, true, NoFailure, "compacting"},
	{"working", EvCompactionFinished, Working, NoWait, true, NoFailure, "compaction finished"},
	{"working", EvWaitingOnUser, WaitingOnUser, WaitQuestion, true, NoFailure, "question"},
	{"working", EvUserAnswered, Working, NoWait, true, NoFailure, "answered"},
	{"working", EvRetryScheduled, Recovering, NoWait, true, Overloaded, "agent retry 2/10"},
	{"working", EvTurnCompleted, WaitingOnUser, WaitReview, false, NoFailure, "turn 3 completed"},
	{"working", EvTurnFailed, Errored, NoWait, false, Auth, "authentication failed"},
	{"working", EvInterruptRequested, Working, NoWait, true, NoFailure, "running Bash"},
	{"working", EvTurnAborted, Interrupted, NoWait, false, NoFailure, "aborted by the agent"},
	{"working", EvIdle, WaitingOnUser, WaitReview, false, NoFailure, "agent idle"},
	{"working", EvAcknowledged, Working, NoWait, true, NoFailure, "running Bash"},
	{"working", EvProcessExited, Interrupted, NoWait, false, NoFailure, "code 1 during turn 3"},
	{"working", EvSessionEnded, Interrupted, NoWait, false, NoFailure, "session ended during turn 3"},
	{"working", EvPromptAdded, Working, NoWait, true, NoFailure, "running Bash"},

	// Compacting, in a turn.
	{"compacting", EvProcessStarted, Compacting, NoWait, true, NoFailure, "compacting"},
	{"compacting", EvSessionInit, Working, NoWait, true, NoFailure, "stream active"}, // CHANGED(issue 10/14): activity after a compaction started means it finished
	{"compacting", EvTurnStarted, Working, NoWait, true, NoFailure, "turn 4 started"},
	{"compacting", EvActivity, Working, NoWait, true, NoFailure, "writing the patch"}, // CHANGED(issue 10/14): activity after a compaction started means it finished
	{"compacting", EvMetrics, Compacting, NoWait, true, NoFailure, "compacting"},
	{"compacting", EvToolStarted, Working, NoWait, true, NoFailure, "running Grep"},       // CHANGED(issue 10/14): activity after a compaction started means it finished
	{"compacting", EvToolFinished, Working, NoWait, true, NoFailure, "Bash finished"},     // CHANGED(issue 10/14): activity after a compaction started means it finished
	{"compacting", EvTaskStarted, Working, NoWait, true, NoFailure, "npm test started"},   // CHANGED(issue 10/14): activity after a compaction started means it finished
	{"compacting", EvTaskFinished, Working, NoWait, true, NoFailure, "npm test finished"}, // CHANGED(issue 10/14): activity after a compaction started means it finished
	{"compacting", EvCompactionStarted, Compacting, NoWait, true, NoFailure, "compacting"},
	{"compacting", EvCompactionFinished, Working, NoWait, true, NoFailure, "compaction finished; turn continues"},
	{"compacting", EvWaitingOnUser, WaitingOnUser, WaitQuestion, true, NoFailure, "question"},
	// BUG(TestApplyUserAnsweredOnlyResolvesAPendingWait): nothing was pending; a compaction in flight is not ended by it.
	{"compacting", EvUserAnswered, Compacting, NoWait, true, NoFailure, "compacting"},
	{"compacting", EvRetryScheduled, Recovering, NoWait, true, Overloaded, "agent retry 2/10"},
	{"compacting", EvTurnCompleted, WaitingOnUser, WaitReview, false, NoFailure, "turn 3 completed"},
	{"compacting", EvTurnFailed, Errored, NoWait, false, Auth, "authentication failed"},
	{"compacting", EvInterruptRequested, Compacting, NoWait, true, NoFailure, "compacting"},
	{"compacting", EvTurnAborted, Interrupted, NoWait, false, NoFailure, "aborted by the agent"},
	{"compacting", EvIdle, WaitingOnUser, WaitReview, false, NoFailure, "agent idle"},
	{"compacting", EvAcknowledged, Compacting, NoWait, true, NoFailure, "compacting"},
	{"compacting", EvProcessExited, Interrupted, NoWait, false, NoFailure, "code 1 during turn 3"},
	{"compacting", EvSessionEnded, Interrupted, NoWait, false, NoFailure, "session ended during turn 3"},
	{"compacting", EvPromptAdded, Compacting, NoWait, true, NoFailure, "compacting"},

	// WaitingOnUser(permission), in a turn.
	{"waiting_permission", EvProcessStarted, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"},
	{"waiting_permission", EvSessionInit, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"}, // CHANGED(issue 10/7): the request stays open
	{"waiting_permission", EvTurnStarted, Working, NoWait, true, NoFailure, "turn 4 started"},
	{"waiting_permission", EvActivity, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"}, // CHANGED(issue 10/7): the request stays open
	{"waiting_permission", EvMetrics, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"},
	{"waiting_permission", EvToolStarted, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"},        // CHANGED(issue 10/7): the request stays open
	{"waiting_permission", EvToolFinished, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"},       // CHANGED(issue 10/7): the request stays open
	{"waiting_permission", EvTaskStarted, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"},        // CHANGED(issue 10/7): the request stays open
	{"waiting_permission", EvTaskFinished, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"},       // CHANGED(issue 10/7): the request stays open
	{"waiting_permission", EvCompactionStarted, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"},  // CHANGED(issue 10/7): the request stays open
	{"waiting_permission", EvCompactionFinished, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"}, // CHANGED(issue 10/7): the request stays open
	{"waiting_permission", EvWaitingOnUser, WaitingOnUser, WaitQuestion, true, NoFailure, "question"},
	{"waiting_permission", EvUserAnswered, Working, NoWait, true, NoFailure, "answered; turn continues"},
	{"waiting_permission", EvRetryScheduled, WaitingOnUser, WaitPermission, true, Overloaded, "permission to use Bash"}, // CHANGED(issue 10/7)
	{"waiting_permission", EvTurnCompleted, WaitingOnUser, WaitReview, false, NoFailure, "turn 3 completed"},
	{"waiting_permission", EvTurnFailed, Errored, NoWait, false, Auth, "authentication failed"},
	{"waiting_permission", EvInterruptRequested, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"},
	{"waiting_permission", EvTurnAborted, Interrupted, NoWait, false, NoFailure, "aborted by the agent"},
	{"waiting_permission", EvIdle, WaitingOnUser, WaitReview, false, NoFailure, "agent idle"},
	{"waiting_permission", EvAcknowledged, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"},
	{"waiting_permission", EvProcessExited, Interrupted, NoWait, false, NoFailure, "code 1 during turn 3"},
	{"waiting_permission", EvSessionEnded, Interrupted, NoWait, false, NoFailure, "session ended during turn 3"},
	{"waiting_permission", EvPromptAdded, WaitingOnUser, WaitPermission, true, NoFailure, "permission to use Bash"},

	// WaitingOnUser(review), the turn is over.
	{"waiting_review", EvProcessStarted, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	{"waiting_review", EvSessionInit, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	{"waiting_review", EvTurnStarted, Working, NoWait, true, NoFailure, "turn 4 started"},
	{"waiting_review", EvActivity, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	{"waiting_review", EvMetrics, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	{"waiting_review", EvToolStarted, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	{"waiting_review", EvToolFinished, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	{"waiting_review", EvTaskStarted, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	{"waiting_review", EvTaskFinished, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	{"waiting_review", EvCompactionStarted, Compacting, NoWait, false, NoFailure, "compacting"},
	{"waiting_review", EvCompactionFinished, Idle, NoWait, false, NoFailure, "compaction finished"},
	{"waiting_review", EvWaitingOnUser, WaitingOnUser, WaitQuestion, false, NoFailure, "question"},
	// BUG(TestApplyUserAnsweredOnlyResolvesAPendingWait): a review lasts until acknowledged.
	{"waiting_review", EvUserAnswered, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	{"waiting_review", EvRetryScheduled, Recovering, NoWait, false, Overloaded, "agent retry 2/10"},
	{"waiting_review", EvTurnCompleted, WaitingOnUser, WaitReview, false, NoFailure, "turn 3 completed"},
	{"waiting_review", EvTurnFailed, Errored, NoWait, false, Auth, "turn 3 failed"},
	{"waiting_review", EvInterruptRequested, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	// BUG(TestApplyStaleTurnAbortedKeepsHeldState): no turn was in flight; a finished turn must not turn into a nudgeable Interrupted.
	{"waiting_review", EvTurnAborted, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	{"waiting_review", EvIdle, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},
	{"waiting_review", EvAcknowledged, Idle, NoWait, false, NoFailure, "acknowledged (Waiting on user)"},
	{"waiting_review", EvProcessExited, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review; process exited with code 1"},
	{"waiting_review", EvSessionEnded, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review; session ended"},
	{"waiting_review", EvPromptAdded, WaitingOnUser, WaitReview, false, NoFailure, "waiting for review"},

	// Recovering: the agent's own retry, turn in flight.
	{"recovering_retry", EvProcessStarted, Recovering, NoWait, true, Overloaded, "agent retry 1/10"},
	{"recovering_retry", EvSessionInit, Working, NoWait, true, NoFailure, "stream active"},
	{"recovering_retry", EvTurnStarted, Working, NoWait, true, NoFailure, "turn 4 started"},
	{"recovering_retry", EvActivity, Working, NoWait, true, NoFailure, "writing the patch"},
	{"recovering_retry", EvMetrics, Recovering, NoWait, true, Overloaded, "agent retry 1/10"},
	{"recovering_retry", EvToolStarted, Working, NoWait, true, NoFailure, "running Grep"},
	{"recovering_retry", EvToolFinished, Working, NoWait, true, NoFailure, "Bash finished"},
	{"recovering_retry", EvTaskStarted, Working, NoWait, true, NoFailure, "npm test started"},
	{"recovering_retry", EvTaskFinished, Working, NoWait, true, NoFailure, "npm test finished"},
	{"recovering_retry", EvCompactionStarted, Compacting, NoWait, true, Overloaded, "compacting"},
	// BUG(TestApplyRecoveringToWorkingClearsFailure): Working again means the agent's retry is over.
	{"recovering_retry", EvCompactionFinished, Working, NoWait, true, NoFailure, "compaction finished"},
	{"recovering_retry", EvWaitingOnUser, WaitingOnUser, WaitQuestion, true, Overloaded, "question"},
	// BUG(TestApplyRecoveringToWorkingClearsFailure): as above.
	{"recovering_retry", EvUserAnswered, Working, NoWait, true, NoFailure, "answered"},
	{"recovering_retry", EvRetryScheduled, Recovering, NoWait, true, Overloaded, "agent retry 2/10 after 529"},
	{"recovering_retry", EvTurnCompleted, WaitingOnUser, WaitReview, false, NoFailure, "turn 3 completed"},
	{"recovering_retry", EvTurnFailed, Errored, NoWait, false, Auth, "authentication failed"},
	{"recovering_retry", EvInterruptRequested, Recovering, NoWait, true, Overloaded, "agent retry 1/10"},
	{"recovering_retry", EvTurnAborted, Interrupted, NoWait, false, Overloaded, "aborted by the agent"},
	{"recovering_retry", EvIdle, WaitingOnUser, WaitReview, false, Overloaded, "agent idle"},
	{"recovering_retry", EvAcknowledged, Recovering, NoWait, true, Overloaded, "agent retry 1/10"},
	{"recovering_retry", EvProcessExited, Interrupted, NoWait, false, Overloaded, "code 1 during turn 3"},
	{"recovering_retry", EvSessionEnded, Interrupted, NoWait, false, Overloaded, "session ended during turn 3"},
	{"recovering_retry", EvPromptAdded, Recovering, NoWait, true, Overloaded, "agent retry 1/10"},

	// Recovering: the supervisor holding a rate limit, no turn in flight.
	{"recovering_hold", EvProcessStarted, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvSessionInit, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvTurnStarted, Working, NoWait, true, NoFailure, "turn 4 started"},
	{"recovering_hold", EvActivity, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvMetrics, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvToolStarted, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvToolFinished, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvTaskStarted, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvTaskFinished, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvCompactionStarted, Compacting, NoWait, false, RateLimit, "compacting"},
	{"recovering_hold", EvCompactionFinished, Idle, NoWait, false, RateLimit, "compaction finished"},
	{"recovering_hold", EvWaitingOnUser, WaitingOnUser, WaitQuestion, false, RateLimit, "question"},
	// BUG(TestApplyUserAnsweredOnlyResolvesAPendingWait): nothing was pending; the hold stays.
	{"recovering_hold", EvUserAnswered, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvRetryScheduled, Recovering, NoWait, false, Overloaded, "agent retry 2/10"},
	// BUG(TestApplyStaleTurnCompletedKeepsHeldFailure): a late completion must not drop a held rate limit.
	{"recovering_hold", EvTurnCompleted, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvTurnFailed, Errored, NoWait, false, Auth, "turn 3 failed"},
	{"recovering_hold", EvInterruptRequested, Recovering, NoWait, false, RateLimit, "holding"},
	// BUG(TestApplyStaleTurnAbortedKeepsHeldState): no turn was in flight to abort.
	{"recovering_hold", EvTurnAborted, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvIdle, Recovering, NoWait, false, RateLimit, "holding"},
	{"recovering_hold", EvAcknowledged, Idle, NoWait, false, NoFailure, "recovery stopped"},
	{"recovering_hold", EvProcessExited, Recovering, NoWait, false, RateLimit, "holding until 13:00:00; process exited with code 1"},
	{"recovering_hold", EvSessionEnded, Recovering, NoWait, false, RateLimit, "holding until 13:00:00; session ended"},
	{"recovering_hold", EvPromptAdded, Recovering, NoWait, false, RateLimit, "holding"},

	// Suspect, in a turn, Bash open.
	{"suspect", EvProcessStarted, Suspect, NoWait, true, NoFailure, "12 min silent"},
	{"suspect", EvSessionInit, Working, NoWait, true, NoFailure, "stream active"},
	{"suspect", EvTurnStarted, Working, NoWait, true, NoFailure, "turn 4 started"},
	{"suspect", EvActivity, Working, NoWait, true, NoFailure, "writing the patch"},
	{"suspect", EvMetrics, Suspect, NoWait, true, NoFailure, "12 min silent"},
	{"suspect", EvToolStarted, Working, NoWait, true, NoFailure, "running Grep"},
	{"suspect", EvToolFinished, Working, NoWait, true, NoFailure, "Bash finished"},
	{"suspect", EvTaskStarted, Working, NoWait, true, NoFailure, "npm test started"},
	{"suspect", EvTaskFinished, Working, NoWait, true, NoFailure, "npm test finished"},
	{"suspect", EvCompactionStarted, Compacting, NoWait, true, NoFailure, "compacting"},
	{"suspect", EvCompactionFinished, Working, NoWait, true, NoFailure, "compaction finished; turn continues"},
	{"suspect", EvWaitingOnUser, WaitingOnUser, WaitQuestion, true, NoFailure, "question"},
	{"suspect", EvUserAnswered, Working, NoWait, true, NoFailure, "answered"},
	{"suspect", EvRetryScheduled, Recovering, NoWait, true, Overloaded, "agent retry 2/10"},
	{"suspect", EvTurnCompleted, WaitingOnUser, WaitReview, false, NoFailure, "turn 3 completed"},
	{"suspect", EvTurnFailed, Errored, NoWait, false, Auth, "authentication failed"},
	{"suspect", EvInterruptRequested, Suspect, NoWait, true, NoFailure, "12 min silent"},
	{"suspect", EvTurnAborted, Interrupted, NoWait, false, NoFailure, "aborted by the agent"},
	{"suspect", EvIdle, WaitingOnUser, WaitReview, false, NoFailure, "agent idle"},
	{"suspect", EvAcknowledged, Suspect, NoWait, true, NoFailure, "12 min silent"},
	{"suspect", EvProcessExited, Interrupted, NoWait, false, NoFailure, "code 1 during turn 3"},
	{"suspect", EvSessionEnded, Interrupted, NoWait, false, NoFailure, "session ended during turn 3"},
	{"suspect", EvPromptAdded, Suspect, NoWait, true, NoFailure, "12 min silent"},

	// Interrupted, no turn in flight.
	{"interrupted", EvProcessStarted, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},
	{"interrupted", EvSessionInit, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},
	{"interrupted", EvTurnStarted, Working, NoWait, true, NoFailure, "turn 4 started"},
	{"interrupted", EvActivity, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},
	{"interrupted", EvMetrics, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},
	{"interrupted", EvToolStarted, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},
	{"interrupted", EvToolFinished, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},
	{"interrupted", EvTaskStarted, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},
	{"interrupted", EvTaskFinished, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},
	{"interrupted", EvCompactionStarted, Compacting, NoWait, false, NoFailure, "compacting"},
	{"interrupted", EvCompactionFinished, Idle, NoWait, false, NoFailure, "compaction finished"},
	{"interrupted", EvWaitingOnUser, WaitingOnUser, WaitQuestion, false, NoFailure, "question"},
	// BUG(TestApplyUserAnsweredOnlyResolvesAPendingWait): nothing was pending; Interrupted stays honest.
	{"interrupted", EvUserAnswered, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},
	{"interrupted", EvRetryScheduled, Recovering, NoWait, false, Overloaded, "agent retry 2/10"},
	{"interrupted", EvTurnCompleted, WaitingOnUser, WaitReview, false, NoFailure, "turn 3 completed"},
	{"interrupted", EvTurnFailed, Errored, NoWait, false, Auth, "turn 3 failed"},
	{"interrupted", EvInterruptRequested, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},
	{"interrupted", EvTurnAborted, Interrupted, NoWait, false, NoFailure, "turn 3"},
	{"interrupted", EvIdle, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},
	{"interrupted", EvAcknowledged, Idle, NoWait, false, NoFailure, "acknowledged (Interrupted)"},
	{"interrupted", EvProcessExited, Interrupted, NoWait, false, NoFailure, "after a stall; process exited with code 1"},
	{"interrupted", EvSessionEnded, Interrupted, NoWait, false, NoFailure, "after a stall; session ended"},
	{"interrupted", EvPromptAdded, Interrupted, NoWait, false, NoFailure, "interrupted by the supervisor"},

	// Errored with a rate limit, no turn in flight.
	{"errored", EvProcessStarted, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvSessionInit, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvTurnStarted, Working, NoWait, true, NoFailure, "turn 4 started"},
	{"errored", EvActivity, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvMetrics, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvToolStarted, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvToolFinished, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvTaskStarted, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvTaskFinished, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvCompactionStarted, Compacting, NoWait, false, RateLimit, "compacting"},
	{"errored", EvCompactionFinished, Idle, NoWait, false, RateLimit, "compaction finished"},
	{"errored", EvWaitingOnUser, WaitingOnUser, WaitQuestion, false, RateLimit, "question"},
	// BUG(TestApplyUserAnsweredOnlyResolvesAPendingWait): a terminal error is not overwritten.
	{"errored", EvUserAnswered, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvRetryScheduled, Recovering, NoWait, false, Overloaded, "agent retry 2/10"},
	{"errored", EvTurnCompleted, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvTurnFailed, Errored, NoWait, false, Auth, "turn 3 failed: authentication failed: OAuth session expired"},
	{"errored", EvInterruptRequested, Errored, NoWait, false, RateLimit, "rate limited"},
	// BUG(TestApplyStaleTurnAbortedKeepsHeldState): a terminal error is not overwritten.
	{"errored", EvTurnAborted, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvIdle, Errored, NoWait, false, RateLimit, "rate limited"},
	{"errored", EvAcknowledged, Idle, NoWait, false, NoFailure, "acknowledged (Errored)"},
	{"errored", EvProcessExited, Errored, NoWait, false, RateLimit, "usage limit reached; process exited with code 1"},
	{"errored", EvSessionEnded, Errored, NoWait, false, RateLimit, "usage limit reached; session ended"},
	{"errored", EvPromptAdded, Errored, NoWait, false, RateLimit, "rate limited"},

	// Idle.
	{"idle", EvProcessStarted, Idle, NoWait, false, NoFailure, "agent process 5151 started; no turn yet"},
	{"idle", EvSessionInit, Idle, NoWait, false, NoFailure, "agent idle"},
	{"idle", EvTurnStarted, Working, NoWait, true, NoFailure, "turn 4 started by the user"},
	{"idle", EvActivity, Idle, NoWait, false, NoFailure, "agent idle"},
	{"idle", EvMetrics, Idle, NoWait, false, NoFailure, "agent idle"},
	{"idle", EvToolStarted, Idle, NoWait, false, NoFailure, "agent idle"},
	{"idle", EvToolFinished, Idle, NoWait, false, NoFailure, "agent idle"},
	{"idle", EvTaskStarted, Idle, NoWait, false, NoFailure, "agent idle"},
	{"idle", EvTaskFinished, Idle, NoWait, false, NoFailure, "agent idle"},
	{"idle", EvCompactionStarted, Compacting, NoWait, false, NoFailure, "compacting"},
	{"idle", EvCompactionFinished, Idle, NoWait, false, NoFailure, "compaction finished"},
	{"idle", EvWaitingOnUser, WaitingOnUser, WaitQuestion, false, NoFailure, "question"},
	{"idle", EvUserAnswered, Idle, NoWait, false, NoFailure, ""},
	{"idle", EvRetryScheduled, Recovering, NoWait, false, Overloaded, "agent retry 2/10"},
	{"idle", EvTurnCompleted, WaitingOnUser, WaitReview, false, NoFailure, "turn 3 completed"},
	{"idle", EvTurnFailed, Errored, NoWait, false, Auth, "turn 3 failed"},
	{"idle", EvInterruptRequested, Idle, NoWait, false, NoFailure, "agent idle"},
	{"idle", EvTurnAborted, Interrupted, NoWait, false, NoFailure, "aborted by the agent"},
	{"idle", EvIdle, Idle, NoWait, false, NoFailure, "agent idle"},
	{"idle", EvAcknowledged, Idle, NoWait, false, NoFailure, "agent idle"},
	{"idle", EvProcessExited, Idle, NoWait, false, NoFailure, "process exited with code 1; session closed"},
	{"idle", EvSessionEnded, Idle, NoWait, false, NoFailure, "session ended; session closed"},
	{"idle", EvPromptAdded, Idle, NoWait, false, NoFailure, "agent idle"},

	// An external source's observed state is taken as-is (here: the turn
	// it watched ended), whatever the session was.
	{"working", EvObserved, WaitingOnUser, WaitReview, false, NoFailure, "terminal turn ended"},
	{"compacting", EvObserved, WaitingOnUser, WaitReview, false, NoFailure, "terminal turn ended"},
	{"waiting_permission", EvObserved, WaitingOnUser, WaitReview, false, NoFailure, "terminal turn ended"},
	{"waiting_review", EvObserved, WaitingOnUser, WaitReview, false, NoFailure, "terminal turn ended"},
	{"recovering_retry", EvObserved, WaitingOnUser, WaitReview, false, NoFailure, "terminal turn ended"},
	{"recovering_hold", EvObserved, WaitingOnUser, WaitReview, false, NoFailure, "terminal turn ended"},
	{"suspect", EvObserved, WaitingOnUser, WaitReview, false, NoFailure, "terminal turn ended"},
	{"interrupted", EvObserved, WaitingOnUser, WaitReview, false, NoFailure, "terminal turn ended"},
	{"errored", EvObserved, WaitingOnUser, WaitReview, false, NoFailure, "terminal turn ended"},
	{"idle", EvObserved, WaitingOnUser, WaitReview, false, NoFailure, "terminal turn ended"},
}

func TestApplyMatrixCoversEveryPair(t *testing.T) {
	covered := map[State]bool{}
	for _, b := range baseNames {
		covered[baseSession(b).State] = true
	}
	for _, st := range AllStates {
		if !covered[st] {
			t.Errorf("no base session in state %v", st)
		}
	}
	seen := map[string]bool{}
	for _, r := range matrix {
		key := r.base + "/" + r.kind.String()
		if seen[key] {
			t.Errorf("matrix row %s listed twice", key)
		}
		seen[key] = true
	}
	for _, b := range baseNames {
		for _, k := range AllEventKinds() {
			if !seen[b+"/"+k.String()] {
				t.Errorf("matrix has no row for %s/%v", b, k)
			}
		}
	}
	if want := len(baseNames) * len(AllEventKinds()); len(matrix) != want {
		t.Errorf("matrix has %d rows, want %d", len(matrix), want)
	}
}

func TestApplyMatrix(t *testing.T) {
	for _, r := range matrix {
		t.Run(r.base+"/"+r.kind.String(), func(t *testing.T) {
			s := baseSession(r.base)
			before := s.Clone()
			got := Apply(s, matrixEvent(r.kind), t0)

			if !reflect.DeepEqual(s, before) {
				t.Fatalf("Apply mutated its input")
			}
			if got.State != r.state {
				t.Errorf("state = %v, want %v (evidence %q)", got.State, r.state, got.Evidence)
			}
			if r.state == WaitingOnUser && got.WaitReason != r.wait {
				t.Errorf("wait reason = %q, want %q", got.WaitReason, r.wait)
			}
			if got.InTurn != r.inTurn {
				t.Errorf("InTurn = %v, want %v", got.InTurn, r.inTurn)
			}
			if got.Failure.Kind != r.failure {
				t.Errorf("failure = %v (%q), want %v", got.Failure.Kind, got.Failure.Message, r.failure)
			}
			if got.Evidence == "" {
				t.Errorf("empty evidence")
			}
			if !strings.Contains(got.Evidence, r.evidence) {
				t.Errorf("evidence %q does not mention %q", got.Evidence, r.evidence)
			}

			// Bookkeeping every row shares.
			if !got.UpdatedAt.Equal(t0) {
				t.Errorf("UpdatedAt = %v, want now", got.UpdatedAt)
			}
			wantLast := before.LastEventAt
			if r.kind.Genuine() {
				wantLast = t0
			}
			if !got.LastEventAt.Equal(wantLast) {
				t.Errorf("LastEventAt = %v, want %v (genuine=%v)", got.LastEventAt, wantLast, r.kind.Genuine())
			}
			wantGen := before.TurnGeneration
			if r.kind == EvTurnStarted {
				wantGen++
			}
			if got.TurnGeneration != wantGen {
				t.Errorf("TurnGeneration = %d, want %d", got.TurnGeneration, wantGen)
			}
			wantChanged := before.StateChangedAt
			if got.State != before.State {
				wantChanged = t0
			}
			if !got.StateChangedAt.Equal(wantChanged) {
				t.Errorf("StateChangedAt = %v, want %v", got.StateChangedAt, wantChanged)
			}
			if got.ID != before.ID || got.Name != before.Name || got.Cwd != before.Cwd || got.CreatedAt != before.CreatedAt {
				t.Errorf("identity changed: %+v", got)
			}
		})
	}
}

// A terminal failure is not overwritten by a later idle, completion or exit.
func TestApplyTerminalFailureNotOverwritten(t *testing.T) {
	for _, e := range []Event{
		{Kind: EvIdle},
		{Kind: EvTurnCompleted},
		{Kind: EvProcessExited, ExitCode: 0},
		{Kind: EvProcessExited, Signal: "SIGTERM"},
		{Kind: EvSessionEnded},
		{Kind: EvMetrics},
		{Kind: EvActivity},
	} {
		t.Run(e.Describe(), func(t *testing.T) {
			for _, kind := range []FailureKind{RateLimit, ContextOverflow, Auth} {
				s := baseSession("errored")
				s.Failure = Failure{Kind: kind, Message: "terminal", RetryAt: t0.Add(time.Hour)}
				got := Apply(s, e, t0)
				if got.State != Errored || got.Failure != s.Failure {
					t.Errorf("%v: Errored(%v) + %v -> %v %+v, want Errored with the same failure", kind, kind, e.Kind, got.State, got.Failure)
				}
				if !strings.Contains(got.Evidence, "rate limited") {
					t.Errorf("%v: the failure's evidence was replaced: %q", kind, got.Evidence)
				}
			}
		})
	}
	// A whole trail of late signals, in one go.
	s := baseSession("errored")
	for i, k := range []EventKind{EvIdle, EvTurnCompleted, EvIdle, EvProcessExited, EvSessionEnded, EvIdle} {
		s = Apply(s, Event{Kind: k}, t0.Add(time.Duration(i)*time.Second))
	}
	if s.State != Errored || s.Failure.Kind != RateLimit || s.ProcessAlive {
		t.Errorf("after late signals: %v %v alive=%v, want Errored rate_limit, process gone", s.State, s.Failure.Kind, s.ProcessAlive)
	}
	if strings.Count(s.Evidence, "session ended") != 1 {
		t.Errorf("repeated exit phrases pile up in evidence: %q", s.Evidence)
	}
}

func TestApplyNudgeBudget(t *testing.T) {
	spent := NudgeBudget{Attempts: 3, LastNudge: t0.Add(-5 * time.Minute)}
	tests := []struct {
		base string
		e    Event
		want NudgeBudget
	}{
		{"working", Event{Kind: EvTurnCompleted}, NudgeBudget{}},
		{"suspect", Event{Kind: EvTurnCompleted}, NudgeBudget{}},
		{"working", Event{Kind: EvTurnStarted, By: BySupervisor}, spent},
		{"interrupted", Event{Kind: EvTurnStarted, By: BySupervisor}, spent},
		// A turn the user starts is a new start: the budget is refilled
		// (issue 20, item 12).
		{"idle", Event{Kind: EvTurnStarted, By: ByUser}, NudgeBudget{}},
		{"interrupted", Event{Kind: EvTurnStarted, By: ByUser}, NudgeBudget{}},
		{"working", Event{Kind: EvActivity}, spent},
		{"working", Event{Kind: EvTurnFailed, Failure: Failure{Kind: OtherFailure}}, spent},
		{"working", Event{Kind: EvTurnAborted}, spent},
		{"working", Event{Kind: EvProcessExited, ExitCode: 1}, spent},
		{"working", Event{Kind: EvIdle}, spent},
		// A failure swallowing a late completion keeps its budget too.
		{"errored", Event{Kind: EvTurnCompleted}, spent},
	}
	for _, tt := range tests {
		t.Run(tt.base+"/"+tt.e.Kind.String(), func(t *testing.T) {
			s := baseSession(tt.base)
			s.Nudge = spent
			got := Apply(s, tt.e, t0)
			if got.Nudge != tt.want {
				t.Errorf("Nudge = %+v, want %+v", got.Nudge, tt.want)
			}
		})
	}
}

func TestApplyProcessExit(t *testing.T) {
	tests := []struct {
		name     string
		base     string
		e        Event
		state    State
		evidence []string
		code     int
	}{
		{"code during a turn", "working", Event{Kind: EvProcessExited, ExitCode: 2}, Interrupted, []string{"exited with code 2", "during turn 3"}, 2},
		{"signal during a turn", "suspect", Event{Kind: EvProcessExited, ExitCode: -1, Signal: "SIGKILL"}, Interrupted, []string{"signal SIGKILL", "during turn 3"}, -1},
		{"clean exit during a turn", "compacting", Event{Kind: EvProcessExited}, Interrupted, []string{"exited with code 0", "during turn 3"}, 0},
		{"exit while asking permission", "waiting_permission", Event{Kind: EvProcessExited, Signal: "SIGHUP"}, Interrupted, []string{"SIGHUP"}, 0},
		{"exit between turns", "idle", Event{Kind: EvProcessExited}, Idle, []string{"exited with code 0", "session closed"}, 0},
		{"signal between turns", "idle", Event{Kind: EvProcessExited, Signal: "SIGTERM"}, Idle, []string{"signal SIGTERM", "session closed"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Apply(baseSession(tt.base), tt.e, t0)
			if got.State != tt.state {
				t.Errorf("state = %v, want %v", got.State, tt.state)
			}
			for _, w := range tt.evidence {
				if !strings.Contains(got.Evidence, w) {
					t.Errorf("evidence %q lacks %q", got.Evidence, w)
				}
			}
			if got.ProcessAlive || got.InTurn || len(got.OpenTools) != 0 || got.Permission != nil || !got.CompactionStarted.IsZero() {
				t.Errorf("after exit: alive=%v inTurn=%v tools=%v perm=%v compaction=%v", got.ProcessAlive, got.InTurn, got.OpenTools, got.Permission, got.CompactionStarted)
			}
			if got.LastExitCode == nil || *got.LastExitCode != tt.code {
				t.Errorf("LastExitCode = %v, want %d", got.LastExitCode, tt.code)
			}
		})
	}
	// A session ended (not a process exit) records no exit code.
	got := Apply(baseSession("working"), Event{Kind: EvSessionEnded, Detail: "transcript closed"}, t0)
	if got.State != Interrupted || got.LastExitCode != nil || !strings.Contains(got.Evidence, "transcript closed during turn 3") {
		t.Errorf("session ended mid-turn: %v code=%v %q", got.State, got.LastExitCode, got.Evidence)
	}
	// The exit code of a process that is restarted is forgotten.
	got = Apply(Apply(baseSession("idle"), Event{Kind: EvProcessExited, ExitCode: 3}, t0), Event{Kind: EvProcessStarted, PID: 99}, t0.Add(time.Second))
	if got.LastExitCode != nil || !got.ProcessAlive || got.PID != 99 {
		t.Errorf("restart: code=%v alive=%v pid=%d", got.LastExitCode, got.ProcessAlive, got.PID)
	}
}

func TestApplyTurnFailed(t *testing.T) {
	t.Run("agent retries on its own", func(t *testing.T) {
		e := Event{Kind: EvTurnFailed, Delay: 90 * time.Second, Failure: Failure{Kind: Overloaded, Message: "529 Overloaded\n  (request sk-ant-api03-SECRETSECRET)"}}
		got := Apply(baseSession("working"), e, t0)
		if got.State != Recovering || !got.InTurn {
			t.Fatalf("-> %v inTurn=%v, want Recovering in turn", got.State, got.InTurn)
		}
		if !got.Failure.RetryAt.Equal(t0.Add(90 * time.Second)) {
			t.Errorf("RetryAt = %v, want now+90s", got.Failure.RetryAt)
		}
		if got.Failure.Kind != Overloaded || got.Failure.Message != "529 Overloaded (request [redacted])" {
			t.Errorf("failure = %+v, want overloaded with a sanitized message", got.Failure)
		}
		if !strings.Contains(got.Evidence, "12:01:30") || !strings.Contains(got.Evidence, "API overloaded") {
			t.Errorf("evidence %q lacks the failure or its retry time", got.Evidence)
		}
		if strings.Contains(got.Evidence, "SECRET") {
			t.Errorf("evidence leaks a secret: %q", got.Evidence)
		}
		if len(got.OpenTools) == 0 {
			t.Errorf("the turn is still in flight; its open tools were dropped")
		}
	})
	t.Run("terminal", func(t *testing.T) {
		e := Event{Kind: EvTurnFailed, Failure: Failure{Kind: ContextOverflow, Message: "prompt is too long: 210000 tokens > 200000", RetryAt: t0.Add(time.Hour)}}
		got := Apply(baseSession("working"), e, t0)
		if got.State != Errored || got.InTurn || len(got.OpenTools) != 0 {
			t.Fatalf("-> %v inTurn=%v tools=%v, want Errored, turn over", got.State, got.InTurn, got.OpenTools)
		}
		if got.Failure.Kind != ContextOverflow || !got.Failure.RetryAt.Equal(t0.Add(time.Hour)) {
			t.Errorf("failure = %+v", got.Failure)
		}
		if !strings.Contains(got.Evidence, "turn 3 failed: context overflow: prompt is too long") {
			t.Errorf("evidence %q", got.Evidence)
		}
	})
	t.Run("secrets never reach the failure", func(t *testing.T) {
		e := Event{Kind: EvTurnFailed, Failure: Failure{Kind: Auth, Message: "401 {\"error\":\"invalid x-api-key\",\"api_key\":\"sk-ant-api03-LEAKLEAKLEAK\"} Bearer abcdefghijklmnop"}}
		got := Apply(baseSession("working"), e, t0)
		for _, leak := range []string{"LEAK", "abcdefghijklmnop"} {
			if strings.Contains(got.Failure.Message, leak) || strings.Contains(got.Evidence, leak) {
				t.Errorf("secret %q leaked: failure %q evidence %q", leak, got.Failure.Message, got.Evidence)
			}
		}
	})
}

func TestApplyRetryScheduled(t *testing.T) {
	tests := []struct {
		status   int
		adapter  FailureKind
		want     FailureKind
		evidence string
	}{
		{429, NoFailure, RateLimit, "(rate limited)"},
		{529, NoFailure, Overloaded, "(API overloaded)"},
		{503, NoFailure, Overloaded, "(API overloaded)"},
		{401, NoFailure, Auth, "(authentication failed)"},
		{403, NoFailure, Auth, "(authentication failed)"},
		{402, NoFailure, Billing, "(billing error)"},
		{413, NoFailure, ContextOverflow, "(context overflow)"},
		{500, NoFailure, Network, "(network or server error)"},
		{502, NoFailure, Network, "(network or server error)"},
		{0, NoFailure, OtherFailure, "(error)"},
		// The adapter's own classification wins over the status.
		{500, RateLimit, RateLimit, "(rate limited)"},
		{429, Auth, Auth, "(authentication failed)"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%v", tt.status, tt.adapter), func(t *testing.T) {
			e := Event{Kind: EvRetryScheduled, Attempt: 3, MaxAttempts: 10, Delay: 45 * time.Second, Status: tt.status,
				Failure: Failure{Kind: tt.adapter, Message: "retrying\n api_key=abc123"}}
			got := Apply(baseSession("working"), e, t0)
			if got.State != Recovering || !got.InTurn {
				t.Fatalf("-> %v inTurn=%v, want Recovering in turn", got.State, got.InTurn)
			}
			if got.Failure.Kind != tt.want {
				t.Errorf("failure kind = %v, want %v", got.Failure.Kind, tt.want)
			}
			if !got.Failure.RetryAt.Equal(t0.Add(45 * time.Second)) {
				t.Errorf("RetryAt = %v, want now+45s", got.Failure.RetryAt)
			}
			if got.Failure.Message != "retrying api_key=[redacted]" {
				t.Errorf("message = %q, want it sanitized", got.Failure.Message)
			}
			for _, w := range []string{"agent retry 3/10", tt.evidence, "next attempt at 12:00:45"} {
				if !strings.Contains(got.Evidence, w) {
					t.Errorf("evidence %q lacks %q", got.Evidence, w)
				}
			}
			if tt.status != 0 && !strings.Contains(got.Evidence, fmt.Sprintf("after %d", tt.status)) {
				t.Errorf("evidence %q lacks the status", got.Evidence)
			}
			if tt.status == 0 && strings.Contains(got.Evidence, "after") {
				t.Errorf("evidence %q names a status that was not given", got.Evidence)
			}
		})
	}
	// Without a maximum the attempt is shown alone.
	got := Apply(baseSession("working"), Event{Kind: EvRetryScheduled, Attempt: 4, Delay: time.Minute, Status: 429}, t0)
	if !strings.Contains(got.Evidence, "agent retry 4 after 429") {
		t.Errorf("evidence %q", got.Evidence)
	}
	// A second retry moves the countdown.
	got = Apply(got, Event{Kind: EvRetryScheduled, Attempt: 5, Delay: 2 * time.Minute, Status: 429}, t0.Add(time.Minute))
	if !got.Failure.RetryAt.Equal(t0.Add(3*time.Minute)) || !strings.Contains(got.Evidence, "12:03:00") {
		t.Errorf("second retry: RetryAt %v evidence %q", got.Failure.RetryAt, got.Evidence)
	}
}

func TestKindFromStatus(t *testing.T) {
	for status, want := range map[int]FailureKind{
		429: RateLimit, 529: Overloaded, 503: Overloaded, 401: Auth, 403: Auth, 402: Billing,
		413: ContextOverflow, 400: OtherFailure, 500: Network, 502: Network, 504: Network, 599: Network, 600: OtherFailure,
		0: OtherFailure, 200: OtherFailure,
	} {
		if got := KindFromStatus(status); got != want {
			t.Errorf("KindFromStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

// Genuine activity after the agent's own retry: the turn is moving again.
func TestApplyGenuineActivityEndsAgentRetry(t *testing.T) {
	for _, e := range []Event{
		{Kind: EvActivity, Detail: "thinking"},
		{Kind: EvSessionInit},
		{Kind: EvToolStarted, CallID: "t9", Name: "Edit"},
		{Kind: EvToolFinished, CallID: "t1"},
		{Kind: EvTaskStarted, CallID: "b1", Name: "build"},
		{Kind: EvTaskFinished, CallID: "b1"},
	} {
		got := Apply(baseSession("recovering_retry"), e, t0)
		if got.State != Working || !got.Failure.IsZero() || !got.InTurn {
			t.Errorf("Recovering(agent retry) + %v -> %v failure=%+v inTurn=%v; want Working, failure cleared", e.Kind, got.State, got.Failure, got.InTurn)
		}
	}
	// Metrics are not activity: the retry still holds.
	got := Apply(baseSession("recovering_retry"), Event{Kind: EvMetrics}, t0)
	if got.State != Recovering || got.Failure.Kind != Overloaded {
		t.Errorf("metrics ended the retry: %v %+v", got.State, got.Failure)
	}
}

// BUG: every genuine event that takes Recovering(agent retry) to Working must
// clear the retry's failure, as resumeWorking does; EvUserAnswered and
// EvCompactionFinished leave a Working session carrying a stale failure.
func TestApplyRecoveringToWorkingClearsFailure(t *testing.T) {
	for _, k := range AllEventKinds() {
		got := Apply(baseSession("recovering_retry"), matrixEvent(k), t0)
		if got.State == Working && !got.Failure.IsZero() {
			t.Errorf("Recovering(agent retry) + %v -> Working but the failure %v (%q) is still set", k, got.Failure.Kind, got.Failure.Message)
		}
	}
}

func TestApplyStallClock(t *testing.T) {
	for _, base := range baseNames {
		for _, k := range append(AllEventKinds(), EvUnknown) {
			before := baseSession(base)
			got := Apply(before, matrixEvent(k), t0)
			switch {
			case k.Genuine() && !got.LastEventAt.Equal(t0):
				t.Errorf("%s + %v (genuine): LastEventAt = %v, want now", base, k, got.LastEventAt)
			case !k.Genuine() && !got.LastEventAt.Equal(before.LastEventAt):
				t.Errorf("%s + %v (not genuine): LastEventAt moved to %v", base, k, got.LastEventAt)
			}
		}
	}
	// A stream of metrics for an hour leaves the clock where the last real event put it.
	s := Apply(baseSession("working"), Event{Kind: EvActivity}, t0)
	for i := 1; i <= 60; i++ {
		s = Apply(s, Event{Kind: EvMetrics}, t0.Add(time.Duration(i)*time.Minute))
	}
	if !s.LastEventAt.Equal(t0) || s.State != Working {
		t.Errorf("after an hour of metrics: LastEventAt %v state %v, want %v Working", s.LastEventAt, s.State, t0)
	}
	if !s.UpdatedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("UpdatedAt = %v, want the last metrics time", s.UpdatedAt)
	}
}

func TestApplySuspectSelfHeals(t *testing.T) {
	s := baseSession("suspect")
	got := Apply(s, Event{Kind: EvMetrics}, t0)
	if got.State != Suspect || !got.LastEventAt.Equal(s.LastEventAt) || got.Evidence != s.Evidence {
		t.Errorf("metrics: %v last=%v %q; want Suspect untouched", got.State, got.LastEventAt, got.Evidence)
	}
	got = Apply(got, Event{Kind: EvActivity, Detail: "assistant text"}, t0.Add(time.Second))
	if got.State != Working || !got.LastEventAt.Equal(t0.Add(time.Second)) || got.Evidence != "assistant text" {
		t.Errorf("activity: %v last=%v %q; want Working, clock refreshed", got.State, got.LastEventAt, got.Evidence)
	}
	if !got.StateChangedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("StateChangedAt = %v, want the activity time", got.StateChangedAt)
	}
	if len(got.OpenTools) != 1 {
		t.Errorf("self-healing dropped the open tool: %v", got.OpenTools)
	}
}

func TestApplyInterruptThenAbort(t *testing.T) {
	user, sup := ByUser, BySupervisor
	tests := []struct {
		name     string
		by       *Actor
		state    State
		wait     WaitReason
		evidence string
	}{
		{"user asked", &user, WaitingOnUser, WaitReview, "stopped at your request"},
		{"supervisor asked", &sup, Interrupted, NoWait, "interrupted by the supervisor"},
		{"nobody asked", nil, Interrupted, NoWait, "aborted by the agent (user hit escape)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSession("working")
			if tt.by != nil {
				s = Apply(s, Event{Kind: EvInterruptRequested, By: *tt.by}, t0)
				if s.State != Working || s.Evidence != "running Bash" {
					t.Errorf("the interrupt request itself changed the state: %v %q", s.State, s.Evidence)
				}
				if s.InterruptBy == nil || *s.InterruptBy != *tt.by {
					t.Fatalf("InterruptBy = %v, want %v", s.InterruptBy, *tt.by)
				}
			}
			got := Apply(s, Event{Kind: EvTurnAborted, Detail: "user hit escape"}, t0.Add(time.Second))
			if got.State != tt.state || got.InTurn {
				t.Errorf("-> %v inTurn=%v, want %v, turn over", got.State, got.InTurn, tt.state)
			}
			if tt.state == WaitingOnUser && got.WaitReason != tt.wait {
				t.Errorf("wait = %q, want %q", got.WaitReason, tt.wait)
			}
			if !strings.Contains(got.Evidence, tt.evidence) || !strings.Contains(got.Evidence, "turn 3") {
				t.Errorf("evidence %q lacks %q", got.Evidence, tt.evidence)
			}
			if got.InterruptBy != nil {
				t.Errorf("InterruptBy survived the abort: %v", *got.InterruptBy)
			}
		})
	}
	// The request is for one turn: a new turn forgets it, so a later abort
	// nobody asked for is not mistaken for the user's stop.
	s := Apply(baseSession("working"), Event{Kind: EvInterruptRequested, By: ByUser}, t0)
	s = Apply(s, Event{Kind: EvTurnStarted}, t0.Add(time.Second))
	if s.InterruptBy != nil {
		t.Fatalf("a new turn kept the previous interrupt request")
	}
	if got := Apply(s, Event{Kind: EvTurnAborted}, t0.Add(2*time.Second)); got.State != Interrupted {
		t.Errorf("abort in the next turn -> %v, want Interrupted", got.State)
	}
}

func TestApplyCompaction(t *testing.T) {
	t.Run("started twice keeps the first start", func(t *testing.T) {
		s := Apply(baseSession("working"), Event{Kind: EvCompactionStarted}, t0)
		s = Apply(s, Event{Kind: EvCompactionStarted}, t0.Add(30*time.Second))
		s = Apply(s, Event{Kind: EvCompactionStarted}, t0.Add(60*time.Second))
		if s.State != Compacting || !s.CompactionStarted.Equal(t0) {
			t.Errorf("%v CompactionStarted=%v, want Compacting since %v", s.State, s.CompactionStarted, t0)
		}
		if !s.StateChangedAt.Equal(t0) {
			t.Errorf("StateChangedAt = %v, want the first start", s.StateChangedAt)
		}
	})
	t.Run("a new compaction after a finished one starts afresh", func(t *testing.T) {
		s := Apply(baseSession("working"), Event{Kind: EvCompactionStarted}, t0)
		s = Apply(s, Event{Kind: EvCompactionFinished, OK: true}, t0.Add(time.Minute))
		s = Apply(s, Event{Kind: EvCompactionStarted}, t0.Add(2*time.Minute))
		if !s.CompactionStarted.Equal(t0.Add(2 * time.Minute)) {
			t.Errorf("CompactionStarted = %v, want the second start", s.CompactionStarted)
		}
	})
	tests := []struct {
		name     string
		base     string
		ok       bool
		state    State
		failure  FailureKind
		evidence string
	}{
		{"ok in a turn", "compacting", true, Working, NoFailure, "compaction finished; turn continues"},
		{"failed in a turn", "compacting", false, Working, NoFailure, "compaction failed (too few messages); turn continues"},
		{"ok between turns", "idle", true, Idle, NoFailure, "compaction finished"},
		{"failed between turns", "idle", false, Errored, ContextOverflow, "compaction failed: too few messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Apply(baseSession(tt.base), Event{Kind: EvCompactionStarted}, t0)
			got := Apply(s, Event{Kind: EvCompactionFinished, OK: tt.ok, Detail: "too few messages"}, t0.Add(time.Minute))
			if got.State != tt.state || got.Failure.Kind != tt.failure {
				t.Errorf("-> %v %v, want %v %v", got.State, got.Failure.Kind, tt.state, tt.failure)
			}
			if !strings.Contains(got.Evidence, tt.evidence) {
				t.Errorf("evidence %q lacks %q", got.Evidence, tt.evidence)
			}
			if !got.CompactionStarted.IsZero() {
				t.Errorf("CompactionStarted still set: %v", got.CompactionStarted)
			}
			if tt.failure != NoFailure && got.Failure.Message != "compaction failed: too few messages" {
				t.Errorf("failure message = %q", got.Failure.Message)
			}
		})
	}
	got := Apply(baseSession("idle"), Event{Kind: EvCompactionFinished}, t0)
	if got.State != Errored || got.Failure.Message != "compaction failed: no reason given" {
		t.Errorf("failed without detail: %v %q", got.State, got.Failure.Message)
	}
}

func TestApplyTurnStarted(t *testing.T) {
	by := BySupervisor
	s := baseSession("errored")
	s.NeedsAttention = true
	s.OpenTools = map[string]OpenCall{"t1": {Name: "Bash"}}
	s.OpenTasks = map[string]OpenCall{"b1": {Name: "build"}}
	s.Permission = &Permission{RequestID: "r", Tool: "Bash"}
	s.WaitReason = WaitPermission
	s.InterruptBy = &by
	s.CompactionStarted = t0.Add(-time.Minute)
	s.Nudge = NudgeBudget{Attempts: 2, LastNudge: t0.Add(-time.Minute)}

	got := Apply(s, Event{Kind: EvTurnStarted, By: BySupervisor}, t0)
	if got.State != Working || !got.InTurn || got.TurnGeneration != 4 || !got.TurnStarted.Equal(t0) {
		t.Errorf("-> %v inTurn=%v gen=%d started=%v", got.State, got.InTurn, got.TurnGeneration, got.TurnStarted)
	}
	if !got.Failure.IsZero() || got.NeedsAttention || got.OpenTools != nil || got.OpenTasks != nil ||
		got.Permission != nil || got.WaitReason != NoWait || got.InterruptBy != nil || !got.CompactionStarted.IsZero() {
		t.Errorf("a new turn kept the last incident: %+v", got)
	}
	if got.Nudge != s.Nudge {
		t.Errorf("a new turn refilled the nudge budget: %+v", got.Nudge)
	}
	if got.Evidence != "turn 4 started by the supervisor" {
		t.Errorf("evidence %q", got.Evidence)
	}
	// Each start is one more generation, even back to back.
	for i := range 5 {
		got = Apply(got, Event{Kind: EvTurnStarted}, t0.Add(time.Duration(i+1)*time.Second))
	}
	if got.TurnGeneration != 9 {
		t.Errorf("TurnGeneration = %d after 6 starts from 3, want 9", got.TurnGeneration)
	}
}

func TestApplyAcknowledged(t *testing.T) {
	tests := []struct {
		name     string
		base     string
		state    State
		evidence string
	}{
		{"review", "waiting_review", Idle, "acknowledged (Waiting on user)"},
		{"errored", "errored", Idle, "acknowledged (Errored)"},
		{"interrupted", "interrupted", Idle, "acknowledged (Interrupted)"},
		{"a question is not a review", "waiting_permission", WaitingOnUser, "permission"},
		{"a turn in flight", "working", Working, "running Bash"},
		{"a supervisor hold stops", "recovering_hold", Idle, "recovery stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSession(tt.base)
			s.NeedsAttention = true
			s.Nudge = NudgeBudget{Attempts: 3}
			got := Apply(s, Event{Kind: EvAcknowledged}, t0)
			if got.NeedsAttention {
				t.Errorf("NeedsAttention still set")
			}
			if got.State != tt.state || !strings.Contains(got.Evidence, tt.evidence) {
				t.Errorf("-> %v %q, want %v %q", got.State, got.Evidence, tt.state, tt.evidence)
			}
			if tt.state == Idle {
				if got.WaitReason != NoWait || !got.Failure.IsZero() || got.Nudge != (NudgeBudget{}) {
					t.Errorf("acknowledged but kept wait=%q failure=%+v nudge=%+v", got.WaitReason, got.Failure, got.Nudge)
				}
			} else if got.Failure != s.Failure || got.Nudge != s.Nudge {
				t.Errorf("ack without a state change touched failure/nudge: %+v %+v", got.Failure, got.Nudge)
			}
		})
	}
}

func TestApplyToolAndTaskCalls(t *testing.T) {
	s := Apply(baseSession("working"), Event{Kind: EvToolStarted, CallID: "t2", Name: "Grep"}, t0)
	if c, ok := s.OpenTools["t2"]; !ok || c.Name != "Grep" || !c.Started.Equal(t0) {
		t.Errorf("t2 not recorded: %v", s.OpenTools)
	}
	if len(s.OpenTools) != 2 {
		t.Errorf("OpenTools = %v, want t1 and t2", s.OpenTools)
	}
	if old, ok := s.OldestOpenCall(); !ok || old.Name != "Bash" {
		t.Errorf("oldest open call = %v, want Bash", old)
	}
	s = Apply(s, Event{Kind: EvToolFinished, CallID: "t1"}, t0.Add(time.Second))
	if _, ok := s.OpenTools["t1"]; ok || s.Evidence != "Bash finished" {
		t.Errorf("t1 not closed or named from the open call: %v %q", s.OpenTools, s.Evidence)
	}
	s = Apply(s, Event{Kind: EvToolFinished, CallID: "unknown", Name: "Read"}, t0.Add(2*time.Second))
	if len(s.OpenTools) != 1 || s.Evidence != "Read finished" {
		t.Errorf("finishing an unknown call: %v %q", s.OpenTools, s.Evidence)
	}
	s = Apply(s, Event{Kind: EvToolFinished, CallID: "nothing"}, t0.Add(3*time.Second))
	if s.Evidence != "tool finished" {
		t.Errorf("evidence for an unnamed call = %q", s.Evidence)
	}
	// A call without an id is keyed by its name.
	s = Apply(s, Event{Kind: EvToolStarted, Name: "WebFetch"}, t0.Add(4*time.Second))
	if _, ok := s.OpenTools["WebFetch"]; !ok {
		t.Errorf("a call without an id was not keyed by name: %v", s.OpenTools)
	}
	s = Apply(s, Event{Kind: EvTaskStarted, CallID: "b7"}, t0.Add(5*time.Second))
	if _, ok := s.OpenTasks["b7"]; !ok || s.Evidence != "background task b7 started" || !s.HasOpenWork() {
		t.Errorf("task: %v %q", s.OpenTasks, s.Evidence)
	}
	s = Apply(s, Event{Kind: EvTaskFinished, CallID: "b7"}, t0.Add(6*time.Second))
	if len(s.OpenTasks) != 0 || s.Evidence != "background task b7 finished" {
		t.Errorf("task finished: %v %q", s.OpenTasks, s.Evidence)
	}
	s = Apply(s, Event{Kind: EvTurnCompleted}, t0.Add(7*time.Second))
	if s.HasOpenWork() {
		t.Errorf("a completed turn left open work: %v %v", s.OpenTools, s.OpenTasks)
	}
}

// BUG: a tool or task that starts while no turn is in flight (a late stream
// line after the result, or an observed session's backlog) is recorded as
// open work on a session whose turn is over; endTurn's invariant, "no open
// calls without a turn", no longer holds.
func TestApplyNoOpenCallsOutsideTurn(t *testing.T) {
	for _, base := range baseNames {
		s := baseSession(base)
		if s.InTurn {
			continue
		}
		for _, e := range []Event{{Kind: EvToolStarted, CallID: "late", Name: "Bash"}, {Kind: EvTaskStarted, CallID: "late", Name: "build"}} {
			got := Apply(s, e, t0)
			if !got.InTurn && got.HasOpenWork() {
				t.Errorf("%s + %v: no turn in flight but open work %v %v", base, e.Kind, got.OpenTools, got.OpenTasks)
			}
		}
	}
}

func TestApplyWaitingOnUser(t *testing.T) {
	perm := &Permission{RequestID: "req-9", Tool: "Write"}
	got := Apply(baseSession("working"), Event{Kind: EvWaitingOnUser, Reason: WaitPermission, Permission: perm}, t0)
	if got.State != WaitingOnUser || got.WaitReason != WaitPermission || !got.InTurn {
		t.Fatalf("-> %v %q inTurn=%v", got.State, got.WaitReason, got.InTurn)
	}
	if got.Permission == nil || *got.Permission != *perm || got.Permission == perm {
		t.Errorf("Permission = %v, want a copy of %v", got.Permission, perm)
	}
	if got.Evidence != "the agent asks permission to use Write" {
		t.Errorf("evidence %q", got.Evidence)
	}
	perm.Tool = "changed"
	if got.Permission.Tool != "Write" {
		t.Errorf("the session aliases the event's permission")
	}
	for reason, want := range map[WaitReason]string{
		WaitQuestion: "question", WaitPlan: "approve its plan", WaitPermission: "permission to use a tool",
		WaitReview: "waiting for review", NoWait: "waiting on you",
	} {
		got := Apply(baseSession("working"), Event{Kind: EvWaitingOnUser, Reason: reason}, t0)
		if got.WaitReason != reason || !strings.Contains(got.Evidence, want) || got.Permission != nil {
			t.Errorf("%q: wait=%q evidence=%q perm=%v", reason, got.WaitReason, got.Evidence, got.Permission)
		}
	}
	// Answered: the turn goes on, the request is gone.
	got = Apply(got, Event{Kind: EvUserAnswered}, t0.Add(time.Second))
	if got.State != Working || got.WaitReason != NoWait || got.Permission != nil {
		t.Errorf("answered: %v %q %v", got.State, got.WaitReason, got.Permission)
	}
}

// BUG: EvUserAnswered means "the pending question/permission was answered"
// (event.go). With nothing pending it must not move a session: a terminal
// error, an interruption, a supervisor hold and a review (which lasts "until
// acknowledged") all collapse to Idle today, and a compaction in flight
// becomes Working.
func TestApplyUserAnsweredOnlyResolvesAPendingWait(t *testing.T) {
	for _, base := range []string{"errored", "interrupted", "recovering_hold", "waiting_review", "compacting"} {
		s := baseSession(base)
		got := Apply(s, Event{Kind: EvUserAnswered}, t0)
		if got.State != s.State || got.Failure != s.Failure || got.WaitReason != s.WaitReason {
			t.Errorf("%s + user_answered -> %v (wait %q, failure %v, %q); want %v unchanged",
				base, got.State, got.WaitReason, got.Failure.Kind, got.Evidence, s.State)
		}
	}
	// A late answer after the process died mid-question must not hide the interruption.
	s := Apply(baseSession("waiting_permission"), Event{Kind: EvProcessExited, Signal: "SIGKILL"}, t0)
	s = Apply(s, Event{Kind: EvUserAnswered}, t0.Add(time.Second))
	if s.State != Interrupted {
		t.Errorf("exit while asking, then a late answer -> %v %q; want Interrupted", s.State, s.Evidence)
	}
}

// BUG: the late-completion guard covers Errored only. A supervisor hold
// (Recovering with no turn in flight, e.g. waiting out a rate limit) is the
// same terminal failure being worked on, and a stale completion wipes it
// (failure cleared, nudge budget refilled, state WaitingOnUser(review)).
// EvIdle and EvProcessExited already respect it (holdsAfterTurn).
func TestApplyStaleTurnCompletedKeepsHeldFailure(t *testing.T) {
	s := baseSession("recovering_hold")
	s.Nudge = NudgeBudget{Attempts: 2}
	got := Apply(s, Event{Kind: EvTurnCompleted}, t0)
	if got.State != Recovering || got.Failure != s.Failure || got.Nudge != s.Nudge {
		t.Errorf("Recovering(hold) + stale turn_completed -> %v failure=%+v nudge=%+v %q; want the hold kept",
			got.State, got.Failure, got.Nudge, got.Evidence)
	}
	for _, k := range []EventKind{EvIdle, EvProcessExited, EvSessionEnded} {
		if got := Apply(s, Event{Kind: k}, t0); got.State != Recovering || got.Failure != s.Failure {
			t.Errorf("Recovering(hold) + %v -> %v %+v", k, got.State, got.Failure)
		}
	}
}

// BUG: an abort with no turn in flight is stale. It turns a terminal error,
// a supervisor hold or a finished turn awaiting review into Interrupted, which
// the supervisor answers with the continuation nudge: a rate-limited session
// gets nudged, and a finished turn is "continued".
func TestApplyStaleTurnAbortedKeepsHeldState(t *testing.T) {
	for _, base := range []string{"errored", "recovering_hold", "waiting_review"} {
		s := baseSession(base)
		got := Apply(s, Event{Kind: EvTurnAborted}, t0)
		if got.State != s.State || got.Failure != s.Failure || got.WaitReason != s.WaitReason {
			t.Errorf("%s + stale turn_aborted -> %v (failure %v, wait %q, %q); want %v unchanged",
				base, got.State, got.Failure.Kind, got.WaitReason, got.Evidence, s.State)
		}
	}
}

// BUG (consistency): WaitReason and Permission describe a WaitingOnUser
// session; the JSON contract shows them to API clients. Several transitions
// out of WaitingOnUser leave them behind (e.g. a Working session reporting
// wait_reason "permission").
func TestApplyWaitReasonOnlyWhileWaiting(t *testing.T) {
	waiting := []Session{baseSession("waiting_permission"), baseSession("waiting_review")}
	q := Apply(baseSession("idle"), Event{Kind: EvWaitingOnUser, Reason: WaitQuestion}, t0.Add(-time.Minute))
	waiting = append(waiting, q)
	for _, s := range waiting {
		for _, k := range AllEventKinds() {
			got := Apply(s, matrixEvent(k), t0)
			if got.State != WaitingOnUser && (got.WaitReason != NoWait || got.Permission != nil) {
				t.Errorf("WaitingOnUser(%s) + %v -> %v still has wait reason %q, permission %v",
					s.WaitReason, k, got.State, got.WaitReason, got.Permission)
			}
		}
	}
}

func TestApplySessionIdentity(t *testing.T) {
	got := Apply(baseSession("idle"), Event{Kind: EvSessionInit, AgentSessionID: "agent-new"}, t0)
	if got.AgentSessionID != "agent-new" {
		t.Errorf("AgentSessionID = %q", got.AgentSessionID)
	}
	got = Apply(got, Event{Kind: EvActivity}, t0)
	if got.AgentSessionID != "agent-new" {
		t.Errorf("an event without an id cleared it: %q", got.AgentSessionID)
	}
	got = Apply(baseSession("idle"), Event{Kind: EvProcessStarted, PID: 321}, t0)
	if got.PID != 321 || !got.ProcessAlive || got.State != Idle || got.Evidence != "agent process 321 started; no turn yet" {
		t.Errorf("process started: pid=%d alive=%v %v %q", got.PID, got.ProcessAlive, got.State, got.Evidence)
	}
	// A restarted process mid-incident keeps the incident's state and evidence.
	e := baseSession("errored")
	e.ProcessAlive = false
	got = Apply(e, Event{Kind: EvProcessStarted, PID: 322}, t0)
	if got.State != Errored || got.Evidence != e.Evidence || !got.ProcessAlive {
		t.Errorf("process restarted while errored: %v %q", got.State, got.Evidence)
	}
}

// richSession has every map and pointer set, so aliasing shows.
func richSession() Session {
	s := baseSession("waiting_permission")
	by, code := ByUser, 9
	s.OpenTools = map[string]OpenCall{"t1": {Name: "Bash", Started: t0.Add(-time.Minute)}}
	s.OpenTasks = map[string]OpenCall{"b1": {Name: "build", Started: t0.Add(-time.Minute)}}
	s.InterruptBy = &by
	s.LastExitCode = &code
	s.Failure = Failure{Kind: Overloaded, RetryAt: t0, Message: "m"}
	s.CompactionStarted = t0.Add(-time.Second)
	s.NeedsAttention = true
	return s
}

func TestApplyNeverMutatesItsInput(t *testing.T) {
	events := []Event{}
	for _, k := range append(AllEventKinds(), EvUnknown) {
		events = append(events, matrixEvent(k))
	}
	// The events that touch maps and pointers, with the keys already present.
	events = append(events,
		Event{Kind: EvToolFinished, CallID: "t1"}, Event{Kind: EvTaskFinished, CallID: "b1"},
		Event{Kind: EvToolStarted, CallID: "t1", Name: "Other"}, Event{Kind: EvTaskStarted, CallID: "b1", Name: "Other"},
		Event{Kind: EvInterruptRequested, By: BySupervisor}, Event{Kind: EvProcessExited, ExitCode: 4},
		Event{Kind: EvWaitingOnUser, Reason: WaitPermission, Permission: &Permission{RequestID: "x", Tool: "y"}},
	)
	inputs := []Session{richSession()}
	for _, b := range baseNames {
		inputs = append(inputs, baseSession(b))
	}
	for _, s := range inputs {
		for _, e := range events {
			before := s.Clone()
			got := Apply(s, e, t0)
			if !reflect.DeepEqual(s, before) {
				t.Fatalf("%v + %v mutated the input:\n got %+v\nwant %+v", s.State, e.Kind, s, before)
			}
			// Writing through the result must not reach the input either.
			if got.OpenTools != nil {
				got.OpenTools["poison"] = OpenCall{}
			}
			if got.OpenTasks != nil {
				got.OpenTasks["poison"] = OpenCall{}
			}
			if got.Permission != nil {
				got.Permission.Tool = "poison"
			}
			if got.InterruptBy != nil {
				*got.InterruptBy = 7
			}
			if got.LastExitCode != nil {
				*got.LastExitCode = 77
			}
			if !reflect.DeepEqual(s, before) {
				t.Fatalf("%v + %v: the result shares memory with the input", s.State, e.Kind)
			}
		}
	}
}

// Supervision is only supervisor.Reconcile's to write. Apply must carry it
// through untouched, whatever the event.
func TestApplyNeverTouchesSupervision(t *testing.T) {
	st := reflect.TypeFor[Session]()
	var fields []int
	for i := range st.NumField() {
		if ft := st.Field(i).Type; ft == reflect.TypeFor[Supervision]() || ft == reflect.TypeFor[*Supervision]() {
			fields = append(fields, i)
		}
	}
	if len(fields) == 0 {
		t.Fatal("Session has no Supervision field")
	}
	sup := Supervision{
		Recovery: "rate_limit", RecoveryAttempts: 2, NextAttemptAt: t0.Add(time.Hour),
		InterruptSentAt: t0.Add(-time.Minute), EscalatedGeneration: 3,
	}
	set := func(s *Session) {
		for _, i := range fields {
			f := reflect.ValueOf(s).Elem().Field(i)
			if f.Kind() == reflect.Pointer {
				c := sup
				f.Set(reflect.ValueOf(&c))
			} else {
				f.Set(reflect.ValueOf(sup))
			}
		}
	}
	get := func(s Session) []any {
		var out []any
		for _, i := range fields {
			f := reflect.ValueOf(s).Field(i)
			if f.Kind() == reflect.Pointer {
				if f.IsNil() {
					out = append(out, nil)
					continue
				}
				f = f.Elem()
			}
			out = append(out, f.Interface())
		}
		return out
	}
	for _, b := range baseNames {
		for _, k := range append(AllEventKinds(), EvUnknown) {
			s := baseSession(b)
			set(&s)
			want := get(s)
			got := get(Apply(s, matrixEvent(k), t0))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s + %v changed Supervision: %+v, want %+v", b, k, got, want)
			}
		}
	}
}

// Issue 10, item 2: a stop the user asked for ends as the user's stop however
// the turn then ends, and a later stall interrupt does not take it over.
func TestApplyUserStopSurvivesEveryEnding(t *testing.T) {
	stopped := Apply(baseSession("working"), Event{Kind: EvInterruptRequested, By: ByUser}, t0.Add(-time.Minute))
	tests := []struct {
		name   string
		events []Event
	}{
		{"abort", []Event{{Kind: EvTurnAborted}}},
		{"exit before the abort", []Event{{Kind: EvProcessExited, ExitCode: 143}}},
		{"killed", []Event{{Kind: EvProcessExited, Signal: "SIGKILL"}}},
		{"session ended", []Event{{Kind: EvSessionEnded}}},
		{"stall interrupt, then abort", []Event{{Kind: EvInterruptRequested, By: BySupervisor}, {Kind: EvTurnAborted}}},
		{"stall interrupt, then exit", []Event{{Kind: EvInterruptRequested, By: BySupervisor}, {Kind: EvProcessExited, Signal: "SIGKILL"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := stopped
			for _, e := range tt.events {
				s = Apply(s, e, t0)
			}
			if s.State != WaitingOnUser || s.WaitReason != WaitReview || s.InTurn {
				t.Fatalf("-> %v (%q, in turn %v) %q; want WaitingOnUser(review)", s.State, s.WaitReason, s.InTurn, s.Evidence)
			}
			if !strings.Contains(s.Evidence, "stopped at your request") {
				t.Errorf("evidence %q does not say who stopped it", s.Evidence)
			}
		})
	}
}

// Issue 10, item 3: a process that dies having printed nothing never started
// its turn: Errored(launch) with its exit code and sanitized stderr line, not
// a nudgeable interruption.
func TestApplyLaunchFailure(t *testing.T) {
	launched := func() Session {
		s := Apply(baseSession("idle"), Event{Kind: EvProcessStarted, PID: 77}, t0.Add(-3*time.Second))
		return Apply(s, Event{Kind: EvTurnStarted, By: ByUser}, t0.Add(-2*time.Second))
	}
	tests := []struct {
		name    string
		before  []Event
		exit    Event
		state   State
		failure FailureKind
		want    []string
	}{
		{"nothing printed", nil, Event{Kind: EvProcessExited, ExitCode: 1, Stderr: "fatal: cannot start (bad install)"},
			Errored, Launch, []string{"code 1", "fatal: cannot start (bad install)", "failed to start turn 4"}},
		{"secret in stderr", nil, Event{Kind: EvProcessExited, ExitCode: 2, Stderr: "bad key sk-ant-abcdefghijklmnop"},
			Errored, Launch, []string{"code 2", "[redacted]"}},
		{"killed before init", nil, Event{Kind: EvProcessExited, Signal: "SIGKILL"}, Errored, Launch, []string{"SIGKILL"}},
		{"metrics line only", []Event{{Kind: EvMetrics}}, Event{Kind: EvProcessExited, ExitCode: 1}, Interrupted, NoFailure, []string{"during turn 4"}},
		{"after init", []Event{{Kind: EvSessionInit}}, Event{Kind: EvProcessExited, ExitCode: 1}, Interrupted, NoFailure, []string{"during turn 4"}},
		{"after activity", []Event{{Kind: EvActivity}}, Event{Kind: EvProcessExited, ExitCode: 1}, Interrupted, NoFailure, []string{"during turn 4"}},
		// The app's own bookkeeping is no sign the agent got going.
		{"after the app's interrupt", []Event{{Kind: EvPromptAdded}, {Kind: EvInterruptRequested, By: BySupervisor}},
			Event{Kind: EvProcessExited, ExitCode: 1}, Errored, Launch, []string{"code 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := launched()
			for _, e := range tt.before {
				s = Apply(s, e, t0.Add(-time.Second))
			}
			got := Apply(s, tt.exit, t0)
			if got.State != tt.state || got.Failure.Kind != tt.failure || got.InTurn {
				t.Fatalf("-> %v %v (in turn %v) %q; want %v %v", got.State, got.Failure.Kind, got.InTurn, got.Evidence, tt.state, tt.failure)
			}
			for _, w := range tt.want {
				if !strings.Contains(got.Evidence, w) {
					t.Errorf("evidence %q does not mention %q", got.Evidence, w)
				}
			}
			if strings.Contains(got.Evidence+got.Failure.Message, "sk-ant") {
				t.Errorf("a secret reached the session: %q / %q", got.Evidence, got.Failure.Message)
			}
		})
	}
	// Dead before the first prompt could be written: no turn, same failure.
	s := Apply(baseSession("idle"), Event{Kind: EvProcessStarted, PID: 77}, t0)
	if got := Apply(s, Event{Kind: EvProcessExited, ExitCode: 1, Stderr: "fatal: bad flag"}, t0); got.State != Errored || got.Failure.Kind != Launch ||
		!strings.Contains(got.Evidence, "fatal: bad flag") {
		t.Errorf("died before its first prompt -> %v %v %q", got.State, got.Failure.Kind, got.Evidence)
	}
	// A quiet clean exit of an unprompted process is just a closed session.
	if got := Apply(s, Event{Kind: EvProcessExited}, t0); got.State != Idle {
		t.Errorf("clean exit of an unprompted process -> %v", got.State)
	}
	// The next process starts with a clean slate: a new launch can fail too.
	s = Apply(launched(), Event{Kind: EvActivity}, t0)
	s = Apply(s, Event{Kind: EvTurnCompleted}, t0)
	s = Apply(s, Event{Kind: EvProcessExited}, t0)
	s = Apply(s, Event{Kind: EvProcessStarted, PID: 78}, t0)
	s = Apply(s, Event{Kind: EvTurnStarted, By: BySupervisor}, t0)
	if got := Apply(s, Event{Kind: EvProcessExited, ExitCode: 1}, t0); got.Failure.Kind != Launch {
		t.Errorf("a resumed process that printed nothing -> %v %v", got.State, got.Failure.Kind)
	}
}

func TestStderrLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                                   "",
		"one line":                           "one line",
		"first\nfatal: cannot start\n\n  \n": "fatal: cannot start",
		"x\r\nAuthorization: Bearer abcdefghijkl": "Authorization: [redacted]",
	} {
		if got := StderrLine(in); got != want {
			t.Errorf("StderrLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// Issue 10, item 7: every open permission request is kept until it is
// answered or withdrawn, and the session waits on the user while any is open.
func TestApplyPermissionsStayOpen(t *testing.T) {
	ask := func(id, tool string) Event {
		return Event{Kind: EvWaitingOnUser, Reason: WaitPermission, Permission: &Permission{RequestID: id, Tool: tool}}
	}
	s := Apply(baseSession("working"), ask("r1", "Bash"), t0)
	s = Apply(s, ask("r2", "Write"), t0)
	s = Apply(s, ask("r2", "Write"), t0) // the same request twice is one request
	steps := []struct {
		name  string
		e     Event
		state State
		open  []string
	}{
		{"a parallel tool finishes", Event{Kind: EvToolFinished, CallID: "t1"}, WaitingOnUser, []string{"r1", "r2"}},
		{"a subagent speaks", Event{Kind: EvActivity, Detail: "subagent message"}, WaitingOnUser, []string{"r1", "r2"}},
		{"a status line", Event{Kind: EvCompactionStarted}, WaitingOnUser, []string{"r1", "r2"}},
		{"the agent withdraws r2", Event{Kind: EvUserAnswered, Permission: &Permission{RequestID: "r2"}}, WaitingOnUser, []string{"r1"}},
		{"a withdrawal of an unknown request", Event{Kind: EvUserAnswered, Permission: &Permission{RequestID: "zz"}}, WaitingOnUser, []string{"r1"}},
		{"approve answers the oldest", Event{Kind: EvUserAnswered, Detail: "Bash approved by the user"}, Working, nil},
	}
	for _, st := range steps {
		s = Apply(s, st.e, t0)
		var open []string
		for _, p := range s.Permissions {
			open = append(open, p.RequestID)
		}
		if s.State != st.state || !reflect.DeepEqual(open, st.open) {
			t.Fatalf("%s: -> %v, open %v (%q); want %v, open %v", st.name, s.State, open, s.Evidence, st.state, st.open)
		}
		if st.state == WaitingOnUser && (s.WaitReason != WaitPermission || s.Permission == nil || s.Permission.RequestID != st.open[0]) {
			t.Fatalf("%s: wait %q, permission %+v; want permission %s", st.name, s.WaitReason, s.Permission, st.open[0])
		}
		if st.state != WaitingOnUser && s.Permission != nil {
			t.Fatalf("%s: permission %+v left behind", st.name, s.Permission)
		}
	}
	// A session stored with the single `permission` key keeps its request.
	old := baseSession("waiting_permission")
	old.Permissions = nil
	if got := Apply(old, Event{Kind: EvActivity}, t0); got.State != WaitingOnUser || len(got.Permissions) != 1 {
		t.Errorf("old single permission lost: %v %+v", got.State, got.Permissions)
	}
}

// Issue 10, item 8: stream events are tied to the turn they belong to.
func TestApplyLateStreamEventsAreTiedToTheirTurn(t *testing.T) {
	// A turn that completed, then the user sends the next prompt before the
	// previous turn's idle line arrives.
	s := Apply(baseSession("working"), Event{Kind: EvTurnCompleted}, t0)
	s = Apply(s, Event{Kind: EvTurnStarted, By: ByUser}, t0)
	s = Apply(s, Event{Kind: EvIdle}, t0)
	if s.State != Working || !s.InTurn {
		t.Fatalf("late idle ended the next turn: %v %q", s.State, s.Evidence)
	}
	s = Apply(s, Event{Kind: EvSessionInit}, t0)
	if got := Apply(s, Event{Kind: EvIdle}, t0); got.State != WaitingOnUser || got.InTurn {
		t.Errorf("idle after the turn's own init -> %v, in turn %v", got.State, got.InTurn)
	}

	// A prompt sent as the agent printed its result: the agent starts a turn
	// of its own with it (a fresh init), which must be supervised.
	s = Apply(baseSession("working"), Event{Kind: EvPromptAdded}, t0)
	if !s.LastEventAt.Equal(baseSession("working").LastEventAt) || s.State != Working {
		t.Fatalf("the app's prompt moved the stall clock or the state: %v %v", s.LastEventAt, s.State)
	}
	s = Apply(s, Event{Kind: EvTurnCompleted}, t0)
	s = Apply(s, Event{Kind: EvSessionInit}, t0.Add(time.Second))
	if s.State != Working || !s.InTurn || s.TurnGeneration != 4 {
		t.Fatalf("the raced prompt's turn is unsupervised: %v, in turn %v, gen %d", s.State, s.InTurn, s.TurnGeneration)
	}
	s = Apply(s, Event{Kind: EvTurnCompleted}, t0.Add(2*time.Second))
	if s.State != WaitingOnUser || s.InTurn {
		t.Fatalf("raced turn's result -> %v", s.State)
	}
	// Without a raced prompt an init outside a turn starts nothing.
	if got := Apply(s, Event{Kind: EvSessionInit}, t0.Add(3*time.Second)); got.InTurn || got.TurnGeneration != 4 {
		t.Errorf("a stray init started a turn: gen %d", got.TurnGeneration)
	}
}

// Issue 10, item 14.
func TestApplyIdleWaitsForBackgroundTasks(t *testing.T) {
	s := Apply(baseSession("working"), Event{Kind: EvTaskStarted, CallID: "bg1", Name: "npm test"}, t0)
	s = Apply(s, Event{Kind: EvIdle}, t0)
	if s.State != Working || !s.InTurn || !strings.Contains(s.Evidence, "npm test still running") {
		t.Fatalf("idle with a background task running -> %v, in turn %v %q", s.State, s.InTurn, s.Evidence)
	}
	s = Apply(s, Event{Kind: EvTaskFinished, CallID: "bg1"}, t0)
	if s = Apply(s, Event{Kind: EvIdle}, t0); s.State != WaitingOnUser || s.InTurn {
		t.Errorf("idle after the task finished -> %v", s.State)
	}
}

func TestApplyEscalatedSuspectHasAWayOut(t *testing.T) {
	escalated := baseSession("suspect")
	escalated.NeedsAttention = true
	got := Apply(escalated, Event{Kind: EvActivity}, t0)
	if got.State != Working || got.NeedsAttention {
		t.Errorf("a stalled turn that speaks again -> %v, needs attention %v", got.State, got.NeedsAttention)
	}
	got = Apply(escalated, Event{Kind: EvAcknowledged}, t0)
	if got.State != Idle || got.InTurn || got.NeedsAttention || got.Evidence == "" {
		t.Errorf("acknowledged escalated Suspect -> %v, in turn %v, needs attention %v", got.State, got.InTurn, got.NeedsAttention)
	}
	// Not escalated: ack does not give a live turn up.
	if got := Apply(baseSession("suspect"), Event{Kind: EvAcknowledged}, t0); got.State != Suspect || !got.InTurn {
		t.Errorf("ack of a plain Suspect -> %v", got.State)
	}
}

// TestApplyBringsBackAnArchivedSession: whatever happens to an archived
// session (the user's prompt, its process found running again) brings it
// back to the lists (issue 20, item 11).
func TestApplyBringsBackAnArchivedSession(t *testing.T) {
	for _, e := range []Event{{Kind: EvTurnStarted}, {Kind: EvProcessStarted, PID: 42}, {Kind: EvAcknowledged}} {
		s := Session{ID: "s", State: Idle, Evidence: "idle", ArchivedAt: t0}
		if n := Apply(s, e, t0.Add(time.Hour)); !n.ArchivedAt.IsZero() {
			t.Errorf("%v left the session archived", e.Kind)
		}
		if s.ArchivedAt.IsZero() {
			t.Fatal("Apply changed its input")
		}
	}
}

// TestApplyAckStopsAPendingRecovery: acknowledging a session the supervisor
// holds for a recovery (a rate limit's reset, an auth retry) stops that
// recovery and says so; the agent's own retry inside a turn is the agent's
// and goes on (issue 20, item 12).
func TestApplyAckStopsAPendingRecovery(t *testing.T) {
	s := baseSession("recovering_hold")
	s.NeedsAttention = true
	s.Supervision = Supervision{Recovery: "rate_limit", RecoveryAttempts: 2, NextAttemptAt: t0.Add(time.Hour), IncidentAttempts: 2, EscalatedGeneration: 3}
	n := Apply(s, Event{Kind: EvAcknowledged}, t0)
	if n.State != Idle || n.NeedsAttention || n.Failure.Kind != NoFailure {
		t.Fatalf("after ack: %v attention=%t failure=%v", n.State, n.NeedsAttention, n.Failure)
	}
	// Supervision is Reconcile's (TestApplyNeverTouchesSupervision); it
	// ends the incident at a clean rest (core's TestAckStopsTheRecovery).
	if !strings.Contains(n.Evidence, "acknowledged") || !strings.Contains(n.Evidence, "rate_limit recovery stopped") {
		t.Errorf("evidence %q does not say the recovery was stopped", n.Evidence)
	}

	agent := baseSession("recovering_retry")
	if n := Apply(agent, Event{Kind: EvAcknowledged}, t0); n.State != Recovering || !n.InTurn {
		t.Errorf("the agent's own retry was stopped by an ack: %v in turn %t", n.State, n.InTurn)
	}
}

// TestInterruptCause: every change into Interrupted has a cause for its
// marked_interrupted row; any other change has none (issue 20, item 12).
func TestInterruptCause(t *testing.T) {
	for _, tc := range []struct {
		base string
		e    Event
		want InterruptCause
	}{
		{"working", Event{Kind: EvProcessExited, ExitCode: 1}, CauseExitEvent},
		{"working", Event{Kind: EvTurnAborted}, CauseAbort},
		{"working", Event{Kind: EvObserved, Observed: &ObservedState{State: Interrupted, Evidence: "the process is gone"}}, CauseObservedDeath},
		{"working", Event{Kind: EvActivity}, NoInterruptCause},
		{"interrupted", Event{Kind: EvProcessExited}, NoInterruptCause},
	} {
		prev := baseSession(tc.base)
		next := Apply(prev, tc.e, t0)
		if got := InterruptCauseOf(prev, next, tc.e); got != tc.want {
			t.Errorf("%s + %s -> %s: cause %q, want %q", tc.base, tc.e.Kind, next.State, got, tc.want)
		}
	}
	if CauseBoot.String() != "boot" || CauseProbe.String() != "probe" || CauseExitEvent.String() != "exit_event" || CauseObservedDeath.String() != "observed_death" {
		t.Errorf("cause names: %s %s %s %s", CauseBoot, CauseProbe, CauseExitEvent, CauseObservedDeath)
	}
}
