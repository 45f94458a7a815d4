package claudeterm

import (
	"fmt"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Evidence is everything the rule stack reads about one session at one
// moment: its process, its session file, and its transcript's summary.
type Evidence struct {
	observe.Liveness
	File       SessionFile
	Transcript Summary
	// Hook is the session's newest hook event (nil: none arrived).
	Hook *HookEvent
}

// Rule is one step of the stack: it matches or not, and when it matches it
// decides the state and writes the evidence sentence (observe.Rule).
type Rule = observe.Rule[Evidence]

// Rules is the stack, walked in order; the first match wins. The session
// file's status is evidence like any other, not the whole truth: it says
// idle after an API error, so the error rule comes first.
var Rules = []Rule{
	{Name: "process gone", Match: ruleProcessGone},
	{Name: "API error", Match: ruleAPIError},
	{Name: "hook: turn failed", Match: ruleHookFailure},
	{Name: "waiting on the user", Match: ruleWaiting},
	{Name: "hook: waiting on the user", Match: ruleHookWaiting},
	{Name: "compacting", Match: ruleCompacting},
	{Name: "hook: compacting", Match: ruleHookCompacting},
	{Name: "open tool", Match: ruleOpenTool},
	{Name: "turn in flight", Match: ruleWorking},
	{Name: "hook: prompt sent", Match: ruleHookPrompt},
	{Name: "turn ended", Match: ruleTurnEnded},
	{Name: "hook: turn ended", Match: ruleHookStopped},
	{Name: "idle", Match: ruleIdle},
}

// Infer walks the rule stack and returns the first match's state and the
// rule's name.
func Infer(ev Evidence) (sessions.ObservedState, string) {
	return observe.Infer(Rules, ev)
}

func ruleProcessGone(ev Evidence) (sessions.ObservedState, bool) {
	return ev.Gone(ev.Transcript.InTurn, "killed or crashed: its session file was left behind")
}

func ruleAPIError(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Transcript
	if rt := t.Retry; rt != nil {
		f := sessions.Failure{Kind: sessions.KindFromStatus(rt.Status), RetryAt: rt.RetryAt, Message: rt.Message}
		attempt := fmt.Sprintf("%d", rt.Attempt)
		if rt.Max > 0 {
			attempt = fmt.Sprintf("%d/%d", rt.Attempt, rt.Max)
		}
		return sessions.ObservedState{State: sessions.Recovering, InTurn: true, Failure: f,
			Evidence: fmt.Sprintf("the CLI retries after an API error %d (attempt %s)", rt.Status, attempt)}, true
	}
	e := t.APIError
	if e == nil {
		return sessions.ObservedState{}, false
	}
	f, ev2 := turnDied(e, "")
	if ev.File.Status == "idle" {
		ev2 += "; the CLI says idle"
	}
	return sessions.ObservedState{State: sessions.Errored, Failure: f, Evidence: ev2}, true
}

// AutoContinueWindow is how long after a usage limit's reset the CLI's own
// announced continue is given before the supervisor continues the session
// (2.1.328 schedules it 30–90 s after the reset, and was seen 108 s after
// it on a loaded machine; a margin on top).
const AutoContinueWindow = 3 * time.Minute

// turnDied is the failure an API error is and its evidence sentence;
// witness, when set, names where it was seen.
func turnDied(e *APIError, witness string) (sessions.Failure, string) {
	f := sessions.Failure{Kind: failureKind(e), Message: e.Text}
	if f.Kind == sessions.RateLimit {
		f.RetryAt = e.ResetsAt
		if f.RetryAt.IsZero() {
			f.RetryAt = ResetTime(e.Text, e.At)
		}
	}
	s := fmt.Sprintf("the turn died on an API error (%s%s)", f.Kind.Label(), orEmpty("; "+witness, witness))
	if !f.RetryAt.IsZero() {
		s += fmt.Sprintf("; the limit resets at %s", f.RetryAt.Format("15:04 MST"))
		if e.AutoContinue {
			// The CLI continues by itself after the reset; a nudge at the
			// reset as well would make two prompts. The supervisor's
			// continue waits past the CLI's window and is needed only if
			// the CLI did not continue (a new turn ends the failure).
			f.RetryAt = f.RetryAt.Add(AutoContinueWindow)
			s += fmt.Sprintf("; Claude Code continues by itself after it, and the app only if it has not by %s", f.RetryAt.Format("15:04:05 MST"))
		}
	}
	return f, s
}

// failureKind classifies the CLI's error stand-in: its status when written
// (apiErrorStatus), else its error word, else its text.
func failureKind(e *APIError) sessions.FailureKind {
	switch e.Code {
	case "rate_limit":
		return sessions.RateLimit
	case "authentication_failed", "oauth_org_not_allowed":
		return sessions.Auth
	case "billing_error":
		return sessions.Billing
	case "server_error":
		if e.Status == 529 || strings.Contains(e.Text, "Overloaded") {
			return sessions.Overloaded
		}
		return sessions.Network
	}
	if strings.Contains(e.Text, "too long") {
		return sessions.ContextOverflow
	}
	if e.Status != 0 {
		return sessions.KindFromStatus(e.Status)
	}
	return sessions.OtherFailure
}

func ruleWaiting(ev Evidence) (sessions.ObservedState, bool) {
	for _, tool := range ev.Transcript.Open {
		switch tool.Name {
		case "AskUserQuestion":
			return observe.Waiting(sessions.WaitQuestion, "", "the agent asks you a question in the terminal"), true
		case "ExitPlanMode":
			return observe.Waiting(sessions.WaitPlan, "", "the agent waits for you to approve its plan in the terminal"), true
		}
	}
	if ev.File.Status != "waiting" {
		return sessions.ObservedState{}, false
	}
	// The session file says a dialog is open. 2.1.328 writes "permission
	// prompt" in the default mode, where the tool_use is written only
	// after approval, and "dialog open" in auto mode, where the tool_use
	// is in the transcript already (both measured); readers of other
	// builds report "approve <Tool>". A dialog over an open tool call
	// (questions and plans were taken above) is that call's permission.
	what := ev.File.WaitingFor
	var open *OpenTool
	if n := len(ev.Transcript.Open); n > 0 {
		open = &ev.Transcript.Open[n-1]
	}
	if tool, ok := strings.CutPrefix(what, "approve "); ok {
		if open != nil && open.Name == tool {
			return terminalPermission(*open), true
		}
		return terminalPermission(OpenTool{Name: tool}), true
	}
	if open != nil {
		return terminalPermission(*open), true
	}
	if strings.Contains(what, "permission") {
		return observe.Waiting(sessions.WaitPermission, "", "the agent asks permission in the terminal"), true
	}
	return observe.Waiting(sessions.WaitQuestion, "", "the CLI waits for you in the terminal"+orEmpty(" ("+what+")", what)), true
}

// terminalPermission is a permission dialog in the terminal over the tool
// call t: it names the tool and what it would do, and says where to answer.
func terminalPermission(t OpenTool) sessions.ObservedState {
	p := sessions.Permission{Tool: t.Name, Input: t.Input}
	st := observe.Waiting(sessions.WaitPermission, "",
		fmt.Sprintf("the agent asks permission in the terminal: %s (answer it there)", sessions.PermissionQuestion(p)))
	st.Permission = &p
	return st
}

func ruleCompacting(ev Evidence) (sessions.ObservedState, bool) {
	if !ev.Transcript.Compacting {
		return sessions.ObservedState{}, false
	}
	return sessions.ObservedState{State: sessions.Compacting, InTurn: true, Evidence: "compacting the context (/compact)"}, true
}

func ruleOpenTool(ev Evidence) (sessions.ObservedState, bool) {
	open := ev.Transcript.Open
	if len(open) == 0 {
		return sessions.ObservedState{}, false
	}
	name := open[0].Name
	return observe.RunningTool(name), true
}

func ruleWorking(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Transcript
	switch {
	case t.InTurn && (idleSince(ev) || hookStopped(ev)):
		// The CLI finished the turn before the transcript's last record
		// was flushed (a known race): the session file, or a Stop hook,
		// is the fresher word.
		return sessions.ObservedState{}, false
	case t.InTurn:
		return observe.Working("the transcript shows a turn in flight"), true
	case ev.File.Status == "busy" && !hookStopped(ev):
		return observe.Working("the CLI says busy"), true
	}
	return sessions.ObservedState{}, false
}

func ruleTurnEnded(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Transcript
	switch {
	case t.Interrupted:
		return observe.Stopped(), true
	case t.Ended:
		return observe.TurnEnded("the turn ended; waiting for review"), true
	case t.InTurn && idleSince(ev):
		return observe.TurnEnded("the CLI says idle (the turn's end is not in the transcript yet); waiting for review"), true
	}
	return sessions.ObservedState{}, false
}

// idleSince reports whether the session file said idle after the
// transcript's newest record was written. An older idle is the previous
// turn's: the prompt reaches the transcript before the status says busy.
func idleSince(ev Evidence) bool {
	f, t := ev.File, ev.Transcript
	if f.Status != "idle" || f.StatusUpdatedAt == 0 || t.LastAt.IsZero() {
		return false
	}
	return time.UnixMilli(f.StatusUpdatedAt).After(t.LastAt)
}

func ruleIdle(ev Evidence) (sessions.ObservedState, bool) {
	if ev.Transcript.Records == 0 {
		return observe.Idle(false), true
	}
	return observe.Idle(true), true
}

func orEmpty(s, cond string) string {
	if cond == "" {
		return ""
	}
	return s
}
