package observe

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Wake wakes on a notification at once and on the interval otherwise,
// folds a burst into one wake, and restarts the notifier (cancelling the
// old one) when the directories change.
func TestWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var subs [][]string
		var live []context.Context
		notes := make(chan struct{})
		notify := func(ctx context.Context, dirs []string) (<-chan struct{}, error) {
			mu.Lock()
			defer mu.Unlock()
			subs, live = append(subs, dirs), append(live, ctx)
			return notes, nil
		}
		dirs := []string{"/a"}
		get := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(dirs) }
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		w := Wake(ctx, notify, 10*time.Second, get)
		synctest.Wait()
		select {
		case <-w:
			t.Fatal("woken before anything happened")
		default:
		}
		start := time.Now()
		notes <- struct{}{}
		<-w
		if time.Since(start) != 0 {
			t.Fatalf("a notification woke after %s", time.Since(start))
		}
		// A burst while nobody reads is one wake.
		notes <- struct{}{}
		notes <- struct{}{}
		synctest.Wait()
		<-w
		select {
		case <-w:
			t.Fatal("a burst woke twice")
		default:
		}
		// The interval alone.
		start = time.Now()
		<-w
		if d := time.Since(start); d <= 0 || d > 10*time.Second {
			t.Fatalf("the rescan came after %s", d)
		}
		// New directories: a new subscription, the old one cancelled.
		mu.Lock()
		dirs = []string{"/a", "/b"}
		mu.Unlock()
		notes <- struct{}{} // the loop reads dirs again after this wake
		<-w
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(subs) != 2 || !slices.Equal(subs[1], []string{"/a", "/b"}) || live[0].Err() == nil || live[1].Err() != nil {
			t.Fatalf("subscriptions %v, first cancelled %v", subs, live[0].Err())
		}
	})
}

// Without a notifier (or one that fails) the interval wakes alone.
func TestWakeWithoutNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failing := func(context.Context, []string) (<-chan struct{}, error) { return nil, context.Canceled }
		for _, n := range []Notify{nil, failing} {
			ctx, cancel := context.WithCancel(t.Context())
			w := Wake(ctx, n, time.Second, func() []string { return []string{"/a"} })
			start := time.Now()
			<-w
			if time.Since(start) != time.Second {
				t.Fatalf("woken after %s", time.Since(start))
			}
			cancel()
		}
	})
}
