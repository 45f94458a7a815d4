package app

import (
	"testing"

	"fyne.io/fyne/v2/test"
)

// The goldens are the window at its default 1000x700 with the light theme
// and the fixed clock. A first run (or a deliberate change) writes the
// image to testdata/failed/; look at it, then move it to testdata/.

func TestGoldenSessions(t *testing.T) {
	e := newEnv(t, seed(), seedTimeline())
	e.w.win.Canvas().Unfocus() // no keyboard cursor in the picture
	test.AssertImageMatches(t, "sessions.png", e.w.win.Canvas().Capture())
}

func TestGoldenSettingsGeneral(t *testing.T) {
	e := newEnv(t, seed(), nil)
	e.w.ShowSettings()
	e.w.win.Canvas().Unfocus()
	test.AssertImageMatches(t, "settings_general.png", e.w.win.Canvas().Capture())
}

// The Notifications tab: a secret set shows as dots, one not set says so.
func TestGoldenSettingsNotifications(t *testing.T) {
	e := newEnv(t, seed(), nil)
	if _, err := e.settings.Update(e.ctx, "notify.ntfy.topic", "ann-sessions"); err != nil {
		t.Fatal(err)
	}
	e.w.ShowSettings()
	e.w.settings.tabs.SelectIndex(int(tabNotifications))
	e.w.win.Canvas().Unfocus()
	test.AssertImageMatches(t, "settings_notifications.png", e.w.win.Canvas().Capture())
}

func TestGoldenDetail(t *testing.T) {
	e := newEnv(t, seed(), seedTimeline())
	e.w.ShowSession("a1")
	e.w.win.Canvas().Unfocus()
	test.AssertImageMatches(t, "detail.png", e.w.win.Canvas().Capture())
}
