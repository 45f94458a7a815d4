package copilotterm

import (
	"fmt"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Evidence is everything the rule stack reads about one session at one
// moment: its process and its events' summary.
type Evidence struct {
	observe.Liveness
	// Events is false until the session's events.jsonl exists (Copilot
	// writes it at the first prompt).
	Events  bool
	Summary Summary
}

// Infer walks the rule stack (observe.Stack) and returns the first
// match's state and the rule's name; the first match wins.
var Infer = observe.Stack[Evidence]{
	InTurn: func(ev Evidence) bool { return ev.Summary.InTurn }, Witness: "its events show no end of the turn",
	Failed: ruleFailed, Waiting: ruleWaiting, Compacting: ruleCompacting, OpenTool: ruleOpenTool, Working: ruleWorking,
	Ended: ruleTurnEnded, Idle: ruleIdle,
}.Infer

func ruleFailed(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	if t.InTurn || t.Failure == nil {
		return sessions.ObservedState{}, false
	}
	f := *t.Failure
	return observe.TurnFailed(f, "", ""), true
}

func ruleWaiting(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	if !t.InTurn || len(t.Asks) == 0 {
		return sessions.ObservedState{}, false
	}
	a := t.Asks[len(t.Asks)-1]
	st := sessions.ObservedState{State: sessions.WaitingOnUser, Wait: a.Wait, InTurn: true, Tool: openTool(t)}
	if a.Wait == sessions.WaitPermission {
		st.Evidence = fmt.Sprintf("Copilot asks to run %s: approve or deny it in the terminal", observe.OrDefault(quoted(a.What), "a tool"))
	} else {
		st.Evidence = "Copilot asks you a question in the terminal"
	}
	return st, true
}

func ruleCompacting(ev Evidence) (sessions.ObservedState, bool) {
	if !ev.Summary.Compacting {
		return sessions.ObservedState{}, false
	}
	return sessions.ObservedState{State: sessions.Compacting, InTurn: ev.Summary.InTurn,
		Evidence: "Copilot is compacting the conversation"}, true
}

func ruleOpenTool(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	if !t.InTurn || len(t.Open) == 0 {
		return sessions.ObservedState{}, false
	}
	name := openTool(t)
	return sessions.ObservedState{State: sessions.Working, InTurn: true, Tool: name,
		Evidence: fmt.Sprintf("running %s", name)}, true
}

func ruleWorking(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	if !t.InTurn {
		return sessions.ObservedState{}, false
	}
	text := "the events show a turn in flight"
	if t.Retries > 0 {
		text = fmt.Sprintf("the model call failed; Copilot retries (attempt %d)", t.Retries)
	}
	return observe.Working(text), true
}

func ruleTurnEnded(ev Evidence) (sessions.ObservedState, bool) {
	t := ev.Summary
	switch {
	case !t.Ended:
		return sessions.ObservedState{}, false
	case t.Aborted != "":
		return observe.TurnEnded("the turn was stopped in the terminal; waiting for review"), true
	}
	return observe.TurnEnded("the turn ended; waiting for review"), true
}

func ruleIdle(ev Evidence) (sessions.ObservedState, bool) {
	if !ev.Events || ev.Summary.Turns == 0 {
		return observe.Idle(false), true
	}
	return observe.Idle(true), true
}

// openTool is the latest open tool's name ("" when none).
func openTool(t Summary) string {
	if len(t.Open) == 0 {
		return ""
	}
	return observe.OrDefault(t.Open[len(t.Open)-1].Name, "a tool")
}

// quoted is a command as the evidence quotes it: one line, bounded.
func quoted(s string) string {
	if s == "" {
		return ""
	}
	const limit = 80
	r := []rune(s)
	for i, c := range r {
		if c == '\n' {
			r = append(r[:i:i], '…')
			break
		}
	}
	if len(r) > limit {
		r = append(r[:limit:limit], '…')
	}
	return "`" + sessions.SanitizeMessage(string(r)) + "`"
}
