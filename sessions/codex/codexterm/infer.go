package codexterm

import (
	"fmt"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/codex"
)

// Evidence is everything the rule stack reads about one session at one
// moment: its process and its rollout's summary.
type Evidence struct {
	PID int
	// Alive and Known are the process probe (Known false: cannot tell).
	Alive, Known bool
	// Rollout is false until the session's rollout is found (Codex writes
	// it at the first prompt).
	Rollout bool
	Summary Summary
}

// Rule is one step of the stack: it matches or not, and when it matches it
// decides the state and writes the evidence sentence.
type Rule struct {
	Name  string
	Match func(Evidence) (sessions.ObservedState, bool)
}

// Rules is the stack, walked in order; the first match wins (protocol
// §2.4: task_started without task_complete or turn_aborted is a turn in
// flight, a call without its output an open tool, task_complete's
// error.codex_error_info the failure class).
var Rules = []Rule{
	{"process gone", ruleProcessGone},
	{"turn failed", ruleFailed},
	{"waiting on the user", ruleWaiting},
	{"open tool", ruleOpenTool},
	{"turn in flight", ruleWorking},
	{"turn ended", ruleTurnEnded},
	{"idle", ruleIdle},
}

// Infer walks the rule stack and returns the first match's state and the
// rule's name.
func Infer(ev Evidence) (sessions.ObservedState, string) {
	for _, r := range Rules {
		if o, ok := r.Match(ev); ok {
			return o, r.Name
		}
	}
	return sessions.ObservedState{State: sessions.Idle, Evidence: "nothing observed"}, "idle"
}

func ruleProcessGone(ev Evidence) (sessions.ObservedState, bool) {
	if !ev.Known || ev.Alive {
		return sessions.ObservedState{}, false
	}
	if ev.Summary.InTurn {
		return sessions.ObservedState{State: sessions.Interrupted,
			Evidence: fmt.Sprintf("process %d is gone mid-turn (its rollout shows no end of the turn)", ev.PID)}, true
	}
	return sessions.ObservedState{State: sessions.Idle, Evidence: fmt.Sprintf("process %d is gone", ev.PID)}, true
}

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
	text := fmt.Sprintf("the turn failed (%s)", f.Kind.Label())
	if !f.RetryAt.IsZero() {
		text += fmt.Sprintf("; the limit resets at %s", f.RetryAt.Format("15:04 MST"))
	}
	return sessions.ObservedState{State: sessions.Errored, Failure: f, Evidence: text}, true
}

func ruleWaiting(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	if !t.InTurn {
		return sessions.ObservedState{}, false
	}
	for _, c := range t.Open {
		switch {
		case c.Name == "request_user_input":
			return sessions.ObservedState{State: sessions.WaitingOnUser, Wait: sessions.WaitQuestion, InTurn: true, Tool: c.Name,
				Evidence: "the agent asks you a question in the terminal"}, true
		case c.Escalated && t.ApprovalPolicy != "never":
			// The approval prompt is drawn in the terminal only; the
			// rollout shows the call asking to leave the sandbox, with no
			// output yet.
			return sessions.ObservedState{State: sessions.WaitingOnUser, Wait: sessions.WaitPermission, InTurn: true, Tool: c.Name,
				Evidence: fmt.Sprintf("the agent asks to run %s outside the sandbox: approve or deny it in the terminal", orDefault(c.Name, "a command"))}, true
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
	return sessions.ObservedState{State: sessions.Working, InTurn: true, Tool: name,
		Evidence: fmt.Sprintf("running %s", orDefault(name, "a tool"))}, true
}

func ruleWorking(ev Evidence) (sessions.ObservedState, bool) {
	if !ev.Summary.InTurn {
		return sessions.ObservedState{}, false
	}
	return sessions.ObservedState{State: sessions.Working, InTurn: true, Evidence: "the rollout shows a turn in flight"}, true
}

func ruleTurnEnded(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	switch {
	case !t.Ended:
		return sessions.ObservedState{}, false
	case t.Aborted == "interrupted":
		return sessions.ObservedState{State: sessions.WaitingOnUser, Wait: sessions.WaitReview,
			Evidence: "you stopped the turn in the terminal; waiting for review"}, true
	case t.Aborted != "":
		return sessions.ObservedState{State: sessions.WaitingOnUser, Wait: sessions.WaitReview,
			Evidence: fmt.Sprintf("the turn was aborted (%s); waiting for review", t.Aborted)}, true
	}
	return sessions.ObservedState{State: sessions.WaitingOnUser, Wait: sessions.WaitReview,
		Evidence: "the turn ended; waiting for review"}, true
}

func ruleIdle(ev Evidence) (sessions.ObservedState, bool) {
	if !ev.Rollout || ev.Summary.Turns == 0 && !ev.Summary.Ended {
		return sessions.ObservedState{State: sessions.Idle, Evidence: "no prompt yet in the terminal"}, true
	}
	return sessions.ObservedState{State: sessions.Idle, Evidence: "nothing in flight"}, true
}
