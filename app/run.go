package app

import (
	"context"
	"time"
)

// coalesceDelay bounds how often model changes redraw: a burst of events
// (a tool-heavy turn publishes dozens a second) becomes one refresh at most
// every 200 ms, which still reads as live.
const coalesceDelay = 200 * time.Millisecond

// Run keeps the window live until ctx is done: a change of the model
// triggers a coalesced Refresh, and a one-second tick moves countdowns and
// ages. Widget updates go through fyne.Do. Call it in its own goroutine.
func (w *Window) Run(ctx context.Context) {
	changes := w.m.Watch(ctx)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
			if fire == nil {
				fire = time.After(coalesceDelay)
			}
		case <-fire:
			fire = nil
			w.do(func() {
				// A hidden window is refreshed when it is shown again.
				if w.shown {
					w.Refresh()
				}
			})
		case <-tick.C:
			w.do(w.tick)
		}
	}
}
