package tray

import (
	"context"
	"reflect"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"

	"github.com/session-supervisor/session-supervisor/assets"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// Tray shows menu models in the desktop's system tray.
type Tray struct {
	app      desktop.App
	onAction func(Item)
	icons    map[assets.Icon]fyne.Resource
	last     Menu
	shown    bool
	// menu is the one Fyne menu the tray ever hands the driver; each Show
	// replaces its items. Fyne keeps the first menu it was given and
	// draws it again when the system tray reports ready, which under load
	// came after later menus had been set: a tray built before a
	// session's escalation went back to that older menu, and the unchanged
	// model was never sent again. The same menu holds the latest items
	// whenever it is drawn.
	menu *fyne.Menu
}

// New binds a tray to a desktop app. onAction runs on Fyne's goroutine for
// every click of an item with an action.
func New(a desktop.App, onAction func(Item)) *Tray {
	icons := map[assets.Icon]fyne.Resource{}
	for i := assets.IconAttention; i <= assets.IconIdle; i++ {
		icons[i] = fyne.NewStaticResource("tray-"+i.String()+".png", assets.TrayIcon(i))
	}
	return &Tray{app: a, onAction: onAction, icons: icons}
}

// Show replaces the tray's icon and menu; call it on Fyne's goroutine
// (fyne.Do). An unchanged model is not re-sent: rebuilding renumbers the
// items, which would close a menu the user has open.
func (t *Tray) Show(m Menu) {
	if t.shown && reflect.DeepEqual(m, t.last) {
		return
	}
	t.last, t.shown = m, true
	t.app.SetSystemTrayIcon(t.icons[m.Icon])
	if t.menu == nil {
		t.menu = fyne.NewMenu("Session Supervisor")
	}
	t.menu.Items = t.items(m.Items)
	t.app.SetSystemTrayMenu(t.menu)
}

func (t *Tray) items(list []Item) []*fyne.MenuItem {
	out := make([]*fyne.MenuItem, 0, len(list))
	for _, it := range list {
		if it.Separator {
			out = append(out, fyne.NewMenuItemSeparator())
			continue
		}
		item := it
		mi := fyne.NewMenuItem(item.Label, nil)
		if item.Action != ActNone {
			mi.Action = func() { t.onAction(item) }
		}
		mi.Disabled = item.Disabled
		mi.Checked = item.Checkable && item.Checked
		if len(item.Children) > 0 {
			mi.ChildMenu = fyne.NewMenu("", t.items(item.Children)...)
		}
		out = append(out, mi)
	}
	return out
}

// The tray's pacing: a burst of changes redraws once after renderDelay; the
// ages in the labels move when their text would, batched: at most once per
// ageFloor (each session's age moves at its own second, and every menu
// sent renumbers the items and costs the tray host a re-read).
const (
	renderDelay = 250 * time.Millisecond
	ageFloor    = 30 * time.Second
)

// Run keeps the tray in step with the model until ctx is done. It owns the
// tray's loop: main starts it in a goroutine and waits for it.
func (t *Tray) Run(ctx context.Context, m *model.Model) {
	Follow(ctx, m, time.Now, func(menu Menu) { fyne.Do(func() { t.Show(menu) }) })
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
