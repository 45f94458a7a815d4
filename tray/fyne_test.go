package tray

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
)

// recordingDesktop is a desktop.App that keeps the menus it is given, as
// Fyne's driver does: it draws the first one again when the system tray
// reports ready, possibly after later ones were set.
type recordingDesktop struct {
	menus []*fyne.Menu
	icons int
}

func (d *recordingDesktop) SetSystemTrayMenu(m *fyne.Menu)  { d.menus = append(d.menus, m) }
func (d *recordingDesktop) SetSystemTrayIcon(fyne.Resource) { d.icons++ }
func (d *recordingDesktop) SetSystemTrayWindow(fyne.Window) {}
func menuLabels(m *fyne.Menu) (out []string) {
	for _, it := range m.Items {
		out = append(out, it.Label)
	}
	return out
}

// The menu the driver kept from the first Show carries the latest items:
// drawn again late, it cannot take the tray back to an older state. An
// unchanged model is not sent again.
func TestShowKeepsOneMenuUpToDate(t *testing.T) {
	test.NewTempApp(t)
	d := &recordingDesktop{}
	tr := New(d, func(Item) {})
	first := Menu{Items: []Item{{Label: "1 recovering"}, {Label: "Quit", Action: ActQuit}}}
	later := Menu{Items: []Item{{Label: "1 needs you"}, {Label: "Quit", Action: ActQuit}}}
	tr.Show(first)
	tr.Show(later)
	tr.Show(later)
	if len(d.menus) != 2 || d.icons != 2 {
		t.Fatalf("set %d menus and %d icons, want 2 each (the repeat is not sent)", len(d.menus), d.icons)
	}
	for i, m := range d.menus {
		if got := menuLabels(m); len(got) != 2 || got[0] != "1 needs you" {
			t.Errorf("menu %d the driver holds reads %q, want the latest items", i, got)
		}
	}
}
