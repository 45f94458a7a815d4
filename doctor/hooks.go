package doctor

import (
	"fmt"
	"time"
)

// Hooks is what main found about the Claude Code hooks (`hooks status`):
// doctor only judges it.
type Hooks struct {
	Settings  string
	Installed bool
	// Problem: the settings file cannot be read, our entries are out of
	// date, or the hook program is missing.
	Problem string
	// Listening: an app listens on the hook socket now. Since and Events
	// are its account of what arrived (Since zero: it never listened).
	Listening bool
	Since     time.Time
	Events    int
	Last      time.Time
}

// hooksQuiet is how long an app may listen with hooks installed and no
// event before doctor says so: a session started since would have sent one.
const hooksQuiet = 10 * time.Minute

// CheckHooks judges the hooks: optional, so not installed is fine; installed
// and broken, or installed and silent for long, is worth a warning.
func CheckHooks(h Hooks, now time.Time) Check {
	ch := Check{Name: "hooks"}
	switch {
	case !h.Installed && h.Problem != "":
		ch.Status, ch.Detail = Warn, "Claude Code hooks: "+h.Problem
	case !h.Installed:
		ch.Detail = "Claude Code hooks not installed (optional: terminal sessions are observed from their files; " +
			"`session-supervisor hooks install` makes their states faster and richer)"
	case h.Problem != "":
		ch.Status, ch.Detail = Warn, "Claude Code hooks installed in "+h.Settings+", but "+h.Problem
		ch.Fix = "session-supervisor hooks install"
	case !h.Listening:
		ch.Detail = "Claude Code hooks installed in " + h.Settings + "; no app is running to receive their events"
	case h.Events > 0:
		ch.Detail = fmt.Sprintf("Claude Code hooks installed; %d events arrived since the app started, the last %s ago",
			h.Events, humanSpan(now.Sub(h.Last)))
	case now.Sub(h.Since) > hooksQuiet:
		ch.Status = Warn
		ch.Detail = fmt.Sprintf("Claude Code hooks installed, but no event arrived in the %s since the app started", humanSpan(now.Sub(h.Since)))
		ch.Fix = "restart the Claude Code sessions (hooks load when a session starts), then run `session-supervisor hooks status`"
	default:
		ch.Detail = "Claude Code hooks installed; no event yet since the app started " + humanSpan(now.Sub(h.Since)) + " ago"
	}
	return ch
}
