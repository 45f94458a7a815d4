package app

import (
	"context"
	"time"

	"github.com/session-supervisor/session-supervisor/ui/model"
)

// coalesceDelay bounds how often model changes redraw: a burst of events
// (a tool-heavy turn publishes dozens a second) becomes one refresh at most
// every 200 ms, which still reads as live.
const coalesceDelay = 200 * time.Millisecond

// tickFloor batches the texts that move by themselves: each listed
// session's age moves at its own instant, and any change repaints the
// whole window, so they move together at most once a second.
const tickFloor = time.Second

// Run keeps the window live until ctx is done: a change of the model
// triggers a coalesced Refresh, and the ages and countdowns on screen move
// at the instant their text would (schedule; at most once per tickFloor),
// not on a fixed tick; a hidden window asks for no instant and sleeps. Widget updates go through
// fyne.Do. Call it in its own goroutine.
func (w *Window) Run(ctx context.Context) {
	model.Pace(ctx, w.m.Watch(ctx), coalesceDelay, tickFloor, w.next, func(r model.Redraw) {
		w.do(func() {
			switch {
			case r == model.RedrawDue:
				w.tick()
			case w.shown:
				w.Refresh()
			default:
				// A hidden window is refreshed when it is shown again.
			}
			w.schedule()
		})
	})
}

// schedule tells Run the next instant a text on screen moves by itself.
// Call it on Fyne's goroutine after anything that changes what is shown.
func (w *Window) schedule() { w.next.Set(w.nextChange()) }

// nextChange is that instant: the earliest age of the listed sessions to
// move, every second while a countdown shows (the banner's reconnect, a
// detail's recovery), some seconds for a turn's time left; zero when the
// window is hidden or nothing on it moves.
func (w *Window) nextChange() time.Time {
	if !w.shown {
		return time.Time{}
	}
	now := w.now()
	var next time.Time
	if w.banner.Visible() || w.detail.content.Visible() && w.detail.recovery.Visible() {
		next = now.Add(time.Second)
	}
	if w.list.content.Visible() {
		next = model.Earliest(next, w.list.nextChange(now))
	}
	return next
}
