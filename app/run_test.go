package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// countingBackend counts timeline reads: the only read left on the
// backend, which must happen once per opened session, never per redraw.
type countingBackend struct {
	Backend
	reads int
}

func (c *countingBackend) Timeline(ctx context.Context, id string, limit int) ([]localapi.TimelineRow, error) {
	c.reads++
	return c.Backend.Timeline(ctx, id, limit)
}

func TestRunRefreshesOncePerBurst(t *testing.T) {
	e := newEnv(t, seed(), nil)
	cb := &countingBackend{Backend: e.rt}
	// A model fed by its own goroutine from the runtime, as in the app.
	ctx, cancel := context.WithCancel(e.ctx)
	m := model.New()
	sub := e.rt.Subscribe(256, false)
	m.Apply(<-sub.C) // the subscription starts with a snapshot
	fed := make(chan struct{})
	go func() { m.Run(ctx, sub.C, nil); close(fed) }()
	t.Cleanup(func() { cancel(); <-fed; e.rt.Bus().Unsubscribe(sub) })

	w := NewWindow(fyne.CurrentApp(), cb, e.settings, m, Options{Now: func() time.Time { return t0 }})
	t.Cleanup(w.win.Close)
	w.async = func(f func()) { f() }
	w.do = func(f func()) { f() }
	w.ShowSession("b2")

	// The test goroutine plays Fyne's: Run hands it every UI update.
	ui := make(chan func(), 64)
	w.do = func(f func()) { ui <- f }
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()

	// The first tick proves Run is watching.
	select {
	case f := <-ui:
		f()
	case <-time.After(5 * time.Second):
		t.Fatal("Run never ticked")
	}

	drain := func() {
		deadline := time.After(3 * coalesceDelay)
		for {
			select {
			case f := <-ui:
				f()
			case <-deadline:
				return
			}
		}
	}
	w.refreshes = 0
	// A burst: a command from elsewhere (the tray) publishes the session
	// and two timeline rows; snapshots follow.
	if _, err := e.rt.Ack(e.ctx, "b2"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.rt.PublishSnapshot()
	}
	drain()
	if w.refreshes != 1 {
		t.Fatalf("%d refreshes for one burst, want 1", w.refreshes)
	}
	if got := w.detail.badge.text.Text; got != "Idle" {
		t.Fatalf("detail after the burst: %q", got)
	}
	if !strings.Contains(strings.Join(timelineLines(w.detail.timeline), "\n"), "acknowledged by the user") {
		t.Fatal("the new timeline row did not appear")
	}
	// The rows came through the model: the history was read once, when
	// the session opened.
	if cb.reads != 1 {
		t.Fatalf("the timeline was read %d times, want once", cb.reads)
	}

	// A hidden window is not refreshed (it is when shown again).
	w.hide()
	w.refreshes = 0
	e.rt.PublishSnapshot()
	drain()
	if w.refreshes != 0 {
		t.Fatalf("a hidden window refreshed %d times", w.refreshes)
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

// The window asks Run for the next instant a text on it moves (schedule):
// the earliest listed age, every second while a countdown shows, nothing
// while hidden; the list alone filtered to the day-old session asks for
// its next day.
func TestWindowNextChange(t *testing.T) {
	cases := []struct {
		name  string
		setup func(e *env)
		want  time.Duration // after now; 0: none
	}{
		{"the list", func(e *env) {}, time.Second}, // seconds-old sessions
		{"a day-old session alone", func(e *env) { e.w.list.state.SetSelected("Idle") }, 22 * time.Hour},
		{"hidden", func(e *env) { e.w.hide() }, 0},
		{"a detail's recovery countdown", func(e *env) {
			e.w.ShowSession("d4")
		}, time.Second},
		{"a detail without countdown", func(e *env) {
			e.w.ShowSession("g7")
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, seed(), nil)
			c.setup(e)
			got := e.w.nextChange()
			if c.want == 0 {
				if !got.IsZero() {
					t.Fatalf("next change in %s, want none", got.Sub(e.now))
				}
				return
			}
			if got.Sub(e.now) != c.want {
				t.Fatalf("next change in %s, want %s", got.Sub(e.now), c.want)
			}
		})
	}
}
