// Package memtrim gives the Go heap's free pages back to the operating
// system once a process has settled. The runtime keeps what a burst of
// work freed (the window's first layout, a list of a hundred sessions
// redrawn) until its background scavenger gets to it, and that scavenger
// stops at about the next GC goal: a window left open all day keeps
// holding megabytes it used once, in its RSS. Here a process checks, now
// and then, how much free heap it holds, and returns it when that is worth
// a forced collection.
package memtrim

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Defaults for a desktop window: a look twice a minute (a timer, nothing
// else, while nothing is held), and a release once 4 MiB is held free
// (the forced collection it costs is a few milliseconds for the window's
// heap).
const (
	DefaultEvery     = 30 * time.Second
	DefaultThreshold = 4 << 20
)

// freeMetric is the heap's free memory the runtime has not yet returned
// to the operating system: what a release would give back.
const freeMetric = "/memory/classes/heap/free:bytes"

// Worth reports whether free bytes held are worth a release.
func Worth(free, threshold uint64) bool { return free >= threshold }

// Trimmer checks what the heap holds free and releases it when worth it.
// Free and Release are the side effects: the runtime's by default
// (New), replaceable in tests.
type Trimmer struct {
	Every     time.Duration
	Threshold uint64
	Free      func() uint64
	Release   func()
}

// New is a trimmer over the runtime's own heap with the defaults.
func New() *Trimmer {
	return &Trimmer{Every: DefaultEvery, Threshold: DefaultThreshold, Free: HeapFree, Release: debug.FreeOSMemory}
}

// Run looks every t.Every until ctx ends, and returns how many releases
// it made.
func (t *Trimmer) Run(ctx context.Context) int {
	released := 0
	tick := time.NewTicker(t.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return released
		case <-tick.C:
			if Worth(t.Free(), t.Threshold) {
				t.Release()
				released++
			}
		}
	}
}

// HeapFree reads the runtime's free, unreleased heap bytes.
func HeapFree() uint64 {
	s := []metrics.Sample{{Name: freeMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0 // a runtime without the metric: never worth a release
	}
	return s[0].Value.Uint64()
}
