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
