package memtrim

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestWorth(t *testing.T) {
	for _, tc := range []struct {
		name            string
		free, threshold uint64
		want            bool
	}{
		{"nothing held", 0, 4 << 20, false},
		{"less than the threshold", 4<<20 - 1, 4 << 20, false},
		{"the threshold", 4 << 20, 4 << 20, true},
		{"more", 40 << 20, 4 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Worth(tc.free, tc.threshold); got != tc.want {
				t.Fatalf("Worth(%d, %d) = %v, want %v", tc.free, tc.threshold, got, tc.want)
			}
		})
	}
}

// A burst of garbage is released at the next look, and a settled heap is
// not collected again and again: one release per burst.
func TestRunReleasesOncePerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The loop's goroutine reads what the test sets: atomics, as the
		// race detector sees no order in synctest's clock.
		var free, releases atomic.Uint64
		tr := &Trimmer{Every: 30 * time.Second, Threshold: 4 << 20,
			Free:    free.Load,
			Release: func() { releases.Add(1); free.Store(0) }}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan int)
		go func() { done <- tr.Run(ctx) }()

		free.Store(10 << 20) // the first layout
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if releases.Load() != 1 {
			t.Fatalf("after a burst and one look: %d releases, want 1", releases.Load())
		}
		time.Sleep(10 * time.Minute) // settled: twenty looks, nothing held
		synctest.Wait()
		if releases.Load() != 1 {
			t.Fatalf("settled for 10 min: %d releases, want still 1", releases.Load())
		}
		free.Store(1 << 20) // a little churn: not worth a collection
		time.Sleep(time.Minute)
		synctest.Wait()
		if releases.Load() != 1 {
			t.Fatalf("1 MiB held: %d releases, want still 1", releases.Load())
		}
		free.Store(6 << 20) // the next burst
		time.Sleep(30 * time.Second)
		synctest.Wait()
		cancel()
		if n := <-done; n != 2 || releases.Load() != 2 {
			t.Fatalf("Run returned %d, %d releases; want 2 and 2", n, releases.Load())
		}
	})
}

// The runtime's own figures: garbage made and dropped is held free until a
// release returns it.
func TestReleaseReturnsTheRuntimesFreeHeap(t *testing.T) {
	garbage := make([][]byte, 0, 64)
	for range 64 {
		garbage = append(garbage, make([]byte, 256<<10)) // 16 MiB in all
	}
	runtime.KeepAlive(garbage)
	garbage = nil
	runtime.GC()
	held := HeapFree()
	if held < 8<<20 {
		t.Fatalf("after dropping 16 MiB and a GC the heap holds %d bytes free; want most of it", held)
	}
	New().Release()
	if after := HeapFree(); after >= held/2 {
		t.Fatalf("after a release the heap still holds %d of %d bytes free", after, held)
	}
}
