package codex

import (
	"encoding/json"
	"regexp"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// FailureKindOf classifies a Codex error the way its rollout files write it
// (task_complete.error: codex_error_info in snake_case, measured against
// 0.171.0: "usage_limit_exceeded", {"http_connection_failed":
// {"http_status_code":401}}) or the way app-server sends it (codexErrorInfo
// in camelCase): the structured info first, the message's wording next. The
// terminal source (sessions/codex/codexterm) reads rollouts with it, so a
// managed and a terminal session classify the same error alike.
func FailureKindOf(info json.RawMessage, message string) sessions.FailureKind {
	if k := infoKind(snakeToCamel(info)); k != sessions.NoFailure {
		return k
	}
	return textKind(message)
}

var snakeRE = regexp.MustCompile(`_[a-z]`)

// snakeToCamel rewrites the snake_case words of a codexErrorInfo as the
// camelCase app-server uses; the info holds identifiers and numbers only.
func snakeToCamel(raw json.RawMessage) json.RawMessage {
	return snakeRE.ReplaceAllFunc(raw, func(b []byte) []byte { return []byte{b[1] - 'a' + 'A'} })
}
