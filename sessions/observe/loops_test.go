package observe

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Poke never blocks its sender: the first of a burst is pending for the
// receiver, the rest coalesce into it, and once it is taken the next poke
// is pending again.
func TestPoke(t *testing.T) {
	ch := make(chan struct{}, 1)
	for _, burst := range []int{0, 1, 5, 1} {
		for range burst {
			Poke(ch)
		}
		pending := 0
		for len(ch) > 0 {
			<-ch
			pending++
		}
		if want := min(burst, 1); pending != want {
			t.Errorf("after %d pokes %d wake-ups pending, want %d", burst, pending, want)
		}
	}
}

// Wake follows the directories it is given (moving the watch when they
// change), wakes on a notification at once and on the poll otherwise, and
// coalesces a burst into one pending wake.
func TestWakeMovesTheWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var watched [][]string
		notes := make(chan struct{}, 1)
		notify := func(ctx context.Context, dirs []string) (<-chan struct{}, error) {
			mu.Lock()
			watched = append(watched, dirs)
			mu.Unlock()
			return notes, nil
		}
		dir := "a"
		var dmu sync.Mutex
		dirs := func() []string { dmu.Lock(); defer dmu.Unlock(); return []string{dir} }
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		start := time.Now()
		wake := Wake(ctx, notify, time.Hour, dirs)
		notes <- struct{}{}
		<-wake
		if time.Since(start) != 0 {
			t.Fatalf("a notification woke after %s", time.Since(start))
		}
		dmu.Lock()
		dir = "b"
		dmu.Unlock()
		notes <- struct{}{}
		<-wake
		<-wake // the poll
		if time.Since(start) != time.Hour {
			t.Fatalf("the poll woke after %s", time.Since(start))
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.EqualFunc(watched, [][]string{{"a"}, {"b"}}, slices.Equal) {
			t.Fatalf("watched %v", watched)
		}
	})
}

// WatchList sends the first list, then only changed ones, sorted by key.
func TestWatchListSendsChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wake := make(chan struct{})
		lists := [][]sessions.ExternalSession{{{Key: "b"}, {Key: "a"}}, {{Key: "a"}, {Key: "b"}}, {{Key: "a"}}}
		i := 0
		out := WatchList(t.Context(), wake, func() ([]sessions.ExternalSession, error) {
			l := lists[min(i, len(lists)-1)]
			i++
			return slices.Clone(l), nil
		})
		if l := <-out; len(l) != 2 || l[0].Key != "a" {
			t.Fatalf("first %+v", l)
		}
		wake <- struct{}{} // the same list: nothing sent
		wake <- struct{}{}
		if l := <-out; len(l) != 1 {
			t.Fatalf("changed %+v", l)
		}
	})
}

// WatchListSooner lists again after soon() while it answers more than
// zero, without a wake, and waits for the wake once it answers zero.
func TestWatchListSooner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wake := make(chan struct{})
		var mu sync.Mutex
		calls := 0
		starting := true
		list := func() ([]sessions.ExternalSession, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls == 3 {
				starting = false // the TUI's directory appeared
				return []sessions.ExternalSession{{Key: "a"}}, nil
			}
			return nil, nil
		}
		soon := func() time.Duration {
			mu.Lock()
			defer mu.Unlock()
			if starting {
				return time.Second
			}
			return 0
		}
		start := time.Now()
		out := WatchListSooner(t.Context(), wake, list, soon)
		if l := <-out; len(l) != 0 {
			t.Fatalf("first %+v", l)
		}
		if l := <-out; len(l) != 1 || l[0].Key != "a" {
			t.Fatalf("after the startup rescans %+v", l)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("listed again after %v, want two rescans of 1s", waited)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		mu.Lock()
		if calls != 3 {
			t.Errorf("listed %d times; without a wake and not starting, want 3", calls)
		}
		mu.Unlock()
	})
}

// Relay sends every look's events in order and closes out when a look says
// done; RelaySooner also looks again soon() after a look, without a wake,
// while soon answers more than zero.
func TestRelay(t *testing.T) {
	cases := []struct {
		name  string
		soon  time.Duration // 0: plain Relay
		wakes int           // wakes sent by the test
		looks int           // looks until done
		took  time.Duration // fake time until out closes
	}{
		{"woken: one look per wake", 0, 2, 3, 0},
		{"sooner: looks again by itself", time.Second, 0, 3, 2 * time.Second},
		{"sooner and woken: a wake comes first", time.Hour, 2, 3, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				wake := make(chan struct{})
				out := make(chan sessions.Event)
				n := 0
				look := func() ([]sessions.Event, bool) {
					n++
					return []sessions.Event{{Detail: "a"}, {Detail: "b"}}, n == tc.looks
				}
				var soon func() time.Duration
				if tc.soon > 0 {
					soon = func() time.Duration { return tc.soon }
				}
				start := time.Now()
				go RelaySooner(t.Context(), wake, look, out, soon)
				var got []string
				go func() {
					for range tc.wakes {
						synctest.Wait()
						wake <- struct{}{}
					}
				}()
				for ev := range out {
					got = append(got, ev.Detail)
				}
				if len(got) != 2*tc.looks || got[0] != "a" || got[1] != "b" {
					t.Errorf("sent %v, want a b per look for %d looks", got, tc.looks)
				}
				if took := time.Since(start); took != tc.took {
					t.Errorf("took %v, want %v", took, tc.took)
				}
			})
		})
	}
}

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
