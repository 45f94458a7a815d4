package observe

import "github.com/session-supervisor/session-supervisor/sessions"

// Title names a session from its first prompt (sessions.PromptTitle, the
// rule managed sessions launched without a name follow too).
func Title(prompt string) string { return sessions.PromptTitle(prompt) }

// Clip shortens s to at most n runes, marking the cut with an ellipsis.
func Clip(s string, n int) string { return sessions.Clip(s, n) }
