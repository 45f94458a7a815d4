package services

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// untilDone is a service that runs until its context ends, counting its
// returns.
func untilDone(name string, returned *atomic.Int32) Service {
	return Service{Name: name, Run: func(ctx context.Context) error {
		<-ctx.Done()
		time.Sleep(time.Second) // a graceful stop takes a while
		returned.Add(1)
		return ctx.Err()
	}}
}

func TestGroup(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		// extra is a service beside two that run until stopped.
		extra Service
		// wantFailure is a substring of the failure reported ("" none).
		wantFailure string
	}{
		{"every service runs until Stop and Stop waits for all", Service{Name: "idle", Run: func(ctx context.Context) error { <-ctx.Done(); return nil }}, ""},
		{"a failure is reported with the service's name; the others run on", Service{Name: "api", Run: func(context.Context) error {
			time.Sleep(time.Minute)
			return boom
		}}, "api: boom"},
		{"a service that ends by itself without error is no failure", Service{Name: "once", Run: func(context.Context) error { return nil }}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var returned atomic.Int32
				g := Start(context.Background(), untilDone("loop", &returned), untilDone("settings", &returned), tc.extra)
				time.Sleep(time.Hour) // long after any service's own end
				var failure string
				select {
				case err := <-g.Failed():
					failure = err.Error()
				default:
				}
				if failure != tc.wantFailure {
					t.Errorf("failure %q, want %q", failure, tc.wantFailure)
				}
				if n := returned.Load(); n != 0 {
					t.Fatalf("%d services returned before Stop", n)
				}
				g.Stop()
				if n := returned.Load(); n != 2 {
					t.Errorf("Stop returned with %d of 2 services done", n)
				}
			})
		})
	}
}

// A service failing while the group stops is not a failure, and nothing
// can be added once Stop began.
func TestStopping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := Start(context.Background(), Service{Name: "api", Run: func(ctx context.Context) error {
			<-ctx.Done()
			return errors.New("closed")
		}})
		g.Stop()
		select {
		case err := <-g.Failed():
			t.Errorf("a stop reported as a failure: %v", err)
		default:
		}
		err := g.Add(Service{Name: "late", Run: func(context.Context) error { return nil }})
		if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "late") {
			t.Errorf("Add after Stop: %v", err)
		}
	})
}

// Only the first failure is kept.
func TestFirstFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fail := func(name string, after time.Duration) Service {
			return Service{Name: name, Run: func(context.Context) error { time.Sleep(after); return errors.New("down") }}
		}
		g := Start(context.Background(), fail("second", 2*time.Second), fail("first", time.Second))
		synctest.Wait()
		time.Sleep(3 * time.Second)
		if err := <-g.Failed(); err.Error() != "first: down" {
			t.Errorf("failure %v, want first's", err)
		}
		g.Stop()
	})
}

// TestSleep: Sleep lasts d and says go on, unless ctx ends first: then it
// returns at that instant and says stop.
func TestSleep(t *testing.T) {
	for _, tc := range []struct {
		name     string
		d        time.Duration
		cancelAt time.Duration // < 0: never; 0: before Sleep
		want     bool
		lasts    time.Duration
	}{
		{"the whole wait", time.Minute, -1, true, time.Minute},
		{"cut short when ctx ends", time.Minute, 10 * time.Second, false, 10 * time.Second},
		{"ctx already ended", time.Minute, 0, false, 0},
		{"no wait", 0, -1, true, 0},
		{"no wait, ctx already ended", -time.Second, 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				switch {
				case tc.cancelAt == 0:
					cancel()
				case tc.cancelAt > 0:
					time.AfterFunc(tc.cancelAt, cancel)
				}
				start := time.Now()
				if got := Sleep(ctx, tc.d); got != tc.want {
					t.Errorf("Sleep = %v, want %v", got, tc.want)
				}
				if lasted := time.Since(start); lasted != tc.lasts {
					t.Errorf("lasted %v, want %v", lasted, tc.lasts)
				}
			})
		})
	}
}
