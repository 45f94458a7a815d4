//go:build linux

package tray

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"fyne.io/systray"
	"github.com/godbus/dbus/v5"

	"github.com/session-supervisor/session-supervisor/requiretool"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/testproc"
)

// The binding over the real wire: fyne.io/systray on a private session bus,
// its menu read and clicked as a tray host does (com.canonical.dbusmenu,
// hidden items left out). Through sessions coming and going, submenus
// growing and shrinking and a rebuild, the host sees exactly the model's
// menu; a click by an id read before a change acts on what the item shows
// now, and a click on a hidden item does nothing. systray runs once per
// process (its quit is final, its session bus connection process-wide), so
// the test runs in a process of its own.
func TestTrayOverDBus(t *testing.T) {
	if !testproc.Own(t) {
		return
	}
	host, dest := startSystray(t)
	acts := make(chan Item, 16)
	tr := New(func(it Item) { acts <- it })
	closed := false
	t.Cleanup(func() {
		if !closed {
			tr.Close()
		}
	})

	alpha := sess("a", "alpha", sessions.Idle, nil)
	beta := sess("b", "beta", sessions.WaitingOnUser, nil)
	dead := sess("a", "alpha", sessions.Interrupted, func(s *sessions.Session) {
		s.Source, s.AgentSessionID, s.NeedsAttention = sessions.Observed, "sid", true
	})
	show := func(what string, list ...sessions.Session) hostItem {
		t.Helper()
		m := Build(Snapshot{Now: now, Sessions: list})
		tr.Show(m)
		root := readMenu(t, host, dest)
		if got, want := root.outline(), outline(visible(m.Items)); got != want {
			t.Fatalf("%s: the host sees\n%s\nwant\n%s", what, got, want)
		}
		return root
	}
	click := func(id int32) {
		t.Helper()
		if err := menuObject(t, host, dest).Call("com.canonical.dbusmenu.Event", 0, id, "clicked", dbus.MakeVariant(int32(0)), uint32(0)).Err; err != nil {
			t.Fatalf("clicking %d: %v", id, err)
		}
	}
	acted := func() Item {
		t.Helper()
		select {
		case it := <-acts:
			return it
		case <-time.After(10 * time.Second):
			t.Fatal("a click did not act")
			return Item{}
		}
	}

	first := show("one session", alpha)
	open := first.find(t, "Open Session Supervisor…")

	// A session appears after the host read the menu: its click on Open,
	// by the id it read, opens the window.
	two := show("a second session", alpha, beta)
	if again := two.find(t, "Open Session Supervisor…"); again.ID != open.ID {
		t.Fatalf("Open's id went from %d to %d as a session appeared", open.ID, again.ID)
	}
	click(open.ID)
	if it := acted(); it.Action != ActOpenWindow {
		t.Fatalf("Open by its old id did %s", it.Action)
	}

	// beta goes: the sessions move up a place (most urgent first), so
	// beta's place now shows alpha and alpha's last place is hidden. A
	// click by an id read before acts on nothing there: not on the hidden
	// place, and not on alpha through beta's former Open (the place's
	// actions for alpha are new items). alpha's Open as the host reads it
	// now acts on alpha.
	betaOpen := two.find(t, "● beta").find(t, "Open")
	alphaOpen := two.find(t, "○ alpha").find(t, "Open")
	now1 := show("the second session gone", alpha)
	click(alphaOpen.ID)
	click(betaOpen.ID)
	click(now1.find(t, "○ alpha").find(t, "Open").ID)
	if it := acted(); it.Action != ActOpenSession || it.SessionID != "a" {
		t.Fatalf("alpha's Open did %s on %q, want open_session on alpha", it.Action, it.SessionID)
	}

	// A submenu grows (Resume in the background) and shrinks, in place.
	grown := show("Resume offered", dead)
	show("Resume gone", alpha)
	back := show("Resume offered again", dead)
	if grown.find(t, "⚠ alpha").find(t, "Resume").ID != back.find(t, "⚠ alpha").find(t, "Resume").ID {
		t.Error("Resume came back as a new item, not in its place")
	}
	if again := back.find(t, "Open Session Supervisor…"); again.ID != open.ID {
		t.Fatalf("Open's id went from %d to %d through the submenu's changes", open.ID, again.ID)
	}

	// The last session gone: its separator goes too, so the menu is
	// rebuilt, still exactly the model's.
	show("no session", nil...)

	tr.Close()
	closed = true
	close(acts)
	for it := range acts {
		t.Errorf("a click acted on %s of %q: the hidden place's", it.Action, it.SessionID)
	}
	if root := readMenu(t, host, dest); len(root.Children) != 0 {
		t.Errorf("after Close the host sees\n%s", root.outline())
	}
}

