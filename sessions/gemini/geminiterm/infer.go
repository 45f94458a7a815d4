package geminiterm

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/gemini"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Evidence is everything the rule stack reads about one session at one
// moment: its process and its chat file's summary.
type Evidence struct {
	observe.Liveness
	// Chat is false until the session's chat file is found.
	Chat    bool
	Summary Summary
	// Children is how many processes run under the CLI's (ChildrenKnown
	// false: not looked at, or cannot tell); read while a tool call is
	// pending.
	Children      int
	ChildrenKnown bool
	// Now is the moment of the look.
	Now time.Time
}

// approvalAfter is how long a pending tool call with nothing running under
// the CLI is taken for an approval prompt rather than a quick tool that has
// not written its result yet.
const approvalAfter = 3 * time.Second

// Infer walks the rule stack (observe.Stack) and returns the first
// match's state and the rule's name; the first match wins.
var Infer = observe.Stack[Evidence]{
	InTurn: func(ev Evidence) bool { return ev.Summary.Phase.InTurn() }, Witness: "its chat file shows no end of the turn",
	Failed: ruleFailed, Waiting: ruleApproval, OpenTool: ruleOpenTool, Working: ruleWorking, Ended: ruleTurnEnded, Idle: ruleIdle,
}.Infer

// apiErrorPrefix wraps the API's error body in the CLI's error messages.
const apiErrorPrefix = "[API Error: "

// FailureOf classifies the error message a turn ended on with the managed
// Gemini adapter's rules (the same API bodies reach both).
func FailureOf(f Failure) sessions.Failure {
	text := strings.TrimSpace(f.Message)
	if body, ok := strings.CutPrefix(text, apiErrorPrefix); ok {
		text = strings.TrimSuffix(body, "]")
	}
	return gemini.ClassifyError(statusOf(text), text, f.At)
}

// statusOf reads the HTTP status the API's body carries ({"error":{"code":
// 401,…}}); 0 when it has none.
func statusOf(body string) int {
	i := strings.Index(body, `"code":`)
	if i < 0 {
		return 0
	}
	rest := strings.TrimSpace(body[i+len(`"code":`):])
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	code, _ := strconv.Atoi(rest[:n])
	return code
}

func ruleFailed(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	if t.Phase != Failed {
		return sessions.ObservedState{}, false
	}
	f := FailureOf(t.Failure)
	return observe.TurnFailed(f, "retry after", "15:04:05 MST"), true
}

func ruleApproval(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	if t.Phase == CallPending && ev.ChildrenKnown && ev.Children == 0 && !t.PendingSince.IsZero() &&
		ev.Now.Sub(t.PendingSince) >= approvalAfter {
		// Measured (0.61.0): the approval prompt writes nothing, the call
		// is written once it completed, and a command runs as a child of
		// the CLI; a call pending for seconds with no child waits for you.
		return observe.Waiting(sessions.WaitPermission, "", "a tool call waits for your approval in the terminal (nothing runs under the CLI and the call has not completed)"), true
	}
	if t.Phase != Approval {
		return sessions.ObservedState{}, false
	}
	return observe.Waiting(sessions.WaitPermission, t.Tool, fmt.Sprintf("the agent asks to run %s: approve or deny it in the terminal", observe.OrDefault(t.Tool, "a tool"))), true
}

func ruleOpenTool(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	switch t.Phase {
	case ToolOpen:
		return observe.RunningTool(t.Tool), true
	case CallPending:
		if ev.ChildrenKnown && ev.Children > 0 {
			return sessions.ObservedState{State: sessions.Working, InTurn: true,
				Evidence: "running a tool (a process runs under the CLI)"}, true
		}
		// The call is written only once it completed: until then it runs,
		// or its approval prompt waits in the terminal (the file alone
		// cannot tell which).
		return sessions.ObservedState{State: sessions.Working, InTurn: true,
			Evidence: "the model called a tool that has not completed (running, or waiting for your approval in the terminal)"}, true
	}
	return sessions.ObservedState{}, false
}

// ruleWorking and ruleTurnEnded read the phase alone: each phase they
// know is one sentence of evidence.
var (
	ruleWorking = byPhase(observe.Working, map[Phase]string{
		Prompted: "the chat file shows a turn in flight",
		ToolDone: "the tools completed; their results go back to the model",
	})
	ruleTurnEnded = byPhase(observe.TurnEnded, map[Phase]string{
		Replied:   "the model replied; waiting for review",
		Cancelled: "you stopped the turn in the terminal; waiting for review",
	})
)

// byPhase is a rule that matches the phases of says, with state(its
// sentence).
func byPhase(state func(evidence string) sessions.ObservedState, says map[Phase]string) func(Evidence) (sessions.ObservedState, bool) {
	return func(ev Evidence) (sessions.ObservedState, bool) {
		text, ok := says[ev.Summary.Phase]
		if !ok {
			return sessions.ObservedState{}, false
		}
		return state(text), true
	}
}

func ruleIdle(ev Evidence) (sessions.ObservedState, bool) {
	switch {
	case !ev.Chat || ev.Summary.Phase == NoPrompt:
		return observe.Idle(false), true
	case ev.Summary.Phase == Rewound:
		return sessions.ObservedState{State: sessions.Idle, Evidence: "the conversation was rewound in the terminal"}, true
	}
	return observe.Idle(true), true
}
