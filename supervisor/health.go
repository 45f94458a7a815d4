package supervisor

import (
	"sync/atomic"
	"time"
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

// LoopHealth is the loop's part of GET /v1/health.
type LoopHealth struct {
	// Status is "ok", "stalled" (no tick for three intervals) or
	// "not_running" (the loop never started: a client-only process).
	Status string `json:"status"`
	// LastTick is when the last tick started (null before the first).
	LastTick *time.Time `json:"last_tick"`
	Ticks    uint64     `json:"ticks"`
	// TickSeconds is the tick interval in force.
	TickSeconds float64 `json:"tick_seconds"`
	// SinceTickSeconds is how long ago the last tick (or the start) was.
	SinceTickSeconds float64 `json:"since_tick_seconds"`
	// TickLagSeconds is how late the last tick started against its schedule.
	TickLagSeconds float64 `json:"tick_lag_seconds"`
	// TickDurationMS is how long the last tick took; LockHoldMS how long it
	// held the runtime's lock in all (decisions only: never I/O), taken
	// per session, MaxLockHoldMS its longest single hold.
	TickDurationMS  float64 `json:"tick_duration_ms"`
	LockHoldMS      float64 `json:"lock_hold_ms"`
	MaxLockHoldMS   float64 `json:"max_lock_hold_ms"`
	Subscribers     int     `json:"subscribers"`
	DroppedMessages uint64  `json:"dropped_messages"`
	// PendingWrites counts changes not yet on disk (a failing disk).
	PendingWrites int `json:"pending_writes"`
	Sessions      int `json:"sessions"`
}

// stallIntervals is how many tick intervals without a tick make the loop
// stalled.
const stallIntervals = 3

// LoopHealth reports the loop's health at now.
func (r *Runtime) LoopHealth(now time.Time) LoopHealth {
	h := &r.health
	subs, dropped := r.bus.Stats()
	out := LoopHealth{
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
