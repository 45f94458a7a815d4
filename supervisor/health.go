package supervisor

import (
	"sync/atomic"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
)

// healthStats is what the loop reports about itself, written by the loop
// and read by /v1/health without any lock: a reader must be able to tell a
// wedged loop precisely when the loop cannot answer.
type healthStats struct {
	started      atomic.Int64 // unix nanoseconds; 0 until Run starts
	lastTick     atomic.Int64 // unix nanoseconds of the last tick's start
	ticks        atomic.Uint64
	lagNanos     atomic.Int64 // how late the last tick started
	durNanos     atomic.Int64 // how long the last tick took
	lockNanos    atomic.Int64 // how long the last tick held the runtime's lock, in all
	maxLockNanos atomic.Int64 // the last tick's longest single hold
	interval     atomic.Int64 // the tick interval in force
}

func (h *healthStats) start(now time.Time, tick time.Duration) {
	h.started.Store(now.UnixNano())
	h.interval.Store(int64(tick))
}

func (h *healthStats) ticked(at time.Time, lag, took, interval time.Duration) {
	h.lastTick.Store(at.UnixNano())
	h.ticks.Add(1)
	h.lagNanos.Store(int64(max(lag, 0)))
	h.durNanos.Store(int64(took))
	h.interval.Store(int64(interval))
}

// lockHeld records the last tick's total time under the lock and its
// longest single hold.
func (h *healthStats) lockHeld(total, longest time.Duration) {
	h.lockNanos.Store(int64(total))
	h.maxLockNanos.Store(int64(longest))
}

// stallIntervals is how many tick intervals without a tick make the loop
// stalled.
const stallIntervals = 3

// LoopHealth reports the loop's health at now.
func (r *Runtime) LoopHealth(now time.Time) localapi.LoopHealth {
	h := &r.health
	subs, dropped := r.bus.Stats()
	out := localapi.LoopHealth{
		Ticks:           h.ticks.Load(),
		TickSeconds:     time.Duration(h.interval.Load()).Seconds(),
		TickLagSeconds:  time.Duration(h.lagNanos.Load()).Seconds(),
		TickDurationMS:  ms(h.durNanos.Load()),
		LockHoldMS:      ms(h.lockNanos.Load()),
		MaxLockHoldMS:   ms(h.maxLockNanos.Load()),
		Subscribers:     subs,
		DroppedMessages: dropped,
		PendingWrites:   r.w.pending(),
	}
	r.mu.Lock()
	out.Sessions = len(r.sess)
	r.mu.Unlock()
	startNs := h.started.Load()
	if startNs == 0 {
		out.Status = "not_running"
		return out
	}
	ref := time.Unix(0, startNs)
	if last := h.lastTick.Load(); last != 0 {
		t := time.Unix(0, last)
		out.LastTick = &t
		ref = t
	}
	since := now.Sub(ref)
	out.SinceTickSeconds = since.Seconds()
	out.Status = "ok"
	if interval := time.Duration(h.interval.Load()); interval > 0 && since > stallIntervals*interval {
		out.Status = "stalled"
	}
	return out
}

func ms(nanos int64) float64 { return float64(nanos) / float64(time.Millisecond) }
