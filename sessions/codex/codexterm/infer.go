package codexterm

import (
	"fmt"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/codex"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Evidence is everything the rule stack reads about one session at one
// moment: its process and its rollout's summary.
type Evidence struct {
	observe.Liveness
	// Rollout is false until the session's rollout is found (Codex writes
	// it at the first prompt).
	Rollout bool
	Summary Summary
}

// Infer walks the rule stack (observe.Stack) and returns the first
// match's state and the rule's name; the first match wins (protocol
// §2.4: task_started without task_complete or turn_aborted is a turn in
// flight, a call without its output an open tool, task_complete's
// error.codex_error_info the failure class).
var Infer = observe.Stack[Evidence]{
	InTurn: func(ev Evidence) bool { return ev.Summary.InTurn }, Witness: "its rollout shows no end of the turn",
	Failed: ruleFailed, Waiting: ruleWaiting, OpenTool: ruleOpenTool, Working: ruleWorking, Ended: ruleTurnEnded, Idle: ruleIdle,
}.Infer

func ruleFailed(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	if !t.Ended || t.Failure == nil {
		return sessions.ObservedState{}, false
	}
	f := sessions.Failure{Kind: codex.FailureKindOf(t.Failure.Info, t.Failure.Message),
		Message: sessions.SanitizeMessage(t.Failure.Message)}
	if f.Kind == sessions.RateLimit && !t.ResetsAt.IsZero() {
		f.RetryAt = t.ResetsAt
	}
	return observe.TurnFailed(f, "the limit resets at", "15:04 MST"), true
}

func ruleWaiting(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	if !t.InTurn {
		return sessions.ObservedState{}, false
	}
	for _, c := range t.Open {
		switch {
		case c.Name == "request_user_input":
			return observe.Waiting(sessions.WaitQuestion, c.Name, "the agent asks you a question in the terminal"), true
		case c.Escalated && t.ApprovalPolicy != "never":
			// The approval prompt is drawn in the terminal only; the
			// rollout shows the call asking to leave the sandbox, with no
			// output yet.
			return observe.Waiting(sessions.WaitPermission, c.Name, fmt.Sprintf("the agent asks to run %s outside the sandbox: approve or deny it in the terminal", observe.OrDefault(c.Name, "a command"))), true
		}
	}
	return sessions.ObservedState{}, false
}

func ruleOpenTool(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	if !t.InTurn || len(t.Open) == 0 {
		return sessions.ObservedState{}, false
	}
	name := t.Open[len(t.Open)-1].Name
	return observe.RunningTool(name), true
}

func ruleWorking(ev Evidence) (sessions.ObservedState, bool) {
	if !ev.Summary.InTurn {
		return sessions.ObservedState{}, false
	}
	return observe.Working("the rollout shows a turn in flight"), true
}

func ruleTurnEnded(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	switch {
	case !t.Ended:
		return sessions.ObservedState{}, false
	case t.Aborted == "interrupted":
		return observe.Stopped(), true
	case t.Aborted != "":
		return observe.TurnEnded(fmt.Sprintf("the turn was aborted (%s); waiting for review", t.Aborted)), true
	}
	return observe.TurnEnded("the turn ended; waiting for review"), true
}

func ruleIdle(ev Evidence) (sessions.ObservedState, bool) {
	if !ev.Rollout || ev.Summary.Turns == 0 && !ev.Summary.Ended {
		return observe.Idle(false), true
	}
	return observe.Idle(true), true
}
