package localapi

import "time"

// APIVersion is the version of this API: a change a client of the
// previous version would misread raises it.
const APIVersion = 1

// Health is what GET /v1/health answers: which app a client talks to, and
// whether its loop is alive. It answers 503 (with the same body and an
// error) when the loop has not ticked for three intervals.
type Health struct {
	PID     int    `json:"pid"`
	Version string `json:"version"`
	// APIVersion is the wire's version (APIVersion): a client checks it on
	// connect (another machine may run another release).
	APIVersion int    `json:"api_version"`
	Generation string `json:"generation"`
	DataDir    string `json:"data_dir"`
	// Status is "ok", or "stalled" when the loop stopped ticking.
	Status string     `json:"status"`
	Loop   LoopHealth `json:"loop"`
	// Push is the push channels' state; absent where no pusher runs.
	Push *PushStatus `json:"push,omitempty"`
	// Error says what is wrong when Status is not ok.
	Error string `json:"error,omitempty"`
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
