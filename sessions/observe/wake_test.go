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

// WakeAlso has its first watch in place when it returns (a change right
// after is not missed until the poll) and is woken by also like by a
// notification; nil also is Wake.
func TestWakeAlso(t *testing.T) {
	cases := []struct {
		name      string
		also      bool
		wantWoken bool
	}{
		{"woken by also at once", true, true},
		{"nil also: only notifications and the poll", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				subscribed := 0
				notify := func(context.Context, []string) (<-chan struct{}, error) {
					mu.Lock()
					defer mu.Unlock()
					subscribed++
					return nil, nil
				}
				var also chan struct{}
				if tc.also {
					also = make(chan struct{}, 1)
				}
				w := WakeAlso(t.Context(), notify, time.Hour, func() []string { return []string{"/a"} }, also)
				mu.Lock()
				if subscribed != 1 {
					t.Errorf("subscribed %d times when WakeAlso returned, want 1", subscribed)
				}
				mu.Unlock()
				if tc.also {
					also <- struct{}{}
				}
				synctest.Wait()
				select {
				case <-w:
					if !tc.wantWoken {
						t.Error("woken without a notification, also or the poll")
					}
				default:
					if tc.wantWoken {
						t.Error("also did not wake")
					}
				}
				synctest.Wait()
				mu.Lock()
				if subscribed != 1 {
					t.Errorf("subscribed %d times for the same dirs, want 1", subscribed)
				}
				mu.Unlock()
			})
		})
	}
}
