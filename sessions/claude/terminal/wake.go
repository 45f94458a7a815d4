package terminal

import (
	"context"
	"slices"
	"time"
)

// Wake merges notify's notifications for the directories dirs returns with
// a rescan every poll: a source's loop wakes on either. dirs is read again
// at every wake, and notify is restarted on the new list when it changed
// (a day directory passes, the session's file is found). A nil notify
// leaves it to the interval; one that fails to start too. The channel
// holds at most one pending wake: a burst of changes is one look.
func Wake(ctx context.Context, notify Notify, poll time.Duration, dirs func() []string) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		var notes <-chan struct{}
		var current []string
		stop := func() {}
		defer func() { stop() }()
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			if d := dirs(); notify != nil && !slices.Equal(d, current) {
				stop()
				current = d
				notes, stop = subscribe(ctx, notify, d)
			}
			select {
			case <-ctx.Done():
				return
			case _, ok := <-notes:
				if !ok {
					notes = nil
					continue
				}
			case <-t.C:
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out
}

// subscribe starts notify for dirs until the returned stop is called.
func subscribe(ctx context.Context, notify Notify, dirs []string) (<-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch, err := notify(ctx, dirs)
	if err != nil {
		cancel()
		return nil, func() {}
	}
	return ch, cancel
}
