package tray

import (
	"context"
	"reflect"
	"runtime"
	"sync"
	"time"

	"fyne.io/systray"

	"github.com/session-supervisor/session-supervisor/assets"
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
	// root mirrors last.Items: the systray items shown and the Item each
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
// time (Run's). An unchanged model is not re-sent. A menu of the same shape
// as the shown one (the usual change: an age, a state, a check) updates the
// items in place, keeping their ids, so a menu the user has open stays open
// and the tray host re-reads only what changed; any other change rebuilds
// the menu.
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
	if !first && SameShape(t.last.Items, m.Items) {
		t.mu.Lock()
		update(t.root, m.Items)
		t.mu.Unlock()
	} else {
		t.clear()
		t.mu.Lock()
		t.root = t.add(nil, m.Items)
		t.mu.Unlock()
	}
	t.last, t.shown = m, true
}

// changed reports whether m differs from the shown menu last: a menu
// rebuilt from an unchanged model is not sent again.
func changed(last, m Menu) bool { return !reflect.DeepEqual(last, m) }

// add creates list's items under parent (the top level when nil).
func (t *Tray) add(parent *systray.MenuItem, list []Item) []*node {
	out := make([]*node, 0, len(list))
	for _, it := range list {
		if it.Separator {
			if parent != nil {
				parent.AddSeparator()
			} else {
				systray.AddSeparator()
			}
			out = append(out, &node{item: it})
			continue
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
		n := &node{mi: mi, item: it}
		n.children = t.add(mi, it.Children)
		out = append(out, n)
		t.clicks.Add(1)
		go func() {
			defer t.clicks.Done()
			for range mi.ClickedCh {
				t.mu.Lock()
				cur := n.item
				t.mu.Unlock()
				if cur.Action != ActNone && !cur.Disabled {
					t.onAction(cur)
				}
			}
		}()
	}
	return out
}

// update brings shown items of the same shape to list, touching only what
// differs.
func update(shown []*node, list []Item) {
	for i, n := range shown {
		it := list[i]
		if n.mi != nil {
			if it.Label != n.item.Label {
				n.mi.SetTitle(it.Label)
			}
			if it.Disabled != n.item.Disabled {
				if it.Disabled {
					n.mi.Disable()
				} else {
					n.mi.Enable()
				}
			}
			if it.Checked != n.item.Checked {
				if it.Checked {
					n.mi.Check()
				} else {
					n.mi.Uncheck()
				}
			}
		}
		update(n.children, it.Children)
		n.item = it
	}
}

// SameShape reports whether b can be shown by updating a's items in place:
// the same items at every level, separators and check boxes where they were
// (a check box is made one when created, on Linux), and submenus where
// submenus were. Labels, checks, enabled states and actions may differ.
func SameShape(a, b []Item) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Separator != y.Separator || x.Checkable != y.Checkable || (len(x.Children) == 0) != (len(y.Children) == 0) {
			return false
		}
		if !SameShape(x.Children, y.Children) {
			return false
		}
	}
	return true
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
