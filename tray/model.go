// Package tray is the system tray: a pure Build(snapshot) that turns the
// sessions into a menu model, and a small binding that shows that model in the
// system tray through fyne.io/systray (no Fyne window, no GL). The tray never decides a state; it only shows the one
// machine the window and the CLI also show.
package tray

import (
	"fmt"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/assets"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/view"
	"github.com/session-supervisor/session-supervisor/ui/model"
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
	// ActResume resumes a terminal session whose process is gone in the
	// background (offered only when view.Allows it).
	ActResume
	// ActGoToTerminal brings the terminal a session runs in to the front
	// (a session the app did not launch; enabled while its process runs).
	ActGoToTerminal
	// ActToggleRecovery is the session's "Stop recovering" switch: its
	// check shows it off; a click turns it the other way.
	ActToggleRecovery
	// ActContinueInTerminal hands a managed session over to a terminal,
	// waiting for its turn to end (the window offers the interrupt).
	ActContinueInTerminal
)

var actionNames = []string{"none", "open_session", "nudge", "interrupt", "acknowledge", "open_window", "open_settings", "toggle_pause", "quit", "resume", "go_to_terminal", "toggle_recovery", "continue_in_terminal"}

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
	// Hidden keeps a place for an item that shows only at times (a
	// session, More…, the link or the day's line), with nothing else set.
	// The tray host only ever sees items appended at the end of the menu
	// or of a submenu, so a section in the middle holds a place for
	// everything it may show: a session coming or going then shows or
	// hides a place, and every other item keeps its id (see Reconcile).
	Hidden   bool
	Children []Item
}

// hidden is a place showing nothing.
var hidden = Item{Hidden: true}

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
	// Link, when set, says the supervisor cannot be reached (an attached
	// desktop): it heads the menu and the tooltip.
	Link string
	// Today is the day's usage across every session, nil until the
	// supervisor told it: the header's second line (TodayLine).
	Today *model.DayUsage
	// Groups, when other machines are configured, is Sessions by machine
	// (this one first): the menu lists each under its machine's heading.
	// Sessions still holds every machine's, for the icon and the summary.
	Groups []Group
}

// Group is one machine's part of the menu.
type Group struct {
	// Heading is the machine's name and link ("devbox — connected").
	Heading  string
	Sessions []sessions.Session
}

// icons maps the shared urgency to the tray's icon.
var icons = map[view.Urgency]assets.Icon{
	view.NeedsAttention: assets.IconAttention,
	view.Waiting:        assets.IconWaiting,
	view.Recovering:     assets.IconRecovering,
	view.Working:        assets.IconWorking,
	view.Quiet:          assets.IconIdle,
}

// Aggregate is the icon of the most urgent session (view.Most).
func Aggregate(list []sessions.Session) assets.Icon { return icons[view.Most(list)] }

