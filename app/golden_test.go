package app

import (
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/ui/model"
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

// The list with another machine configured: each machine's sessions under
// its heading, one machine reconnecting.
func TestGoldenSessionsMachines(t *testing.T) {
	e := newEnv(t, seed()[:3], nil)
	e.m.SetMachines([]string{"devbox", "gpu"})
	var far []sessions.Session
	for _, s := range seed()[3:6] {
		s.ID = model.Key("devbox", s.ID)
		far = append(far, s)
	}
	e.m.Apply(localapi.Message{Type: localapi.MsgSnapshot, Machine: "devbox", Sessions: far})
	e.m.Apply(localapi.Message{Type: localapi.MsgLink, Machine: "devbox", Link: &localapi.LinkStatus{State: localapi.LinkConnected}})
	e.m.Apply(localapi.Message{Type: localapi.MsgLink, Machine: "gpu", Link: &localapi.LinkStatus{State: localapi.LinkReconnecting,
		Since: time.Date(2026, 11, 29, 12, 3, 0, 0, time.Local), Up: t0, Error: "machine gpu: Connection closed by 127.0.0.1 port 22"}})
	e.w.Refresh()
	e.w.win.Canvas().Unfocus()
	test.AssertImageMatches(t, "sessions-machines.png", e.w.win.Canvas().Capture())
}
