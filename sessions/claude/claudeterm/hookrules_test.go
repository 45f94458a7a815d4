package claudeterm

import (
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

func hookAt(sec int, ev HookEvent) *HookEvent {
	ev.At = time.UnixMilli(at(sec))
	return &ev
}

// Hook events on top of the files: each rule's evidence, and where the
// files' newer word wins.
func TestRuleStackWithHooks(t *testing.T) {
	cases := []struct {
		name    string
		records []string
		file    SessionFile
		hook    *HookEvent
		state   sessions.State
		wait    sessions.WaitReason
		failure sessions.FailureKind
		inTurn  bool
		rule    string
		evid    string
	}{
		{"StopFailure before the transcript has the error", []string{recPrompt}, SessionFile{Status: "idle"},
			hookAt(3, HookEvent{Name: "StopFailure", Error: "rate_limit", ErrorDetails: "You've hit your session limit · resets 9:50pm (Asia/Saigon)"}),
			sessions.Errored, 0, sessions.RateLimit, false, "hook: turn failed", "resets at"},
		{"StopFailure in the other field shape", []string{recPrompt}, SessionFile{},
			hookAt(3, HookEvent{Name: "StopFailure", ErrorType: "authentication_failed", Error: "invalid x-api-key"}),
			sessions.Errored, 0, sessions.Auth, false, "hook: turn failed", "StopFailure hook"},
		{"the transcript's error record wins", []string{recPrompt, recRateLimit}, SessionFile{},
			hookAt(3, HookEvent{Name: "StopFailure", Error: "server_error"}),
			sessions.Errored, 0, sessions.RateLimit, false, "API error", ""},
		{"a StopFailure older than the transcript's last record is over", []string{recPrompt}, SessionFile{},
			hookAt(-3, HookEvent{Name: "StopFailure", Error: "rate_limit"}),
			sessions.Working, 0, 0, true, "turn in flight", ""},
		{"permission prompt", []string{recPrompt}, SessionFile{Status: "busy"},
			hookAt(3, HookEvent{Name: "Notification", NotificationType: "permission_prompt", Message: "Claude needs your permission to use Bash"}),
			sessions.WaitingOnUser, sessions.WaitPermission, 0, true, "hook: waiting on the user", "permission to use Bash"},
		{"the permission granted: the tool ran after it", []string{recPrompt}, SessionFile{Status: "busy", StatusUpdatedAt: at(5)},
			hookAt(3, HookEvent{Name: "Notification", NotificationType: "permission_prompt"}),
			sessions.Working, 0, 0, true, "turn in flight", ""},
		{"the session file's wait comes first", []string{recPrompt}, SessionFile{Status: "waiting", WaitingFor: "permission prompt"},
			hookAt(3, HookEvent{Name: "Notification", NotificationType: "permission_prompt"}),
			sessions.WaitingOnUser, sessions.WaitPermission, 0, true, "waiting on the user", ""},
		{"auto compaction", []string{recPrompt, recEnd}, SessionFile{},
			hookAt(3, HookEvent{Name: "PreCompact", Trigger: "auto"}),
			sessions.Compacting, 0, 0, true, "hook: compacting", "context is full"},
		{"compaction over", []string{recPrompt, recEnd}, SessionFile{},
			hookAt(4, HookEvent{Name: "PostCompact"}),
			sessions.WaitingOnUser, sessions.WaitReview, 0, false, "turn ended", ""},
		{"prompt sent, not written yet", []string{recPrompt, recEnd}, SessionFile{Status: "idle", StatusUpdatedAt: at(1)},
			hookAt(3, HookEvent{Name: "UserPromptSubmit"}),
			sessions.Working, 0, 0, true, "hook: prompt sent", "UserPromptSubmit"},
		{"Stop before the end is flushed", []string{recPrompt, recPartial}, SessionFile{Status: "busy", StatusUpdatedAt: at(1)},
			hookAt(3, HookEvent{Name: "Stop"}),
			sessions.WaitingOnUser, sessions.WaitReview, 0, false, "hook: turn ended", "not in the transcript yet"},
		{"a new turn after Stop: the status is newer", nil, SessionFile{Status: "busy", StatusUpdatedAt: at(5)},
			hookAt(3, HookEvent{Name: "Stop"}),
			sessions.Working, 0, 0, true, "turn in flight", "says busy"},
		{"idle reminder", []string{recPrompt, recPartial}, SessionFile{},
			hookAt(3, HookEvent{Name: "Notification", NotificationType: "idle_prompt"}),
			sessions.WaitingOnUser, sessions.WaitReview, 0, false, "hook: turn ended", "Notification hook"},
		{"SessionStart adds nothing", nil, SessionFile{},
			hookAt(3, HookEvent{Name: "SessionStart"}),
			sessions.Idle, 0, 0, false, "idle", "no prompt yet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sum Summary
			for _, r := range tc.records {
				sum.Feed([]byte(r))
			}
			st, rule := Infer(Evidence{Liveness: observe.Liveness{PID: 42, Alive: true, Known: true}, File: tc.file, Transcript: sum, Hook: tc.hook})
			if st.State != tc.state || st.Wait != tc.wait || st.Failure.Kind != tc.failure || st.InTurn != tc.inTurn || rule != tc.rule {
				t.Fatalf("got %v/%q failure %v inTurn %v by rule %q (%s); want %v/%q %v %v by %q",
					st.State, st.Wait, st.Failure.Kind, st.InTurn, rule, st.Evidence, tc.state, tc.wait, tc.failure, tc.inTurn, tc.rule)
			}
			if st.Evidence == "" || !strings.Contains(st.Evidence, tc.evid) {
				t.Fatalf("evidence %q does not mention %q", st.Evidence, tc.evid)
			}
		})
	}
}
