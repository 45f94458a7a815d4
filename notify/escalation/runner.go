package escalation

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
)

// Receipt is how one delivery went, as a channel reports it.
type Receipt struct {
	OK bool
	// Status is the HTTP status (0 when none came).
	Status int
	// Err is a short sanitized reason; never a secret.
	Err string
	// Retry: worth trying again (refused connection, timeout, 429, 5xx).
	Retry bool
}

// outcome is the receipt as the planner counts it.
func (r Receipt) outcome() Outcome {
	switch {
	case r.OK:
		return Delivered
	case r.Retry:
		return Failed
	}
	return Refused
}

// Config is what the runner sends through and obeys, read again after
// every settings change.
type Config struct {
	Policy Policy
	// Channels are the configured channels' names, in order.
	Channels []string
}

// Deps are the runner's side effects.
type Deps struct {
	// Send delivers note through the named channel; it returns within the
	// channel's own timeout.
	Send func(ctx context.Context, channel string, note Note) Receipt
	// Record writes a receipt row to a session's timeline.
	Record func(sessionID string, detail sessions.TimelineDetail) error
	// Desktop reports whether a desktop shows the notifications now.
	Desktop func() bool
	// Machine and Home name this machine and shorten folders in notes.
	Machine, Home string
	Log           *slog.Logger
	// Now is the clock the planner reads (time.Now when nil): a test of
	// quiet hours moves it instead of waiting for the night.
	Now func() time.Time
}

// Failure is a channel's last delivery that did not go through.
type Failure struct {
	Channel string    `json:"channel"`
	At      time.Time `json:"at"`
	Err     string    `json:"error"`
	// GaveUp: retries ended (or cannot help) without a delivery.
	GaveUp bool `json:"gave_up"`
}

// Runner sends what the Planner decides, each delivery in its own
// goroutine (a slow or dead channel never holds the loop or another
// channel), records every attempt on the sessions' timelines, and keeps
// the last failure per channel for the window's banner and doctor.
type Runner struct {
	deps    Deps
	planner *Planner

	mu       sync.Mutex
	failures map[string]Failure
}

// NewRunner returns a runner; Run starts it.
func NewRunner(d Deps) *Runner {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Runner{deps: d, planner: NewPlanner(Policy{}), failures: map[string]Failure{}}
}

// Failures are the channels whose last delivery failed, by name.
func (r *Runner) Failures() []Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Failure, 0, len(r.failures))
	for _, f := range r.failures {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Failure) int {
		if a.Channel < b.Channel {
			return -1
		}
		return 1
	})
	return out
}

// result is a delivery that finished.
type result struct {
	push    Push
	note    Note
	receipt Receipt
}

// Run follows the supervisor's messages until ctx is done or in closes.
// configs delivers the configuration at start and after every change.
// The first snapshot (a subscription starts with one) counts the sessions
// already needing attention from now: a restart pushes them after the
// delay again unless someone acknowledges them, which is what an
// unattended machine wants.
func (r *Runner) Run(ctx context.Context, in <-chan localapi.Message, configs <-chan Config) {
	results := make(chan result)
	var sending sync.WaitGroup
	defer sending.Wait()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-configs:
			r.planner.SetPolicy(c.Policy)
			r.planner.SetChannels(c.Channels...)
		case m, ok := <-in:
			if !ok {
				return
			}
			now := r.deps.Now()
			switch m.Type {
			case localapi.MsgSnapshot:
				r.planner.Sync(m.Sessions, now)
			case localapi.MsgSession, localapi.MsgEscalation:
				if m.Session != nil {
					r.planner.Observe(*m.Session, now)
				}
			}
		case <-timer.C:
		case res := <-results:
			r.finish(res)
		}
		now := r.deps.Now()
		desktop := r.deps.Desktop()
		for _, p := range r.planner.Due(now, desktop) {
			note := Compose(p, r.deps.Machine, r.deps.Home, now)
			sending.Go(func() {
				rec := r.deps.Send(ctx, p.Channel, note)
				select {
				case results <- result{p, note, rec}:
				case <-ctx.Done():
				}
			})
		}
		timer.Stop()
		if next := r.planner.Next(now, desktop); !next.IsZero() {
			timer.Reset(max(next.Sub(r.deps.Now()), 0))
		}
	}
}

// finish records a delivery: the planner's bookkeeping, a row on every
// session it was about, and the channel's failure state.
func (r *Runner) finish(res result) {
	now := r.deps.Now()
	gaveUp := r.planner.Done(res.push, res.receipt.outcome(), now)
	detail := sessions.TimelineDetail{Channel: res.push.Channel, Status: res.receipt.Status}
	switch {
	case res.receipt.OK:
		detail.Outcome = "ok"
		detail.Message = fmt.Sprintf("pushed through %s: %s", res.push.Channel, res.note.Title)
	case gaveUp:
		detail.Outcome = "failed: " + res.receipt.Err
		detail.Message = fmt.Sprintf("push through %s failed (%s); not retrying", res.push.Channel, res.receipt.Err)
	default:
		detail.Outcome = "failed: " + res.receipt.Err
		detail.Message = fmt.Sprintf("push through %s failed (%s); retrying in %s", res.push.Channel, res.receipt.Err, Backoff(res.push.Attempt))
	}
	detail.Message = sessions.SanitizeMessage(detail.Message)
	for _, in := range res.push.Incidents {
		if err := r.deps.Record(in.Session.ID, detail); err != nil {
			r.deps.Log.Warn("recording a push's receipt", "session", in.Session.ID, "err", err)
		}
	}
	r.mu.Lock()
	if res.receipt.OK {
		delete(r.failures, res.push.Channel)
	} else {
		r.failures[res.push.Channel] = Failure{Channel: res.push.Channel, At: now, Err: res.receipt.Err, GaveUp: gaveUp}
	}
	r.mu.Unlock()
	if !res.receipt.OK {
		r.deps.Log.Warn("a push failed", "channel", res.push.Channel, "status", res.receipt.Status, "err", res.receipt.Err, "gave_up", gaveUp)
	}
}

// Test sends a sample through each named channel (all configured ones
// when none is named) at once, outside the incidents, and returns how
// each went.
func (r *Runner) Test(ctx context.Context, channels []string) map[string]Receipt {
	from := "Session Supervisor"
	if r.deps.Machine != "" {
		from += " on " + clean(r.deps.Machine)
	}
	note := Note{Title: "Session Supervisor test", Lines: []string{"A test from " + from + ": this channel works."}}
	out := make(map[string]Receipt, len(channels))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range channels {
		wg.Go(func() {
			rec := r.deps.Send(ctx, c, note)
			mu.Lock()
			out[c] = rec
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
