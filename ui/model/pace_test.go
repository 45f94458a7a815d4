package model

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// NextAgeChange is exactly the next instant Age's text moves: just before
// it the text is the one shown now, at it another.
func TestNextAgeChange(t *testing.T) {
	cases := []struct {
		name string
		ago  time.Duration
		want time.Duration // after now
	}{
		{"seconds", 12*time.Second + 300*time.Millisecond, 700 * time.Millisecond},
		{"last second", 59 * time.Second, time.Second},
		{"first minute", time.Minute, time.Minute},
		{"minutes", 12*time.Minute + 20*time.Second, 40 * time.Second},
		{"hours", 3*time.Hour + 59*time.Minute, time.Minute},
		{"last hour", 47*time.Hour + 30*time.Minute, 30 * time.Minute},
		{"days", 50 * time.Hour, 22 * time.Hour},
		{"future", -3 * time.Second, 4 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			since := t0.Add(-c.ago)
			next := NextAgeChange(t0, since)
			if got := next.Sub(t0); got != c.want {
				t.Fatalf("next change in %s, want %s", got, c.want)
			}
			if before, now := sessions.Age(next.Add(-time.Nanosecond), since), sessions.Age(t0, since); before != now {
				t.Errorf("the text moved before the instant: %q then %q", now, before)
			}
			if at, now := sessions.Age(next, since), sessions.Age(t0, since); at == now && c.ago >= 0 {
				t.Errorf("the text did not move at the instant: still %q", at)
			}
		})
	}
	if !NextAgeChange(t0, time.Time{}).IsZero() {
		t.Error("a zero time never moves")
	}
}

// Pace renders once at the start, once per burst of changes, and at the
// instants the view asks for (no sooner than floor after the previous
// one); with nothing changed and nothing due it renders nothing, however
// long it waits.
func TestPace(t *testing.T) {
	cases := []struct {
		name  string
		floor time.Duration
		// asks is the view's next instant after each render, as an offset
		// from that render (0: none).
		asks  []time.Duration
		wait  time.Duration
		wants []time.Duration // due renders, from the start
	}{
		{"nothing due", 0, []time.Duration{0}, 10 * time.Hour, nil},
		{"each instant asked", 0, []time.Duration{time.Second, 59 * time.Second, time.Hour, 0}, 10 * time.Hour,
			[]time.Duration{time.Second, time.Minute, time.Hour + time.Minute}},
		{"the floor batches", 30 * time.Second, []time.Duration{time.Second, time.Second, time.Second, 0}, time.Hour,
			[]time.Duration{time.Second, 31 * time.Second, 61 * time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				start := time.Now()
				next := NewDeadline()
				var mu sync.Mutex
				var dues []time.Duration
				renders := 0
				done := make(chan struct{})
				go func() {
					defer close(done)
					Pace(ctx, make(chan struct{}), time.Millisecond, c.floor, next, func(r Redraw) {
						mu.Lock()
						defer mu.Unlock()
						if r == RedrawDue {
							dues = append(dues, time.Since(start))
						}
						ask := c.asks[min(renders, len(c.asks)-1)]
						renders++
						if ask == 0 {
							next.Set(time.Time{})
						} else {
							next.Set(time.Now().Add(ask))
						}
					})
				}()
				time.Sleep(c.wait)
				synctest.Wait()
				cancel()
				<-done
				mu.Lock()
				defer mu.Unlock()
				if len(dues) != len(c.wants) {
					t.Fatalf("due renders at %v, want %v", dues, c.wants)
				}
				for i := range dues {
					if dues[i] != c.wants[i] {
						t.Fatalf("due renders at %v, want %v", dues, c.wants)
					}
				}
			})
		})
	}
}

// A burst of changes renders once, after the delay.
func TestPaceCoalescesABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		changes := make(chan struct{}, 100)
		var mu sync.Mutex
		var renders []Redraw
		got := func() []Redraw { mu.Lock(); defer mu.Unlock(); return slices.Clone(renders) }
		done := make(chan struct{})
		go func() {
			defer close(done)
			Pace(ctx, changes, 200*time.Millisecond, 0, NewDeadline(), func(r Redraw) { mu.Lock(); renders = append(renders, r); mu.Unlock() })
		}()
		for range 50 {
			changes <- struct{}{}
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if n := len(got()); n != 1 {
			t.Fatalf("%d renders before the delay, want the first only", n)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if r := got(); len(r) != 2 || r[1] != RedrawChanged {
			t.Fatalf("after a burst of 50 and an hour: %v, want [changed changed]", r)
		}
		cancel()
		<-done
	})
}
