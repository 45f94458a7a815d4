// Package tray is the system tray: a pure Build(snapshot) that turns the
// sessions into a menu model, and a small binding that shows that model with
// Fyne's system tray. The tray never decides a state; it only shows the one
// machine the window and the CLI also show.
package tray

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/assets"
	"github.com/session-supervisor/session-supervisor/sessions"
)

// MaxTopLevel caps the sessions listed at the top level; the rest go under
// "More…" so a long list keeps the menu usable.
const MaxTopLevel = 10

// Action is what a menu item does when clicked.
type Action int

// The actions.
const (
	ActNone Action = iota
	ActOpenSession
	ActNudge
	ActInterrupt
	ActAcknowledge
	ActOpenWindow
	ActOpenSettings
	ActTogglePause
	ActQuit
)

var actionNames = []string{"none", "open_session", "nudge", "interrupt", "acknowledge", "open_window", "open_settings", "toggle_pause", "quit"}

func (a Action) String() string {
	if a >= 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// Item is one menu entry. A separator has Separator set and nothing else.
type Item struct {
	Label     string
	Action    Action
	SessionID string
	Checkable bool
	Checked   bool
	Disabled  bool
	Separator bool
	Children  []Item
}

// Menu is the whole tray: its icon and its items.
type Menu struct {
	Icon    assets.Icon
	Tooltip string
	Items   []Item
}

// Snapshot is everything the tray shows.
type Snapshot struct {
	Sessions []sessions.Session
	// Paused is true when supervisor.enabled is off.
	Paused bool
	Now    time.Time
}

// Aggregate is the most urgent condition across the sessions, which picks
// the icon: needs attention > waiting on user > recovering / suspect >
// working > idle.
func Aggregate(list []sessions.Session) assets.Icon {
	best := assets.IconIdle
	for _, s := range list {
		if u := urgency(s); u < best {
			best = u
		}
	}
	return best
}

func urgency(s sessions.Session) assets.Icon {
	switch {
	case s.NeedsAttention:
		return assets.IconAttention
	case s.State == sessions.WaitingOnUser:
		return assets.IconWaiting
	case s.State == sessions.Recovering || s.State == sessions.Suspect:
		return assets.IconRecovering
	case s.State == sessions.Errored || s.State == sessions.Interrupted:
		// Not yet escalated: the supervisor is still on it.
		return assets.IconRecovering
	case s.State == sessions.Working || s.State == sessions.Compacting:
		return assets.IconWorking
	}
	return assets.IconIdle
}

// Header is the one-line summary: "3 working · 1 needs you".
func Header(list []sessions.Session) string {
	var working, needs, waiting, recovering int
	for _, s := range list {
		switch {
		case s.NeedsAttention:
			needs++
		case s.State == sessions.WaitingOnUser:
			waiting++
		case s.State == sessions.Working || s.State == sessions.Compacting:
			working++
		case s.State == sessions.Recovering || s.State == sessions.Suspect || s.State == sessions.Errored || s.State == sessions.Interrupted:
			recovering++
		}
	}
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(working, "working")
	add(needs, "need"+plural(needs, "s", "")+" you")
	add(waiting, "waiting")
	add(recovering, "recovering")
	if len(parts) == 0 {
		if len(list) == 0 {
			return "No sessions"
		}
		return fmt.Sprintf("%d idle", len(list))
	}
	return strings.Join(parts, " · ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Build is the pure menu builder.
func Build(snap Snapshot) Menu {
	list := append([]sessions.Session(nil), snap.Sessions...)
	sort.SliceStable(list, func(i, j int) bool {
		ui, uj := urgency(list[i]), urgency(list[j])
		if ui != uj {
			return ui < uj
		}
		if !list[i].StateChangedAt.Equal(list[j].StateChangedAt) {
			return list[i].StateChangedAt.After(list[j].StateChangedAt)
		}
		return list[i].ID < list[j].ID
	})
	header := Header(list)
	if snap.Paused {
		header += " (supervisor paused)"
	}
	m := Menu{Icon: Aggregate(list), Tooltip: "Session Supervisor — " + header}
	m.Items = append(m.Items, Item{Label: header, Disabled: true}, Item{Separator: true})

	top, rest := list, []sessions.Session(nil)
	if len(list) > MaxTopLevel {
		top, rest = list[:MaxTopLevel], list[MaxTopLevel:]
	}
	for _, s := range top {
		m.Items = append(m.Items, sessionItem(s, snap.Now))
	}
	if len(rest) > 0 {
		more := Item{Label: fmt.Sprintf("More… (%d)", len(rest))}
		for _, s := range rest {
			more.Children = append(more.Children, sessionItem(s, snap.Now))
		}
		m.Items = append(m.Items, more)
	}
	if len(list) > 0 {
		m.Items = append(m.Items, Item{Separator: true})
	}
	m.Items = append(m.Items,
		Item{Label: "Open Session Supervisor…", Action: ActOpenWindow},
		Item{Label: "Settings…", Action: ActOpenSettings},
		Item{Label: "Pause supervisor", Action: ActTogglePause, Checkable: true, Checked: snap.Paused},
		Item{Separator: true},
		// Fyne appends a Quit of its own only to its copy of the menu, after
		// the tray was drawn, so the tray would have none; a last item
		// labelled "Quit" is the one Fyne recognises as its quit item.
		Item{Label: "Quit", Action: ActQuit},
	)
	return m
}

// stateDot is a text marker per urgency, so the label never relies on the
// icon's colour alone.
var stateDot = map[assets.Icon]string{
	assets.IconAttention:  "⚠",
	assets.IconWaiting:    "●",
	assets.IconRecovering: "◐",
	assets.IconWorking:    "▶",
	assets.IconIdle:       "○",
}

// SessionLabel is "● name — State · 12m".
func SessionLabel(s sessions.Session, now time.Time) string {
	state := s.State.Label()
	if s.NeedsAttention {
		state = "Needs attention (" + state + ")"
	} else if s.State == sessions.WaitingOnUser && s.WaitReason != sessions.NoWait {
		state += " (" + s.WaitReason.String() + ")"
	}
	return fmt.Sprintf("%s %s — %s · %s", stateDot[urgency(s)], s.DisplayName(), state, sessions.Age(now, s.StateChangedAt))
}

func sessionItem(s sessions.Session, now time.Time) Item {
	return Item{
		Label:     SessionLabel(s, now),
		SessionID: s.ID,
		Children: []Item{
			{Label: "Open", Action: ActOpenSession, SessionID: s.ID},
			{Label: "Send nudge now", Action: ActNudge, SessionID: s.ID, Disabled: s.InTurn},
			{Label: "Interrupt turn", Action: ActInterrupt, SessionID: s.ID, Disabled: !s.InTurn},
			{Label: "Acknowledge", Action: ActAcknowledge, SessionID: s.ID, Disabled: !canAcknowledge(s)},
		},
	}
}

func canAcknowledge(s sessions.Session) bool {
	return s.NeedsAttention || (!s.InTurn && (s.State == sessions.WaitingOnUser || s.State == sessions.Errored || s.State == sessions.Interrupted))
}
