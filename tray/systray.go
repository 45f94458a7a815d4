package tray

import (
	"context"
	"reflect"
	"runtime"
	"sync"
	"time"

	"fyne.io/systray"

	"github.com/session-supervisor/session-supervisor/assets"
	"github.com/session-supervisor/session-supervisor/enum"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// Tray shows menu models in the desktop's system tray through
// fyne.io/systray directly: on Linux a StatusNotifierItem and a dbusmenu on
// the session bus, no window and no GL context, so a desktop showing only
// the tray costs what its menu costs.
//
// The tray itself is started by systray.Run (main owns it: on macOS it must
// run on the main thread); Show and Run are called once it reported ready.
type Tray struct {
	onAction func(Item)
	icons    map[assets.Icon][]byte
	lastIcon assets.Icon
	last     Menu
	shown    bool
	// places is what the systray items show now, hidden places included
	// (Reconcile's last plan): it may hold more than last.Items, places
	// a shorter submenu no longer uses.
	places []Item
	// root mirrors places: the systray items shown and the Item each
	// stands for now (an update in place changes the Item, not the
	// systray item, so a click reads it under mu).
	root []*node
	mu   sync.Mutex
	// clicks are the goroutines waiting on the items' clicks; each ends
	// when its item is removed (systray closes its channel).
	clicks sync.WaitGroup
}

// node is one shown item; a separator has no systray item.
type node struct {
	mi       *systray.MenuItem
	item     Item
	parent   *node
	children []*node
}

// New makes a tray. onAction runs on a goroutine of the tray's for every
// click of an item with an action.
func New(onAction func(Item)) *Tray {
	icons := map[assets.Icon][]byte{}
	for i := assets.IconAttention; i <= assets.IconIdle; i++ {
		icons[i] = osIcon(assets.TrayIcon(i))
	}
	return &Tray{onAction: onAction, icons: icons}
}

// Show replaces the tray's icon and menu; call it from one goroutine at a
// time (Run's). An unchanged model is not re-sent. The shown items are
// brought to the new menu in place (Reconcile), keeping their ids: a menu
// the user has open stays open, the tray host re-reads only what changed,
// and a click it sends for an item it read before the change still
// arrives. Only a change Reconcile cannot place rebuilds the menu.
func (t *Tray) Show(m Menu) {
	if t.shown && !changed(t.last, m) {
		return
	}
	first := !t.shown
	if first || m.Icon != t.lastIcon {
		systray.SetIcon(t.icons[m.Icon])
		t.lastIcon = m.Icon
	}
	if first || m.Tooltip != t.last.Tooltip {
		systray.SetTooltip(m.Tooltip)
	}
	if first && runtime.GOOS != "darwin" && runtime.GOOS != "windows" {
		// Some XDG hosts crash on an item without a title (the reason
		// Fyne sets one too); on macOS a title would show beside the icon.
		systray.SetTitle("Session Supervisor")
	}
	plan, ok := Reconcile(t.places, m.Items)
	if !ok {
		t.clear()
		plan = m.Items
	}
	t.mu.Lock()
	if !ok {
		t.root = nil
	}
	t.root = t.apply(nil, nil, t.root, plan)
	t.mu.Unlock()
	t.places, t.last, t.shown = plan, m, true
}

// changed reports whether m differs from the shown menu last: a menu
// rebuilt from an unchanged model is not sent again.
func changed(last, m Menu) bool { return !reflect.DeepEqual(last, m) }

// apply brings the shown items nodes (under parent, the top level when
// nil) to plan, one of Reconcile's: each place keeps its systray item and
// changes only what differs; plan's places beyond the shown ones are
// created. The caller holds mu.
func (t *Tray) apply(parent *systray.MenuItem, up *node, nodes []*node, plan []Item) []*node {
	for i, it := range plan {
		if i >= len(nodes) {
			nodes = append(nodes, t.add(parent, up, it))
			continue
		}
		n := nodes[i]
		if n.mi != nil {
			change(n.mi, n.item, it)
		}
		n.children = t.apply(n.mi, n, n.children, it.Children)
		n.item = it
	}
	return nodes
}

// add creates it (and its submenu) at the end of parent (the top level when
// nil) and starts the goroutine that waits on its clicks.
func (t *Tray) add(parent *systray.MenuItem, up *node, it Item) *node {
	if it.Separator {
		if parent != nil {
			parent.AddSeparator()
		} else {
			systray.AddSeparator()
		}
		return &node{item: it, parent: up}
	}
	var mi *systray.MenuItem
	switch {
	case parent != nil && it.Checkable:
		mi = parent.AddSubMenuItemCheckbox(it.Label, "", it.Checked)
	case parent != nil:
		mi = parent.AddSubMenuItem(it.Label, "")
	case it.Checkable:
		mi = systray.AddMenuItemCheckbox(it.Label, "", it.Checked)
	default:
		mi = systray.AddMenuItem(it.Label, "")
	}
	if it.Disabled {
		mi.Disable()
	}
	if it.Hidden {
		mi.Hide()
	}
	n := &node{mi: mi, item: it, parent: up}
	for _, c := range it.Children {
		n.children = append(n.children, t.add(mi, n, c))
	}
	t.clicks.Add(1)
	go func() {
		defer t.clicks.Done()
		for range mi.ClickedCh {
			t.mu.Lock()
			cur, ok := clickable(n)
			t.mu.Unlock()
			if ok {
				t.onAction(cur)
			}
		}
	}()
	return n
}

// clickable is what a click on n acts on: the item n shows now, unless it
// shows nothing to act on (hidden, itself or a menu above it: a tray host
// may click an id it read before the place was hidden; disabled; or no
// action). The caller holds mu.
func clickable(n *node) (Item, bool) {
	for p := n; p != nil; p = p.parent {
		if p.item.Hidden {
			return Item{}, false
		}
	}
	return n.item, n.item.Action != ActNone && !n.item.Disabled
}

// change updates mi, showing was, to show it (same kind: Reconcile's
// plan), touching only what differs: each change is a re-read for the tray
// host.
func change(mi *systray.MenuItem, was, it Item) {
	if it.Hidden {
		if !was.Hidden {
			mi.Hide()
		}
		return
	}
	if it.Label != was.Label {
		mi.SetTitle(it.Label)
	}
	if it.Disabled != was.Disabled {
		if it.Disabled {
			mi.Disable()
		} else {
			mi.Enable()
		}
	}
	if it.Checked != was.Checked {
		if it.Checked {
			mi.Check()
		} else {
			mi.Uncheck()
		}
	}
	if was.Hidden {
		mi.Show()
	}
}

// kind is what a place is made as, which it stays: systray makes a check
// box one when it creates it (on Linux), and a separator has no item to
// change at all.
type kind int

const (
	kindPlain kind = iota
	kindCheck
	kindSeparator
)

var kindNames = []string{"plain", "check", "separator"}

func (k kind) String() string { return enum.Name(k, "kind", kindNames) }

func kindOf(it Item) kind {
	switch {
	case it.Separator:
		return kindSeparator
	case it.Checkable:
		return kindCheck
	}
	return kindPlain
}

// Reconcile plans how the shown places (what the tray shows now, hidden
// places included: the last plan) come to show next without removing an
// item, so every item keeps its id. systray can hide and show an item and
// append one at the end of the top level or of a submenu, nothing else;
// so, level by level, place i shows next's item i (retitled, enabled,
// checked, shown or hidden as need be; a place hidden keeps what it
// showed), shown places beyond next's are hidden, and next's items beyond
// the shown ones are appended. Build keeps a place for everything a section
// in the middle may show (Item.Hidden), so the usual changes (a session
// coming or going, the link, the day's line, a submenu's Resume) fit.
//
// It reports false, and the menu is rebuilt, when a place's kind would
// change (a separator, a check box or a plain item where another was), a
// separator would have to go, or an item that shows would keep an empty
// submenu.
func Reconcile(shown, next []Item) ([]Item, bool) {
	if len(shown) == 0 && len(next) == 0 {
		return nil, true
	}
	plan := make([]Item, 0, max(len(shown), len(next)))
	for i, it := range next {
		if i >= len(shown) {
			plan = append(plan, it)
			continue
		}
		was := shown[i]
		if kindOf(was) != kindOf(it) {
			return nil, false
		}
		if it.Hidden {
			was.Hidden = true
			plan = append(plan, was)
			continue
		}
		if len(it.Children) == 0 && len(was.Children) > 0 {
			return nil, false
		}
		if was.SessionID != "" && it.SessionID != "" && was.SessionID != it.SessionID {
			// The place shows another session now (one came, went or
			// was sorted above it): the actions it showed are hidden
			// and this session's appended, with ids of their own, so a
			// click a host read for the session shown before (its
			// Interrupt) is not taken for this one's.
			it.Children = append(hiddenAll(was.Children), it.Children...)
			plan = append(plan, it)
			continue
		}
		children, ok := Reconcile(was.Children, it.Children)
		if !ok {
			return nil, false
		}
		it.Children = children
		plan = append(plan, it)
	}
	for i := len(next); i < len(shown); i++ {
		was := shown[i]
		if was.Separator {
			return nil, false
		}
		was.Hidden = true
		plan = append(plan, was)
	}
	return plan, true
}

// hiddenAll is items, each hidden (what it showed kept).
func hiddenAll(items []Item) []Item {
	out := make([]Item, len(items))
	for i, it := range items {
		it.Hidden = true
		out[i] = it
	}
	return out
}

// clear removes the shown items. Each is removed itself (with its
// submenu), which closes its click channel and so ends its goroutine:
// systray.ResetMenu alone skips the item created last (it removes ids below
// the last one handed out), which would leave its goroutine waiting. The
// reset then drops the separators.
func (t *Tray) clear() {
	for _, n := range t.root {
		if n.mi != nil {
			n.mi.Remove()
		}
	}
	systray.ResetMenu()
}

// Close removes the menu and waits for the click goroutines to end. Call
// it after the last Show, before systray.Quit.
func (t *Tray) Close() {
	t.clear()
	t.mu.Lock()
	t.root = nil
	t.mu.Unlock()
	t.places = nil
	t.clicks.Wait()
}

// The tray's pacing: a burst of changes redraws once after renderDelay; the
// ages in the labels move when their text would, batched: at most once per
// ageFloor (each session's age moves at its own second; an update in place
// still costs the tray host a re-read of the items).
const (
	renderDelay = 250 * time.Millisecond
	ageFloor    = 30 * time.Second
)

// Run keeps the tray in step with the model until ctx is done, from the
// goroutine that calls it (main starts it once the tray is ready and waits
// for it).
func (t *Tray) Run(ctx context.Context, m *model.Model) {
	Follow(ctx, m, time.Now, t.Show)
}

// SnapshotOf is what the tray shows now, read from the model's memory.
func SnapshotOf(m *model.Model, now time.Time) Snapshot {
	snap := Snapshot{Sessions: m.Sessions(), Paused: m.Prefs().Paused, Now: now, Link: m.LinkSentence(now)}
	if d, ok := m.Today(); ok {
		snap.Today = &d
	}
	for _, g := range m.Groups() {
		snap.Groups = append(snap.Groups, Group{Heading: g.Heading(), Sessions: g.Sessions})
	}
	return snap
}

// NextChange is the next instant a label of the menu built from snap
// moves by itself: the earliest age to move, or in a second while the
// link sentence (its reconnect countdown) shows; zero when none would.
func NextChange(snap Snapshot) time.Time {
	var next time.Time
	if snap.Link != "" {
		next = snap.Now.Add(time.Second)
	}
	for _, s := range snap.Sessions {
		next = model.Earliest(next, model.NextAgeChange(snap.Now, s.StateChangedAt))
	}
	return next
}

// Follow builds a menu from the model at the start, after each burst of
// changes and when a label would move, and hands it to show, until ctx is
// done. Nothing is built while nothing changes.
func Follow(ctx context.Context, m *model.Model, now func() time.Time, show func(Menu)) {
	next := model.NewDeadline()
	model.Pace(ctx, m.Watch(ctx), renderDelay, ageFloor, next, func(model.Redraw) {
		snap := SnapshotOf(m, now())
		show(Build(snap))
		next.Set(NextChange(snap))
	})
}
