package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// countingBackend counts full re-reads (Sessions is the first thing a
// Refresh does).
type countingBackend struct {
	Backend
	reads int
}

func (c *countingBackend) Sessions() []sessions.Session {
	c.reads++
	return c.Backend.Sessions()
}

func TestRunRefreshesOncePerBurst(t *testing.T) {
	e := newEnv(t, seed(), nil)
	cb := &countingBackend{Backend: e.rt}
	w := NewWindow(fyne.CurrentApp(), cb, e.settings, Options{Now: func() time.Time { return t0 }})
	t.Cleanup(w.win.Close)
	w.async = func(f func()) { f() }
	w.ShowSession("b2")

	// The test goroutine plays Fyne's: Run hands it every UI update.
	ui := make(chan func(), 64)
	w.do = func(f func()) { ui <- f }
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()

	// The first tick proves Run is subscribed.
	select {
	case f := <-ui:
		f()
	case <-time.After(5 * time.Second):
		t.Fatal("Run never ticked")
	}

	cb.reads = 0
	// A burst: a command from elsewhere (the tray) publishes the session
	// and two timeline rows; snapshots follow.
	if _, err := e.rt.Ack(e.ctx, "b2"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.rt.PublishSnapshot()
	}
	deadline := time.After(3 * coalesceDelay)
	for waiting := true; waiting; {
		select {
		case f := <-ui:
			f()
		case <-deadline:
			waiting = false
		}
	}
	if cb.reads != 1 {
		t.Fatalf("%d refreshes for one burst, want 1", cb.reads)
	}
	if got := w.detail.badge.text.Text; got != "Idle" {
		t.Fatalf("detail after the burst: %q", got)
	}
	if !strings.Contains(strings.Join(timelineLines(w.detail.timeline), "\n"), "acknowledged by the user") {
		t.Fatal("the new timeline row did not appear")
	}

	// A hidden window is not refreshed (it is when shown again).
	w.hide()
	cb.reads = 0
	e.rt.PublishSnapshot()
	deadline = time.After(3 * coalesceDelay)
	for waiting := true; waiting; {
		select {
		case f := <-ui:
			f()
		case <-deadline:
			waiting = false
		}
	}
	if cb.reads != 0 {
		t.Fatalf("a hidden window refreshed %d times", cb.reads)
	}

	cancel()
	for {
		select {
		case <-done:
			return
		case f := <-ui:
			f()
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return when its context ended")
		}
	}
}

func TestShowErrorFromAnyGoroutine(t *testing.T) {
	e := newEnv(t, seed(), nil)
	ui := make(chan func(), 1)
	e.w.do = func(f func()) { ui <- f }
	e.w.hide()
	go e.w.ShowError(errTest)
	(<-ui)()
	if !e.w.shown || len(e.w.win.Canvas().Overlays().List()) == 0 {
		t.Fatal("ShowError must bring the window up with the error")
	}
	e.w.ShowError(nil) // nothing to show: no call, no block
}
