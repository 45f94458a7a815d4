package view

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/eta"
)

// TimeLeft is the band of time s's turn has left at now (sessions/eta).
func TimeLeft(s sessions.Session, now time.Time) eta.Band {
	return eta.Estimate(eta.FromSession(s, now))
}

// TimeLeftText is the band as the views say it: "20–45 min (todos 3/7,
// past turns)", "not enough signal"; "" with no turn in flight (nothing
// is left to estimate).
func TimeLeftText(s sessions.Session, now time.Time) string {
	if !s.InTurn {
		return ""
	}
	return TimeLeft(s, now).String()
}

// AccountWindow is one plan usage window of an agent's account: the
// newest report any of its sessions saw.
type AccountWindow struct {
	Agent  string              `json:"agent"`
	Window sessions.RateWindow `json:"window"`
}

// AccountWindows are the plan windows of every agent in list, the newest
// report of each (agent, window), sorted by agent then window. The app
// knows no account id: an agent's sessions on one machine run as one
// account, which is the case the windows describe.
func AccountWindows(list []sessions.Session) []AccountWindow {
	var out []AccountWindow
	for _, s := range list {
		for _, w := range s.RateWindows {
			i := slices.IndexFunc(out, func(a AccountWindow) bool { return a.Agent == s.Agent && a.Window.Kind == w.Kind })
			switch {
			case i < 0:
				out = append(out, AccountWindow{Agent: s.Agent, Window: w})
			case w.At.After(out[i].Window.At):
				out[i].Window = w
			}
		}
	}
	slices.SortFunc(out, func(a, b AccountWindow) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Window.Kind, b.Window.Kind))
	})
	return out
}

// WindowText is one window in words, in loc: "five_hour 82% used, resets
// 14:05", "primary used up, resets 2026-12-03 09:00".
func WindowText(w sessions.RateWindow, now time.Time, loc *time.Location) string {
	text := w.Kind
	switch {
	case w.Rejected():
		text += " used up"
	case w.Used >= 0:
		text += fmt.Sprintf(" %.0f%% used", w.Used)
	case w.Status == "allowed_warning":
		text += " near its limit"
	default:
		text += " in use"
	}
	if !w.ResetsAt.IsZero() {
		text += ", resets " + clock(w.ResetsAt, now, loc)
	}
	return text
}

// clock is a time as a glance wants it: the time of day when it is within
// a day of now, else the date too.
func clock(t, now time.Time, loc *time.Location) string {
	if d := t.Sub(now); d > -24*time.Hour && d < 24*time.Hour {
		return t.In(loc).Format("15:04")
	}
	return t.In(loc).Format("2006-01-02 15:04")
}

// WindowWarning marks a session that will hit one of its account's plan
// windows (ws, from AccountWindows) while it works: a window already used
// up, or one filling at a pace that spends it before it resets, unless the
// session's time-left band ends before that. "" when none applies, or the
// session is not working.
func WindowWarning(s sessions.Session, ws []AccountWindow, now time.Time, loc *time.Location) string {
	if !s.InTurn {
		return ""
	}
	band := TimeLeft(s, now)
	for _, a := range ws {
		if a.Agent != s.Agent {
			continue
		}
		at, ok := a.Window.HitAt(now)
		if !ok {
			continue
		}
		if a.Window.Rejected() {
			return "plan window " + WindowText(a.Window, now, loc)
		}
		if band.OK() && now.Add(band.High).Before(at) {
			continue // the turn ends before the window is spent
		}
		text := fmt.Sprintf("will hit the %s window at about %s", a.Window.Kind, clock(at, now, loc))
		if !a.Window.ResetsAt.IsZero() {
			text += fmt.Sprintf(" (it resets %s)", clock(a.Window.ResetsAt, now, loc))
		}
		return text
	}
	return ""
}
