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
// ages in the labels move every refreshEvery even when nothing changes.
const (
	renderDelay  = 250 * time.Millisecond
	refreshEvery = 30 * time.Second
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

// Follow builds a menu from the model at the start, after each burst of
// changes and at every refresh, and hands it to show, until ctx is done.
func Follow(ctx context.Context, m *model.Model, now func() time.Time, show func(Menu)) {
	Coalesce(ctx, m.Watch(ctx), renderDelay, refreshEvery, func() { show(Build(SnapshotOf(m, now()))) })
}

// Coalesce calls render once per burst: after a signal on changes it waits
// delay, swallowing further signals, then renders; it also renders every
// refresh (the ages in the labels move) and once at the start. It returns
// when ctx is done.
func Coalesce(ctx context.Context, changes <-chan struct{}, delay, refresh time.Duration, render func()) {
	render()
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changes:
			if !ok {
				return
			}
			if fire == nil {
				fire = time.After(delay)
			}
		case <-fire:
			fire = nil
			render()
		case <-tick.C:
			if fire == nil {
				render()
			}
		}
	}
}
