package sessions

import (
	"fmt"
	"time"
)

// EventKind is one word of the normalized vocabulary every adapter emits.
type EventKind int

// The event kinds. Adapters translate their CLI's wire format into these and
// nothing else; Apply decides what they mean for the state.
const (
	EvUnknown EventKind = iota
	// EvProcessStarted: the agent process is running (PID set).
	EvProcessStarted
	// EvSessionInit: the agent announced its own session id (Claude system/init).
	EvSessionInit
	// EvTurnStarted: a prompt, a nudge or a retry was sent; a new turn begins.
	EvTurnStarted
	// EvActivity: genuine stream activity (assistant text, thinking, status).
	EvActivity
	// EvMetrics: usage/token-count-only events. Not genuine activity.
	EvMetrics
	EvToolStarted
	EvToolFinished
	EvTaskStarted
	EvTaskFinished
	EvCompactionStarted
	EvCompactionFinished
	// EvWaitingOnUser: a question, a plan approval or a permission prompt.
	EvWaitingOnUser
	// EvUserAnswered: the pending question/permission was answered.
	EvUserAnswered
	// EvRetryScheduled: the agent's own backoff before its next attempt.
	EvRetryScheduled
	EvTurnCompleted
	EvTurnFailed
	// EvInterruptRequested: an interrupt was sent, by the user or the supervisor.
	EvInterruptRequested
	// EvTurnAborted: the turn ended because of an interrupt.
	EvTurnAborted
	// EvIdle: the agent reports it is idle (Claude session_state_changed idle).
	EvIdle
	// EvAcknowledged: the user reviewed the session (ack).
	EvAcknowledged
	EvProcessExited
	EvSessionEnded
	// EvPromptAdded: the app wrote a prompt into the turn in flight (the
	// agent injects it into the running turn, or starts a turn with it if
	// the turn ended first). The app's own doing, so not genuine activity.
	EvPromptAdded
	// EvObserved: an external source's inference about a session the app
	// did not launch (a terminal session), carried in Event.Observed. Apply
	// takes the inferred state as-is; see ObservedState.
	EvObserved
)

var eventNames = []string{
	"unknown", "process_started", "session_init", "turn_started", "activity", "metrics",
	"tool_started", "tool_finished", "task_started", "task_finished",
	"compaction_started", "compaction_finished", "waiting_on_user", "user_answered",
	"retry_scheduled", "turn_completed", "turn_failed", "interrupt_requested", "turn_aborted",
	"idle", "acknowledged", "process_exited", "session_ended", "prompt_added", "observed",
}

// AllEventKinds lists every real event kind (not EvUnknown), for tables.
func AllEventKinds() []EventKind {
	out := make([]EventKind, 0, len(eventNames)-1)
	for k := EvProcessStarted; int(k) < len(eventNames); k++ {
		out = append(out, k)
	}
	return out
}

func (k EventKind) String() string               { return enumString(eventNames, k) }
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }
func (k *EventKind) UnmarshalText(b []byte) error {
	return parseInto(k, "event kind", eventNames, b)
}

// Genuine reports whether the event is real stream activity that refreshes
// the stall clock. Metrics-only events and the app's own bookkeeping are not.
func (k EventKind) Genuine() bool {
	switch k {
	case EvMetrics, EvUnknown, EvAcknowledged, EvInterruptRequested, EvProcessExited, EvSessionEnded, EvProcessStarted, EvPromptAdded:
		return false
	}
	return true
}

// fromAgent reports whether the event is something the agent process itself
// printed, as opposed to the app's own bookkeeping (a process it started, a
// prompt or an interrupt it sent, an acknowledgement). A process that exits
// having printed nothing never got going: a launch failure.
func (k EventKind) fromAgent() bool {
	switch k {
	case EvUnknown, EvProcessStarted, EvTurnStarted, EvPromptAdded, EvInterruptRequested,
		EvAcknowledged, EvProcessExited, EvSessionEnded:
		return false
	}
	return true
}

