package app

import (
	"context"
	"time"

	"github.com/session-supervisor/session-supervisor/supervisor"
)

// coalesceDelay bounds how often bus traffic re-reads the backend: a burst
// of events (a tool-heavy turn publishes dozens a second) becomes one
// refresh at most every 200 ms, which still reads as live.
const coalesceDelay = 200 * time.Millisecond

// busBuffer is the subscription's queue. Overflowing it only costs
// incremental messages; the next snapshot is always delivered, and any
// message at all triggers a full re-read here anyway.
const busBuffer = 256

// Run keeps the window live until ctx is done: bus messages that change
// what the window shows trigger a coalesced Refresh, and a one-second tick
// moves countdowns and ages. Widget updates go through fyne.Do. Call it in
// its own goroutine.
func (w *Window) Run(ctx context.Context) {
	bus := w.b.Bus()
	sub := bus.Subscribe(busBuffer)
	defer bus.Unsubscribe(sub)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-sub.C:
			if !ok {
				return
			}
			if refreshes(m.Type) && fire == nil {
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

// refreshes reports whether a message can change what the window shows.
func refreshes(t supervisor.MessageType) bool {
	switch t {
	case supervisor.MsgSession, supervisor.MsgTimeline, supervisor.MsgSnapshot,
		supervisor.MsgResync, supervisor.MsgEscalation:
		return true
	}
	return false
}
