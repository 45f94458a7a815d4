package codex

import (
	"encoding/json"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The rollout's snake_case error info classifies like app-server's
// camelCase (the shapes the real 0.171.0 wrote into its rollouts).
func TestFailureKindOf(t *testing.T) {
	for _, tc := range []struct {
		info, msg string
		want      sessions.FailureKind
	}{
		{`"usage_limit_exceeded"`, "You've hit your usage limit.", sessions.RateLimit},
		{`"context_window_exceeded"`, "Codex ran out of room", sessions.ContextOverflow},
		{`{"http_connection_failed":{"http_status_code":401}}`, "unexpected status 401 Unauthorized", sessions.Auth},
		{`{"http_connection_failed":{"http_status_code":429}}`, "", sessions.RateLimit},
		{`"internal_server_error"`, "We're currently experiencing high demand", sessions.Network},
		{`"server_overloaded"`, "", sessions.Overloaded},
		{`"unauthorized"`, "", sessions.Auth},
		{`"usageLimitExceeded"`, "", sessions.RateLimit},
		{`"other"`, "stream disconnected before completion: Transport error: network error", sessions.Network},
		{``, "Codex ran out of room in the model's context window.", sessions.ContextOverflow},
		{`null`, "something odd", sessions.OtherFailure},
	} {
		if got := FailureKindOf(json.RawMessage(tc.info), tc.msg); got != tc.want {
			t.Errorf("FailureKindOf(%s, %q) = %v, want %v", tc.info, tc.msg, got, tc.want)
		}
	}
}