// Event is one normalized observation about a session.
type Event struct {
	Kind EventKind `json:"kind"`
	// CallID and Name identify a tool call or background task.
	CallID string `json:"call_id,omitempty"`
	Name   string `json:"name,omitempty"`
	// AgentSessionID, when set, is the agent's own session id.
	AgentSessionID string `json:"agent_session_id,omitempty"`
	PID            int    `json:"pid,omitempty"`
	// PIDStart is the started process's start stamp (EvProcessStarted).
	PIDStart string `json:"pid_start,omitempty"`
	// OK is the outcome of a compaction.
	OK     bool       `json:"ok,omitempty"`
	Reason WaitReason `json:"reason,omitempty"`
	// Permission is the request behind a permission wait.
	Permission *Permission `json:"permission,omitempty"`
	// Attempt, MaxAttempts, Delay and Status describe an agent retry.
	Attempt     int           `json:"attempt,omitempty"`
	MaxAttempts int           `json:"max_attempts,omitempty"`
	Delay       time.Duration `json:"delay,omitempty"`
	Status      int           `json:"status,omitempty"`
	Failure     Failure       `json:"failure,omitzero"`
	ExitCode    int           `json:"exit_code,omitempty"`
	Signal      string        `json:"signal,omitempty"`
	// Stderr is the last line of the agent's stderr on EvProcessExited,
	// already sanitized (see StderrLine): it explains a launch failure.
	Stderr string `json:"stderr,omitempty"`
	By     Actor  `json:"by,omitempty"`
	// Detail is a short sanitized phrase for evidence ("compaction failed: too few messages").
	Detail string `json:"detail,omitempty"`
	// Observed is the inferred state an EvObserved carries.
	Observed *ObservedState `json:"observed,omitempty"`
	// Usage is a usage report the agent printed with this event (any kind:
	// Claude's carries it on an assistant message, Codex's on a metrics
	// notification). Apply counts it into Session.Usage.
	Usage *UsageReport `json:"usage,omitempty"`
	// Todos is the agent's task list as it stands after this event (a
	// TodoWrite call, a task created or updated, a Codex plan update).
	Todos *TodoProgress `json:"todos,omitempty"`
	// RateWindow is a plan usage window the agent reported with this
	// event (any kind; usually a metrics line). One per event, so an Event
	// stays comparable: an agent that reports two emits two events.
	RateWindow *RateWindow `json:"rate_window,omitempty"`
}

// ObservedState is what an external source inferred about a session it
// watches from outside (its files, its process): the first matching rule of
// its rule stack decided State, and Evidence is that rule's sentence. A
// source that only watches cannot see individual stream events reliably (a
// transcript is flushed late, a permission prompt is never written), so it
// reports a whole state and Apply takes it as-is, keeping the turn
// bookkeeping (InTurn, the generation) consistent with it.
type ObservedState struct {
	State State      `json:"state"`
	Wait  WaitReason `json:"wait,omitempty"`
	// Failure is the API error the state rests on, if any.
	Failure Failure `json:"failure,omitzero"`
	// InTurn: a turn is in flight (a prompt not yet answered).
	InTurn bool `json:"in_turn"`
	// NewTurns counts the turns that started since the source's previous
	// observation: a turn can start and end between two reads (a quick
	// answer), and it still is a turn (a new generation).
	NewTurns int `json:"new_turns,omitempty"`
	// Tool is the open tool call's name, if one is open.
	Tool     string `json:"tool,omitempty"`
	Evidence string `json:"evidence"`
	// Name, when set, names the session (the agent's own name for it, or
	// its first prompt's heading).
	Name string `json:"name,omitempty"`
	// Hooked: the agent's hook events reach the source (the session is
	// then Source Hooked, not Observed).
	Hooked bool `json:"hooked,omitempty"`
	// Permission is the tool call a permission dialog in the terminal asks
	// about, when the source can tell (WaitPermission). It has no request
	// id: it is answered in the terminal, never by the app.
	Permission *Permission `json:"permission,omitempty"`
	// Aborted: the turn ended with an interrupt (Claude's "[Request
	// interrupted by user]"). The agent writes the same marker whoever
	// asked, the user in the terminal or the supervisor through the
	// session's inbox; Apply tells them apart by Session.InterruptBy.
	Aborted bool `json:"aborted,omitempty"`
}

// Describe is a one-line human description of the event for the timeline.
func (e Event) Describe() string {
	switch e.Kind {
	case EvToolStarted, EvToolFinished, EvTaskStarted, EvTaskFinished:
		return fmt.Sprintf("%s %s", e.Kind, e.Name)
	case EvObserved:
		if e.Observed != nil {
			return fmt.Sprintf("observed %s: %s", e.Observed.State, e.Observed.Evidence)
		}
	case EvRetryScheduled:
		return fmt.Sprintf("agent retry %d in %s (status %d)", e.Attempt, e.Delay.Round(time.Second), e.Status)
	case EvTurnFailed:
		return fmt.Sprintf("turn failed: %s: %s", e.Failure.Kind.Label(), e.Failure.Message)
	case EvProcessExited:
		return exitPhrase(e)
	}
	if e.Detail != "" {
		return fmt.Sprintf("%s: %s", e.Kind, e.Detail)
	}
	return e.Kind.String()
}
