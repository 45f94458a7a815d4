package observe

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The loops every terminal source runs the same way (Claude's observer too):
// what differs is how it scans and what one look reads.

// Wake merges the notifications for dirs (notify may be nil: the poll
// alone) with a poll every interval; dirs is asked again after every wake,
// and the watch is moved when its answer changed (a day passes, the file
// is found). The channel holds one pending wake: bursts coalesce.
func Wake(ctx context.Context, notify Notify, poll time.Duration, dirs func() []string) <-chan struct{} {
	return WakeAlso(ctx, notify, poll, dirs, nil)
}

// WakeAlso is Wake that is also woken by every value of also (another
// witness of a change than the file system: Claude's hook events; nil:
// none).
func WakeAlso(ctx context.Context, notify Notify, poll time.Duration, dirs func() []string, also <-chan struct{}) <-chan struct{} {
	return WakeWhile(ctx, notify, poll, dirs, also, nil)
}

// WakeWhile is WakeAlso whose poll runs only while polling answers true
// (asked after every wake; nil: always): a source whose processes come
// from the shared process table, which wakes it through also when one
// appears or goes, has nothing to poll for while it has none. The poll's
// timer is armed for poll after the last wake, not ticking.
func WakeWhile(ctx context.Context, notify Notify, poll time.Duration, dirs func() []string, also <-chan struct{}, polling func() bool) <-chan struct{} {
	out := make(chan struct{}, 1)
	var notes <-chan struct{}
	var current []string
	stop := func() {}
	follow := func() {
		if d := dirs(); notify != nil && !slices.Equal(d, current) {
			stop()
			current = d
			notes, stop = subscribe(ctx, notify, d)
		}
	}
	// The first watch is in place when Wake returns: a change right after
	// is not missed until the poll.
	follow()
	go func() {
		defer func() { stop() }()
		timer := time.NewTimer(poll)
		defer timer.Stop()
		for {
			follow()
			var tick <-chan time.Time
			if polling == nil || polling() {
				timer.Reset(poll)
				tick = timer.C
			} else {
				timer.Stop()
			}
			select {
			case <-ctx.Done():
				return
			case _, ok := <-notes:
				if !ok {
					notes = nil
					continue
				}
			case <-also:
			case <-tick:
			}
			Poke(out)
		}
	}()
	return out
}

// Merge is one wake channel for two (nil ones never fire), until ctx
// ends; bursts coalesce.
func Merge(ctx context.Context, a, b <-chan struct{}) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-a:
			case <-b:
			}
			Poke(out)
		}
	}()
	return out
}

// Poke sends a wake-up on ch (buffered: one) unless one is pending. A
// wake-up says only that something may have changed, and its receiver
// looks at what is there now, so a burst coalesces into one and the
// sender never blocks.
func Poke(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
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

// WatchList is an ExternalSource's Watch loop: list now and after every
// wake, sending the list (sorted by key) whenever it changed; a failed
// list is skipped until the next wake. The channel closes with ctx.
func WatchList(ctx context.Context, wake <-chan struct{}, list func() ([]sessions.ExternalSession, error)) <-chan []sessions.ExternalSession {
	return WatchListSooner(ctx, wake, list, nil)
}

// WatchListSooner is WatchList that also lists again soon() after a list
// when soon answers more than zero: a source that knows something is about
// to appear (a TUI still starting, whose directory is not written yet) looks
// again sooner than the next wake. nil soon is WatchList.
func WatchListSooner(ctx context.Context, wake <-chan struct{}, list func() ([]sessions.ExternalSession, error), soon func() time.Duration) <-chan []sessions.ExternalSession {
	out := make(chan []sessions.ExternalSession, 1)
	go func() {
		defer close(out)
		var last []sessions.ExternalSession
		first := true
		for {
			if l, err := list(); err == nil {
				slices.SortFunc(l, func(a, b sessions.ExternalSession) int { return strings.Compare(a.Key, b.Key) })
				if first || !slices.Equal(l, last) {
					select {
					case out <- l:
					case <-ctx.Done():
						return
					}
					last, first = l, false
				}
			}
			var again <-chan time.Time
			if soon != nil {
				if d := soon(); d > 0 {
					again = time.After(d)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-again:
			}
		}
	}()
	return out
}

// Relay is an Observe loop: one look now and after every wake, its events
// sent in order, until the look says the session ended or ctx ends; out is
// closed then.
func Relay(ctx context.Context, wake <-chan struct{}, look func() ([]sessions.Event, bool), out chan<- sessions.Event) {
	RelaySooner(ctx, wake, look, out, nil)
}

// RelaySooner is Relay that also looks again soon() after a look when soon
// answers more than zero: an observer that expects no wake for what it
// waits on (a session file briefly unreadable: no write will come) looks
// again by itself. nil soon is Relay.
func RelaySooner(ctx context.Context, wake <-chan struct{}, look func() ([]sessions.Event, bool), out chan<- sessions.Event, soon func() time.Duration) {
	defer close(out)
	for {
		evs, done := look()
		for _, ev := range evs {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
		if done {
			return
		}
		var again <-chan time.Time
		var timer *time.Timer
		if soon != nil {
			if d := soon(); d > 0 {
				timer = time.NewTimer(d)
				again = timer.C
			}
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-wake:
		case <-again:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}
