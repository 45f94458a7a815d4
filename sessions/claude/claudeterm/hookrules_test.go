package claudeterm

import (
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func hookAt(sec int, ev HookEvent) *HookEvent {
	ev.At = time.UnixMilli(at(sec))
	return &ev
}

// Hook events on top of the files: each rule's evidence, and where the
// files' newer word wins.
func TestRuleStackWithHooks(t *testing.T) {
	checkRules(t, []ruleCase{
		{"StopFailure before the transcript has the error", []string{recPrompt}, SessionFile{Status: "idle"},
			false, hookAt(3, HookEvent{Name: "StopFailure", Error: "rate_limit", ErrorDetails: "You've hit your session limit · resets 9:50pm (Asia/Saigon)"}),
			sessions.Errored, 0, sessions.RateLimit, false, "hook: turn failed", "resets at"},
		{"StopFailure in the other field shape", []string{recPrompt}, SessionFile{},
			false, hookAt(3, HookEvent{Name: "StopFailure", ErrorType: "authentication_failed", Error: "invalid x-api-key"}),
			sessions.Errored, 0, sessions.Auth, false, "hook: turn failed", "StopFailure hook"},
		{"the transcript's error record wins", []string{recPrompt, recRateLimit}, SessionFile{},
			false, hookAt(3, HookEvent{Name: "StopFailure", Error: "server_error"}),
			sessions.Errored, 0, sessions.RateLimit, false, "API error", ""},
		{"a StopFailure older than the transcript's last record is over", []string{recPrompt}, SessionFile{},
			false, hookAt(-3, HookEvent{Name: "StopFailure", Error: "rate_limit"}),
			sessions.Working, 0, 0, true, "turn in flight", ""},
		{"permission prompt", []string{recPrompt}, SessionFile{Status: "busy"},
			false, hookAt(3, HookEvent{Name: "Notification", NotificationType: "permission_prompt", Message: "Claude needs your permission to use Bash"}),
			sessions.WaitingOnUser, sessions.WaitPermission, 0, true, "hook: waiting on the user", "permission to use Bash"},
		{"the permission granted: the tool ran after it", []string{recPrompt}, SessionFile{Status: "busy", StatusUpdatedAt: at(5)},
			false, hookAt(3, HookEvent{Name: "Notification", NotificationType: "permission_prompt"}),
			sessions.Working, 0, 0, true, "turn in flight", ""},
		{"the session file's wait comes first", []string{recPrompt}, SessionFile{Status: "waiting", WaitingFor: "permission prompt"},
			false, hookAt(3, HookEvent{Name: "Notification", NotificationType: "permission_prompt"}),
			sessions.WaitingOnUser, sessions.WaitPermission, 0, true, "waiting on the user", ""},
		{"auto compaction", []string{recPrompt, recEnd}, SessionFile{},
			false, hookAt(3, HookEvent{Name: "PreCompact", Trigger: "auto"}),
			sessions.Compacting, 0, 0, true, "hook: compacting", "context is full"},
		{"compaction over", []string{recPrompt, recEnd}, SessionFile{},
			false, hookAt(4, HookEvent{Name: "PostCompact"}),
			sessions.WaitingOnUser, sessions.WaitReview, 0, false, "turn ended", ""},
		{"prompt sent, not written yet", []string{recPrompt, recEnd}, SessionFile{Status: "idle", StatusUpdatedAt: at(1)},
			false, hookAt(3, HookEvent{Name: "UserPromptSubmit"}),
			sessions.Working, 0, 0, true, "hook: prompt sent", "UserPromptSubmit"},
		{"Stop before the end is flushed", []string{recPrompt, recPartial}, SessionFile{Status: "busy", StatusUpdatedAt: at(1)},
			false, hookAt(3, HookEvent{Name: "Stop"}),
			sessions.WaitingOnUser, sessions.WaitReview, 0, false, "hook: turn ended", "not in the transcript yet"},
		{"a new turn after Stop: the status is newer", nil, SessionFile{Status: "busy", StatusUpdatedAt: at(5)},
			false, hookAt(3, HookEvent{Name: "Stop"}),
			sessions.Working, 0, 0, true, "turn in flight", "says busy"},
		{"idle reminder", []string{recPrompt, recPartial}, SessionFile{},
			false, hookAt(3, HookEvent{Name: "Notification", NotificationType: "idle_prompt"}),
			sessions.WaitingOnUser, sessions.WaitReview, 0, false, "hook: turn ended", "Notification hook"},
		{"SessionStart adds nothing", nil, SessionFile{},
			false, hookAt(3, HookEvent{Name: "SessionStart"}),
			sessions.Idle, 0, 0, false, "idle", "no prompt yet"},
	})
}
