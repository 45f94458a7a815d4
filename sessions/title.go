package sessions

import (
	"strings"
	"unicode"
)

// PromptTitle names a session from its first prompt: a role declaration
// ("You are the posting rule auditor"), else a lane or phase marker, else a
// markdown heading, else the first line — so sessions started from one
// template are told apart by what distinguishes them. Terminal sessions
// (observe.Title) and managed sessions launched without a name share it.
func PromptTitle(prompt string) string {
	lines := strings.Split(prompt, "\n")
	pick := func(pred func(string) (string, bool)) string {
		for _, l := range lines {
			if t, ok := pred(strings.TrimSpace(l)); ok && t != "" {
				return t
			}
		}
		return ""
	}
	role := func(l string) (string, bool) {
		low := strings.ToLower(l)
		for _, p := range []string{"you are ", "your role is ", "role:"} {
			if i := strings.Index(low, p); i >= 0 {
				return strings.TrimRight(strings.TrimSpace(l[i+len(p):]), ".:"), true
			}
		}
		return "", false
	}
	marker := func(l string) (string, bool) {
		low := strings.ToLower(l)
		for _, p := range []string{"lane ", "phase ", "agent "} {
			if strings.HasPrefix(low, p) && len(l) > len(p) && unicode.IsDigit(rune(l[len(p)])) {
				return l, true
			}
		}
		return "", false
	}
	heading := func(l string) (string, bool) {
		if strings.HasPrefix(l, "#") {
			return strings.TrimSpace(strings.TrimLeft(l, "#")), true
		}
		return "", false
	}
	first := func(l string) (string, bool) { return l, l != "" }
	for _, p := range []func(string) (string, bool){role, marker, heading, first} {
		if t := pick(p); t != "" {
			return Clip(t, 60)
		}
	}
	return ""
}

// Clip shortens s to at most n runes, marking the cut with an ellipsis.
func Clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
