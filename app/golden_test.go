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

func TestGoldenDetail(t *testing.T) {
	e := newEnv(t, seed(), seedTimeline())
	e.w.ShowSession("a1")
	e.w.win.Canvas().Unfocus()
	test.AssertImageMatches(t, "detail.png", e.w.win.Canvas().Capture())
}
