package claudeterm

import (
	"fmt"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// The rules hook events add to the stack (infer.go). A hook event is the
// newest word only until something newer is written: a transcript record
// after it (the prompt, the tool call after a permission was granted, the
// compaction summary), or a status the CLI wrote after it. Each rule sits
// just after the file-and-transcript rule it speeds up or completes.

// hookFresh reports whether the session's newest hook event is name and
// nothing newer was written since.
func hookFresh(ev Evidence, names ...string) bool {
	h := ev.Hook
	if h == nil || !h.At.After(ev.Transcript.LastAt) {
		return false
	}
	if ev.File.StatusUpdatedAt != 0 && time.UnixMilli(ev.File.StatusUpdatedAt).After(h.At) {
		return false
	}
	for _, n := range names {
		if h.Name == n {
			return true
		}
	}
	return false
}

// ruleHookFailure: StopFailure carries the error the turn died on, before
// (or without) its record in the transcript.
func ruleHookFailure(ev Evidence) (sessions.ObservedState, bool) {
	if !hookFresh(ev, "StopFailure") {
		return sessions.ObservedState{}, false
	}
	h := ev.Hook
	e := &APIError{Code: h.ErrorCode(), Text: sessions.SanitizeMessage(h.ErrorText()), At: h.At}
	f, s := turnDied(e, "StopFailure hook")
	return sessions.ObservedState{State: sessions.Errored, Failure: f, Evidence: s}, true
}

// ruleHookWaiting: a Notification says the CLI shows a permission prompt
// or a question dialog (a CLI whose session file does not say "waiting").
func ruleHookWaiting(ev Evidence) (sessions.ObservedState, bool) {
	if !hookFresh(ev, "Notification") {
		return sessions.ObservedState{}, false
	}
	switch ev.Hook.NotificationType {
	case "permission_prompt":
		s := "the agent asks permission in the terminal (Notification hook)"
		if _, tool, ok := strings.Cut(ev.Hook.Message, "permission to use "); ok && tool != "" {
			s = fmt.Sprintf("the agent asks permission to use %s in the terminal (Notification hook)", observe.Clip(tool, 40))
		}
		return sessions.ObservedState{State: sessions.WaitingOnUser, Wait: sessions.WaitPermission, InTurn: true, Evidence: s}, true
	case "elicitation_dialog", "agent_needs_input":
		return sessions.ObservedState{State: sessions.WaitingOnUser, Wait: sessions.WaitQuestion, InTurn: true,
			Evidence: "the CLI waits for your answer in the terminal (Notification hook)"}, true
	}
	return sessions.ObservedState{}, false
}

// ruleHookCompacting: PreCompact without its PostCompact yet.
func ruleHookCompacting(ev Evidence) (sessions.ObservedState, bool) {
	if !hookFresh(ev, "PreCompact") {
		return sessions.ObservedState{}, false
	}
	how := "/compact"
	if ev.Hook.Trigger == "auto" {
		how = "the context is full"
	}
	return sessions.ObservedState{State: sessions.Compacting, InTurn: true,
		Evidence: fmt.Sprintf("compacting the context (%s; PreCompact hook)", how)}, true
}

// ruleHookPrompt: a prompt was sent and its record is not written yet.
func ruleHookPrompt(ev Evidence) (sessions.ObservedState, bool) {
	if !hookFresh(ev, "UserPromptSubmit") {
		return sessions.ObservedState{}, false
	}
	return sessions.ObservedState{State: sessions.Working, InTurn: true, Evidence: "you sent a prompt (UserPromptSubmit hook)"}, true
}

// hookStopped: the turn ended (Stop, or the CLI's idle reminder) after the
// transcript's newest record: its end is not flushed yet.
func hookStopped(ev Evidence) bool {
	return hookFresh(ev, "Stop") || hookFresh(ev, "Notification") && ev.Hook.NotificationType == "idle_prompt"
}

func ruleHookStopped(ev Evidence) (sessions.ObservedState, bool) {
	if !hookStopped(ev) {
		return sessions.ObservedState{}, false
	}
	return observe.TurnEnded(fmt.Sprintf("the turn ended (%s hook; its end is not in the transcript yet); waiting for review", ev.Hook.Name)), true
}
