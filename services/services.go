// Package services runs the parts of the daemon (the loop, the local API,
// the settings publisher, the notifier, …) as services: each runs until its
// context ends, all are started and awaited in one place, and none outlives
// Stop.
package services

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A Service runs until ctx ends. An error it returns before that is a
// failure of the daemon; once ctx has ended its return value is ignored.
type Service struct {
	Name string
	Run  func(ctx context.Context) error
}

// ErrStopped is what Add answers once the group is stopping.
var ErrStopped = errors.New("the services are stopping")

// Group is a set of running services.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	failed chan error // the first failure; buffered, never closed

	mu       sync.Mutex // guards stopping and the Add side of wg
	stopping bool
	wg       sync.WaitGroup
}

// Start runs every service in a goroutine of its own, under a context
// derived from parent.
func Start(parent context.Context, svcs ...Service) *Group {
	ctx, cancel := context.WithCancel(parent)
	g := &Group{ctx: ctx, cancel: cancel, failed: make(chan error, 1)}
	for _, s := range svcs {
		_ = g.Add(s) // cannot be stopping yet
	}
	return g
}

// Add starts one more service (one decided after the start, such as the
// headless notifier).
func (g *Group) Add(s Service) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopping {
		return fmt.Errorf("starting %s: %w", s.Name, ErrStopped)
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := s.Run(g.ctx)
		if err == nil || g.ctx.Err() != nil {
			return
		}
		select {
		case g.failed <- fmt.Errorf("%s: %w", s.Name, err):
		default: // only the first failure is reported
		}
	}()
	return nil
}

// Failed delivers the first service failure (at most one value).
func (g *Group) Failed() <-chan error { return g.failed }

// Stop ends every service's context and returns once all have returned.
func (g *Group) Stop() {
	g.mu.Lock()
	g.stopping = true
	g.mu.Unlock()
	g.cancel()
	g.wg.Wait()
}

// Sleep waits d, or less when ctx ends first, and reports whether the
// service should go on: false once ctx has ended (also when d <= 0 and it
// already had). The waits of a service's loop between its rounds (the
// supervisor's tick, a Remote's reconnect backoff, a profile's window).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