// Header is the one-line summary: "3 working · 1 needs you".
func Header(list []sessions.Session) string {
	var working, needs, waiting, recovering int
	for _, s := range list {
		switch view.UrgencyOf(s) {
		case view.NeedsAttention:
			needs++
		case view.Waiting:
			waiting++
		case view.Working:
			working++
		case view.Recovering:
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

// TodayLine is the day's equivalent API cost for the header: "Today: $3.12
// equivalent API cost", saying when part of it is priced at the fallback
// rate. Labelled as what the tokens would cost at list prices, never as a
// charge.
func TodayLine(d model.DayUsage) string {
	line := "Today: " + d.Cost.String() + " equivalent API cost"
	if d.Unknown {
		line += " (some models at the fallback rate)"
	}
	return line
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
	view.Sort(list)
	header := Header(list)
	if snap.Paused {
		header += " (supervisor paused)"
	}
	m := Menu{Icon: Aggregate(list), Tooltip: "Session Supervisor — " + header}
	// The header's three places: the link, the summary, the day's line.
	link, today := hidden, hidden
	if snap.Link != "" {
		m.Tooltip = "Session Supervisor — " + snap.Link
		link = Item{Label: snap.Link, Disabled: true}
	}
	if snap.Today != nil {
		today = Item{Label: TodayLine(*snap.Today), Disabled: true}
	}
	m.Items = append(m.Items, link, Item{Label: header, Disabled: true}, today, Item{Separator: true})

	if len(snap.Groups) == 0 && len(list) > 0 {
		// No session, no section: a separator cannot be hidden, so the
		// first session to come (and the last to go) rebuilds the menu.
		m.Items = append(m.Items, sessionItems(list, snap.Now)...)
		m.Items = append(m.Items, Item{Separator: true})
	}
	for _, g := range snap.Groups {
		// Each machine's heading, then its sessions (capped per machine:
		// a busy machine does not push the others off the menu).
		group := append([]sessions.Session(nil), g.Sessions...)
		view.Sort(group)
		m.Items = append(m.Items, Item{Label: g.Heading, Disabled: true})
		m.Items = append(m.Items, sessionItems(group, snap.Now)...)
		m.Items = append(m.Items, Item{Separator: true})
	}
	m.Items = append(m.Items,
		Item{Label: "Open Session Supervisor…", Action: ActOpenWindow},
		Item{Label: "Settings…", Action: ActOpenSettings},
		Item{Label: "Pause supervisor", Action: ActTogglePause, Checkable: true, Checked: snap.Paused},
		Item{Separator: true},
		// The tray's own way out: it quits the app, its window too.
		Item{Label: "Quit", Action: ActQuit},
	)
	return m
}

// sessionItems lists sessions, the first MaxTopLevel at the top level and
// the rest under "More…": always MaxTopLevel+1 places, those unused hidden,
// so sessions coming and going leave the items around them where they are.
func sessionItems(list []sessions.Session, now time.Time) []Item {
	top, rest := list, []sessions.Session(nil)
	if len(list) > MaxTopLevel {
		top, rest = list[:MaxTopLevel], list[MaxTopLevel:]
	}
	items := make([]Item, 0, MaxTopLevel+1)
	for _, s := range top {
		items = append(items, sessionItem(s, now))
	}
	for len(items) < MaxTopLevel {
		items = append(items, hidden)
	}
	more := hidden
	if len(rest) > 0 {
		more = Item{Label: fmt.Sprintf("More… (%d)", len(rest))}
		for _, s := range rest {
			more.Children = append(more.Children, sessionItem(s, now))
		}
	}
	return append(items, more)
}

// SessionLabel is "● name — State · 12m".
func SessionLabel(s sessions.Session, now time.Time) string {
	return fmt.Sprintf("%s %s — %s · %s", view.UrgencyOf(s).Marker(), view.Title(s), view.StateText(s), sessions.Age(now, s.StateChangedAt))
}

func sessionItem(s sessions.Session, now time.Time) Item {
	it := Item{
		Label:     SessionLabel(s, now),
		SessionID: s.ID,
		Children: []Item{
			{Label: "Open", Action: ActOpenSession, SessionID: s.ID},
			{Label: "Send nudge now", Action: ActNudge, SessionID: s.ID, Disabled: !view.Allows(s, view.Nudge)},
			{Label: "Interrupt turn", Action: ActInterrupt, SessionID: s.ID, Disabled: !view.Allows(s, view.Interrupt)},
			{Label: "Acknowledge", Action: ActAcknowledge, SessionID: s.ID, Disabled: !view.Allows(s, view.Acknowledge)},
			{Label: "Stop recovering", Action: ActToggleRecovery, SessionID: s.ID, Checkable: true, Checked: s.RecoveryOff},
		},
	}
	if s.Source == sessions.Managed {
		it.Children = append(it.Children, Item{Label: "Continue in terminal", Action: ActContinueInTerminal, SessionID: s.ID, Disabled: !view.Allows(s, view.ContinueInTerminal)})
	}
	if s.Source != sessions.Managed {
		it.Children = append(it.Children, Item{Label: "Go to terminal", Action: ActGoToTerminal, SessionID: s.ID, Disabled: !view.Allows(s, view.GoToTerminal)})
	}
	if view.Allows(s, view.Resume) {
		// Only where it applies (a terminal session whose process died):
		// a disabled entry on every other session would be noise.
		it.Children = append(it.Children, Item{Label: "Resume in the background", Action: ActResume, SessionID: s.ID})
	}
	return it
}