// startSystray runs systray on a private session bus whose
// StatusNotifierWatcher is the test's, and returns the test's connection
// and the item's bus name once the item registered (so systray's
// connection is up).
func startSystray(t *testing.T) (*dbus.Conn, string) {
	t.Helper()
	addr := requiretool.SessionBus(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)

	host, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connecting to the bus: %v", err)
	}
	t.Cleanup(func() { host.Close() })
	w := &watcher{registered: make(chan struct{}, 4)}
	if err := host.Export(w, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
	if reply, err := host.RequestName("org.kde.StatusNotifierWatcher", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning the watcher's name: %v %v", reply, err)
	}

	ran := make(chan struct{})
	go func() {
		systray.Run(nil, nil)
		close(ran)
	}()
	t.Cleanup(func() {
		systray.Quit()
		<-ran
	})
	select {
	case <-w.registered:
	case <-time.After(20 * time.Second):
		t.Fatal("systray did not register its item")
	}
	return host, fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", os.Getpid())
}

// watcher plays the StatusNotifierWatcher: systray registers its item once
// its bus connection is up.
type watcher struct{ registered chan struct{} }

func (w *watcher) RegisterStatusNotifierItem(service string) *dbus.Error {
	w.registered <- struct{}{}
	return nil
}

// hostItem is an item as the tray host reads it.
type hostItem struct {
	ID       int32
	Label    string
	Children []hostItem
}

type layoutNode struct {
	ID         int32
	Properties map[string]dbus.Variant
	Children   []dbus.Variant
}

func menuObject(t *testing.T, host *dbus.Conn, dest string) dbus.BusObject {
	t.Helper()
	v, err := host.Object(dest, "/StatusNotifierItem").GetProperty("org.kde.StatusNotifierItem.Menu")
	if err != nil {
		t.Fatalf("the item's menu: %v", err)
	}
	path, ok := v.Value().(dbus.ObjectPath)
	if !ok {
		t.Fatalf("the Menu property is %T", v.Value())
	}
	return host.Object(dest, path)
}

// readMenu reads the whole menu as a tray host does: GetLayout, hidden
// items ("visible": false) left out with their submenus.
func readMenu(t *testing.T, host *dbus.Conn, dest string) hostItem {
	t.Helper()
	var rev uint32
	var root layoutNode
	call := menuObject(t, host, dest).Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{})
	if err := call.Store(&rev, &root); err != nil {
		t.Fatalf("GetLayout: %v", err)
	}
	var walk func(n layoutNode) hostItem
	walk = func(n layoutNode) hostItem {
		it := hostItem{ID: n.ID}
		it.Label, _ = n.Properties["label"].Value().(string)
		if kind, _ := n.Properties["type"].Value().(string); kind == "separator" {
			it.Label = "---"
		}
		for _, c := range n.Children {
			var child layoutNode
			if err := dbus.Store([]any{c.Value()}, &child); err != nil {
				t.Fatalf("a layout node: %v", err)
			}
			if shown, ok := child.Properties["visible"].Value().(bool); ok && !shown {
				continue
			}
			it.Children = append(it.Children, walk(child))
		}
		return it
	}
	return walk(root)
}

// find is the child whose label starts with prefix.
func (h hostItem) find(t *testing.T, prefix string) hostItem {
	t.Helper()
	for _, c := range h.Children {
		if strings.HasPrefix(c.Label, prefix) {
			return c
		}
	}
	t.Fatalf("no %q in\n%s", prefix, h.outline())
	return hostItem{}
}

// outline is the host's menu as lines, a submenu's items indented.
func (h hostItem) outline() string {
	var b strings.Builder
	var walk func(list []hostItem, depth int)
	walk = func(list []hostItem, depth int) {
		for _, c := range list {
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), c.Label)
			walk(c.Children, depth+1)
		}
	}
	walk(h.Children, 0)
	return b.String()
}

// outline is the model's menu in the same form.
func outline(items []Item) string {
	h := hostItem{}
	var conv func(list []Item) []hostItem
	conv = func(list []Item) []hostItem {
		var out []hostItem
		for _, it := range list {
			label := it.Label
			if it.Separator {
				label = "---"
			}
			out = append(out, hostItem{Label: label, Children: conv(it.Children)})
		}
		return out
	}
	h.Children = conv(items)
	return h.outline()
}
