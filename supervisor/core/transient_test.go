package core

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Transient incidents (issue 15): the pure decisions, row by row, then whole
// outages tick by tick.

var offline = Probe{Known: true, Alive: true, Offline: true}

// transientHold is a transient incident between retries: begun at started,
// `retries` retries made, the next due at next.
func transientHold(kind sessions.FailureKind, started time.Time, retries int, next time.Time) sessions.Session {
	s := hold(kind, RecoveryTransient, retries, next)
	s.Supervision.IncidentStarted = started
	return s
}

// transientErrored is a retry of an incident begun at started that failed
// again: Errored, the incident's bookkeeping still there.
func transientErrored(kind sessions.FailureKind, started time.Time, retries int) sessions.Session {
	s := errored(kind)
	s.Supervision = sessions.Supervision{Recovery: RecoveryTransient, RecoveryAttempts: retries, IncidentStarted: started}
	return s
}

func wantSupervision(want sessions.Supervision) func(*testing.T, sessions.Session, []Observation, []Action) {
	return func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
		t.Helper()
		if out.Supervision != want {
			t.Errorf("supervision\n got %+v\nwant %+v", out.Supervision, want)
		}
	}
}

func wantObs(i int, want string) func(*testing.T, sessions.Session, []Observation, []Action) {
	return func(t *testing.T, _ sessions.Session, obs []Observation, _ []Action) {
		t.Helper()
		if i >= len(obs) || obs[i].Detail != want {
			t.Errorf("observation %d\n got %+v\nwant %q", i, obs, want)
		}
	}
}

func TestPolicyTransientDelay(t *testing.T) {
	tests := []struct {
		window  time.Duration
		retries []int
		want    []time.Duration
	}{
		// The schedule of the issue: 30 s, 1, 2, 5, 10, 15 min, then 15 min.
		{90 * time.Minute, []int{0, 1, 2, 3, 4, 5, 6, 7, 1 << 40},
			[]time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
				15 * time.Minute, 15 * time.Minute, 15 * time.Minute, 15 * time.Minute}},
		// Persisted garbage is safe.
		{90 * time.Minute, []int{-1}, []time.Duration{15 * time.Minute}},
		// A short window caps every wait at a sixth of it.
		{30 * time.Minute, []int{0, 1, 2, 3, 4}, []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 5 * time.Minute}},
		{12 * time.Second, []int{0, 5}, []time.Duration{2 * time.Second, 2 * time.Second}},
		// No window at all: the plain schedule.
		{0, []int{0, 9}, []time.Duration{30 * time.Second, 15 * time.Minute}},
	}
	for _, tt := range tests {
		p := specPolicy()
		p.TransientWindow = tt.window
		for i, r := range tt.retries {
			if got := p.transientDelay(r); got != tt.want[i] {
				t.Errorf("window %v: transientDelay(%d) = %v, want %v", tt.window, r, got, tt.want[i])
			}
		}
	}
}

func TestReconcileTransient(t *testing.T) {
	sched := []string{TimelineTransientRetry}
	nextAt := func(want time.Time) func(*testing.T, sessions.Session, []Observation, []Action) {
		return func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
			t.Helper()
			if !out.Supervision.NextAttemptAt.Equal(want) {
				t.Errorf("NextAttemptAt = +%v, want +%v", out.Supervision.NextAttemptAt.Sub(t0), want.Sub(t0))
			}
		}
	}
	escalated := func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
		t.Helper()
		if !out.NeedsAttention || out.Supervision.Recovery != "" || out.Supervision.EscalatedGeneration != 3 {
			t.Errorf("needs_attention %v, supervision %+v", out.NeedsAttention, out.Supervision)
		}
	}
	rateLimitHold := errored(sessions.Network)
	rateLimitHold.Supervision = sessions.Supervision{Recovery: RecoveryRateLimit, RecoveryAttempts: 4, NextAttemptAt: at(time.Hour)}

	runCases(t, []rcase{
		// --- a turn failed: schedule the next retry ---
		{name: "network: the incident starts, first retry in 30 s", s: errored(sessions.Network), now: t0, probe: alive,
			state: sessions.Recovering, obs: sched, check: all(
				wantEvidence("network or server error; retrying at 09:00:30 (retry 1, 90 min of the 90 min window left)"),
				wantObs(0, "scheduled: network or server error; retrying at 09:00:30 (retry 1, 90 min of the 90 min window left)"),
				wantSupervision(sessions.Supervision{Recovery: RecoveryTransient, NextAttemptAt: at(30 * time.Second), IncidentStarted: t0}))},
		{name: "overloaded is transient too", s: errored(sessions.Overloaded), now: t0, probe: alive,
			state: sessions.Recovering, obs: sched, check: all(nextAt(at(30*time.Second)),
				wantEvidence("API overloaded; retrying at 09:00:30 (retry 1, 90 min of the 90 min window left)"))},
		{name: "a retry failed again: the next step, same window", s: transientErrored(sessions.Network, at(-20*time.Minute), 3), now: t0, probe: alive,
			state: sessions.Recovering, obs: sched, check: all(nextAt(at(5*time.Minute)),
				wantEvidence("network or server error; retrying at 09:05:00 (retry 4, 70 min of the 90 min window left)"),
				wantSupervision(sessions.Supervision{Recovery: RecoveryTransient, RecoveryAttempts: 3,
					NextAttemptAt: at(5 * time.Minute), IncidentStarted: at(-20 * time.Minute)}))},
		{name: "a kind change within the incident keeps its budget", s: transientErrored(sessions.Overloaded, at(-20*time.Minute), 3), now: t0, probe: alive,
			state: sessions.Recovering, obs: sched, check: nextAt(at(5 * time.Minute))},
		{name: "past the schedule: every 15 min", s: transientErrored(sessions.Network, at(-40*time.Minute), 9), now: t0, probe: alive,
			state: sessions.Recovering, obs: sched, check: nextAt(at(15 * time.Minute))},
		{name: "the last retry falls at the window's end", s: transientErrored(sessions.Network, at(-89*time.Minute), 8), now: t0, probe: alive,
			state: sessions.Recovering, obs: sched, check: all(nextAt(at(time.Minute)),
				wantEvidence("network or server error; retrying at 09:01:00 (retry 9, 1 min of the 90 min window left)"))},
		{name: "the provider's retry time is a floor", s: func() sessions.Session {
			s := errored(sessions.Overloaded)
			s.Failure.RetryAt = at(3 * time.Minute)
			return s
		}(), now: t0, probe: alive, state: sessions.Recovering, obs: sched, check: nextAt(at(3 * time.Minute))},
		{name: "but not past the window's end", s: func() sessions.Session {
			s := transientErrored(sessions.Overloaded, at(-89*time.Minute), 8)
			s.Failure.RetryAt = at(3 * time.Minute)
			return s
		}(), now: t0, probe: alive, state: sessions.Recovering, obs: sched, check: nextAt(at(time.Minute))},
		{name: "time offline does not spend the window", s: func() sessions.Session {
			s := transientErrored(sessions.Network, at(-100*time.Minute), 6)
			s.Supervision.OfflineFor = 30 * time.Minute
			return s
		}(), now: t0, probe: alive, state: sessions.Recovering, obs: sched,
			check: wantEvidence("network or server error; retrying at 09:15:00 (retry 7, 20 min of the 90 min window left)")},
		{name: "window spent: escalated once, with the account", s: transientErrored(sessions.Network, at(-90*time.Minute), 9), now: t0, probe: alive,
			state: sessions.Errored, acts: []ActionKind{ActEscalate}, check: all(escalated,
				wantDetail(0, "Errored: turn 3 failed: network or server error; API unreachable or failing for 90 min; retried 9 times; the 90 min window for transient failures is spent, so nothing automatic is left"))},
		{name: "window spent, offline part told", s: func() sessions.Session {
			s := transientErrored(sessions.Network, at(-100*time.Minute), 9)
			s.Supervision.OfflineFor = 10 * time.Minute
			return s
		}(), now: t0, probe: alive, state: sessions.Errored, acts: []ActionKind{ActEscalate},
			check: wantDetail(0, "API unreachable or failing for 100 min (offline 10 min of it); retried 9 times;")},
		{name: "already escalated: nothing more", s: func() sessions.Session {
			s := transientErrored(sessions.Network, at(-90*time.Minute), 9)
			s.NeedsAttention, s.Supervision.EscalatedGeneration = true, 3
			return s
		}(), now: t0, probe: alive, state: sessions.Errored, same: true},
		{name: "another recovery's budget does not count", s: rateLimitHold, now: t0, probe: alive, state: sessions.Recovering, obs: sched,
			check: wantSupervision(sessions.Supervision{Recovery: RecoveryTransient, NextAttemptAt: at(30 * time.Second), IncidentStarted: t0})},
		{name: "an incident with no start (old data) starts now", s: transientErrored(sessions.Network, time.Time{}, 2), now: t0, probe: alive,
			state: sessions.Recovering, obs: sched, check: all(nextAt(at(2*time.Minute)),
				func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
					if !out.Supervision.IncidentStarted.Equal(t0) {
						t.Errorf("IncidentStarted %v", out.Supervision.IncidentStarted)
					}
				})},
		{name: "auto-recovery off: escalated at once", s: errored(sessions.Network), now: t0, probe: alive,
			policy: func(p *Policy) { p.AutoRecover = false }, state: sessions.Errored, acts: []ActionKind{ActEscalate},
			check: wantDetail(0, "automatic recovery is off")},
		{name: "other failures still escalate at once", s: errored(sessions.OtherFailure), now: t0, probe: alive,
			state: sessions.Errored, acts: []ActionKind{ActEscalate}, check: wantDetail(0, "there is no automatic recovery for this error")},
		{name: "offline when it failed: held, nothing spent", s: errored(sessions.Network), now: t0, probe: offline,
			state: sessions.Recovering, obs: sched, check: all(
				wantEvidence("network or server error; the machine is offline (no network route) since 09:00:00: holding without spending retries, retrying when the network is back (90 min of the 90 min window left)"),
				wantSupervision(sessions.Supervision{Recovery: RecoveryTransient, IncidentStarted: t0, OfflineSince: t0}))},

		// --- the hold between retries ---
		{name: "hold: before the retry is due", s: transientHold(sessions.Network, at(-time.Minute), 1, at(time.Minute)), now: at(time.Minute - time.Second),
			probe: alive, state: sessions.Recovering, same: true},
		{name: "hold: due, the session is continued", s: transientHold(sessions.Network, at(-time.Minute), 1, t0), now: t0, probe: alive,
			state: sessions.Recovering, acts: []ActionKind{ActContinue}, check: all(
				wantDetail(0, "network or server error on turn 3; continuing the session (retry 2, 89 min of the 90 min window left)"),
				wantEvidence("holding — retried at 09:00:00 (retry 2)"),
				// If the continue does not take, the hold acts again after the next step.
				wantSupervision(sessions.Supervision{Recovery: RecoveryTransient, RecoveryAttempts: 2,
					NextAttemptAt: at(2 * time.Minute), IncidentStarted: at(-time.Minute)}),
				func(t *testing.T, _ sessions.Session, _ []Observation, acts []Action) {
					if acts[0].TimelineKind != TimelineTransientRetry {
						t.Errorf("timeline kind %q", acts[0].TimelineKind)
					}
				})},
		{name: "hold: the process is gone, continued all the same (resume)", s: transientHold(sessions.Network, at(-time.Minute), 1, t0), now: t0,
			probe: dead, state: sessions.Recovering, acts: []ActionKind{ActContinue}},
		{name: "hold: a tick late past the window's end, the scheduled retry is still made",
			s: transientHold(sessions.Network, at(-90*time.Minute-10*time.Second), 8, at(-10*time.Second)), now: t0, probe: alive,
			state: sessions.Recovering, acts: []ActionKind{ActContinue}},
		{name: "hold: a retry that did not take, due past the window: escalated",
			s: transientHold(sessions.Network, at(-95*time.Minute), 9, t0), now: t0, probe: alive,
			state: sessions.Errored, obs: []string{TimelineStateChanged}, acts: []ActionKind{ActEscalate}, check: all(escalated,
				wantDetail(0, "the last retry did not take; API unreachable or failing for 95 min; retried 9 times; the 90 min window for transient failures is spent"))},
		{name: "hold: auto-recovery switched off", s: transientHold(sessions.Network, t0, 1, at(time.Minute)), now: t0, probe: alive,
			policy: func(p *Policy) { p.AutoRecover = false }, state: sessions.Errored, obs: []string{TimelineStateChanged}, acts: []ActionKind{ActEscalate}},

		// --- offline ---
		{name: "hold: offline, the retry is not spent", s: transientHold(sessions.Network, at(-10*time.Minute), 2, t0), now: t0, probe: offline,
			state: sessions.Recovering, obs: sched, check: all(
				wantEvidence("network or server error; the machine is offline (no network route) since 09:00:00: holding without spending retries, retrying when the network is back (80 min of the 90 min window left)"),
				wantSupervision(sessions.Supervision{Recovery: RecoveryTransient, RecoveryAttempts: 2,
					IncidentStarted: at(-10 * time.Minute), OfflineSince: t0}))},
		{name: "hold: still offline, long past the window: nothing", s: func() sessions.Session {
			s := transientHold(sessions.Network, at(-10*time.Minute), 2, at(-9*time.Minute))
			s.Supervision.OfflineSince = at(-9 * time.Minute)
			s.Evidence = "offline since 08:51:00"
			return s
		}(), now: at(5 * time.Hour), probe: offline, state: sessions.Recovering, same: true},
		{name: "hold: back online, retried at once", s: func() sessions.Session {
			s := transientHold(sessions.Network, at(-20*time.Minute), 2, at(-10*time.Minute))
			s.Supervision.OfflineSince = at(-12 * time.Minute)
			return s
		}(), now: t0, probe: alive, state: sessions.Recovering, obs: sched, acts: []ActionKind{ActContinue}, check: all(
			wantObs(0, "the network is back after 12 min offline; retrying now"),
			wantDetail(0, "(retry 3, 82 min of the 90 min window left)"),
			wantSupervision(sessions.Supervision{Recovery: RecoveryTransient, RecoveryAttempts: 3, NextAttemptAt: at(5 * time.Minute),
				IncidentStarted: at(-20 * time.Minute), OfflineFor: 12 * time.Minute}))},
		{name: "hold: back online after the window would have ended: retried, not escalated", s: func() sessions.Session {
			s := transientHold(sessions.Network, at(-5*time.Hour), 2, at(-290*time.Minute))
			s.Supervision.OfflineSince = at(-290 * time.Minute)
			return s
		}(), now: t0, probe: alive, state: sessions.Recovering, obs: sched, acts: []ActionKind{ActContinue}},
		{name: "unknown connectivity is not offline", s: transientHold(sessions.Network, at(-time.Minute), 1, t0), now: t0,
			probe: Probe{}, state: sessions.Recovering, acts: []ActionKind{ActContinue}},

		// --- success ends the incident ---
		{name: "the continued turn completed: recovered, budget refilled", s: func() sessions.Session {
			s := waiting(sessions.WaitReview)
			s.TurnGeneration, s.TurnStarted = 7, at(12*time.Minute)
			s.Supervision = sessions.Supervision{Recovery: RecoveryTransient, RecoveryAttempts: 4, NextAttemptAt: at(22 * time.Minute),
				IncidentStarted: t0, OfflineFor: 5 * time.Minute, EscalatedGeneration: 2}
			return s
		}(), now: at(13 * time.Minute), probe: alive, state: sessions.WaitingOnUser, obs: sched, check: all(
			wantObs(0, "recovered: API unreachable or failing for 12 min (offline 5 min of it); retried 4 times; continued at 09:12:00"),
			wantSupervision(sessions.Supervision{EscalatedGeneration: 2}))},
		{name: "a clean rest with no transient incident says nothing", s: func() sessions.Session {
			s := waiting(sessions.WaitReview)
			s.Supervision = sessions.Supervision{Recovery: RecoveryRateLimit, RecoveryAttempts: 1}
			return s
		}(), now: at(time.Minute), probe: alive, state: sessions.WaitingOnUser, check: wantSupervision(sessions.Supervision{})},
	})
}

// An outage replayed tick by tick (15 s) through Reconcile and Apply: every
// retry fails until the network comes back at `upAt` (never, if zero). The
// retries follow the schedule; an outage longer than the window escalates
// exactly once, when it is spent; a shorter one ends in a completed turn.
func TestReconcileTransientOutage(t *testing.T) {
	const tick = 15 * time.Second
	failure := sessions.Failure{Kind: sessions.Network, Message: "API Error: Unable to connect to API (ECONNRESET)"}
	tests := []struct {
		name        string
		upAt        time.Duration
		offline     [2]time.Duration // the machine knows it is offline in [from, to)
		wantRetries []time.Duration
		escalateAt  time.Duration
	}{
		{name: "longer than the window",
			// The failure at 0 is scheduled at the 0 tick; each retry fails
			// 5 s after it is sent, and is rescheduled at the next tick.
			wantRetries: []time.Duration{
				30 * time.Second,                // +30 s
				1*time.Minute + 45*time.Second,  // +1 min after the 0:45 tick
				4 * time.Minute,                 // +2 min after 2:00
				9*time.Minute + 15*time.Second,  // +5 min after 4:15
				19*time.Minute + 30*time.Second, // +10 min after 9:30
				34*time.Minute + 45*time.Second, // +15 min after 19:45
				50 * time.Minute, 65*time.Minute + 15*time.Second, 80*time.Minute + 30*time.Second,
				90 * time.Minute, // the last one, at the window's end (+9:15 capped)
			},
			escalateAt: 90*time.Minute + 15*time.Second},
		{name: "back after 12 min", upAt: 12 * time.Minute,
			wantRetries: []time.Duration{30 * time.Second, 1*time.Minute + 45*time.Second, 4 * time.Minute,
				9*time.Minute + 15*time.Second, 19*time.Minute + 30*time.Second}},
		{name: "offline for two hours, then back", upAt: 125 * time.Minute, offline: [2]time.Duration{3 * time.Minute, 125 * time.Minute},
			// 0:30, 1:45 fail; 3:00 tick: offline, held; back at 125:00:
			// retried at once, and it works.
			wantRetries: []time.Duration{30 * time.Second, 1*time.Minute + 45*time.Second, 125 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := specPolicy()
			s := apply(working(), t0, sessions.Event{Kind: sessions.EvTurnFailed, Failure: failure})
			var retries []time.Duration
			var escalations []time.Duration
			var pendingFail time.Time
			for now := t0; now.Before(at(4 * time.Hour)); now = now.Add(tick) {
				if !pendingFail.IsZero() && !now.Before(pendingFail) {
					s = apply(s, pendingFail, sessions.Event{Kind: sessions.EvTurnFailed, Failure: failure})
					pendingFail = time.Time{}
				}
				probe := alive
				if off := now.Sub(t0); off >= tt.offline[0] && off < tt.offline[1] {
					probe = offline
				}
				out, _, acts := reconcile(t, s, now, p, probe)
				s = out
				for _, a := range acts {
					switch a.Kind {
					case ActContinue:
						retries = append(retries, now.Sub(t0))
						s = apply(s, now, sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.BySupervisor})
						if tt.upAt != 0 && !now.Before(at(tt.upAt)) {
							s = apply(s, now.Add(time.Second), sessions.Event{Kind: sessions.EvActivity},
								sessions.Event{Kind: sessions.EvTurnCompleted})
						} else {
							pendingFail = now.Add(5 * time.Second)
						}
					case ActEscalate:
						escalations = append(escalations, now.Sub(t0))
					default:
						t.Fatalf("unexpected %v at +%v", a.Kind, now.Sub(t0))
					}
				}
			}
			if !slices.Equal(retries, tt.wantRetries) {
				t.Errorf("retries at\n %v\nwant\n %v", retries, tt.wantRetries)
			}
			switch {
			case tt.escalateAt != 0:
				if len(escalations) != 1 || escalations[0] != tt.escalateAt {
					t.Errorf("escalations at %v, want one at %v", escalations, tt.escalateAt)
				}
				if s.State != sessions.Errored || !s.NeedsAttention || s.Failure.Kind != sessions.Network {
					t.Errorf("ended %v (%+v), needs_attention %v", s.State, s.Failure, s.NeedsAttention)
				}
			default:
				if len(escalations) != 0 {
					t.Errorf("escalated at %v", escalations)
				}
				if s.State != sessions.WaitingOnUser || s.Supervision != (sessions.Supervision{}) {
					t.Errorf("ended %v with %+v, want a review with the incident closed", s.State, s.Supervision)
				}
			}
		})
	}
}

// One incident, one budget: after a success the next incident starts from
// the first step with a whole window.
func TestReconcileTransientRefilledBySuccess(t *testing.T) {
	p := specPolicy()
	s := transientErrored(sessions.Network, at(-80*time.Minute), 8)
	s, _, _ = reconcile(t, s, t0, p, alive)
	if !s.Supervision.NextAttemptAt.Equal(at(10 * time.Minute)) {
		t.Fatalf("late in the incident: next retry at +%v, want the window's end at +10m", s.Supervision.NextAttemptAt.Sub(t0))
	}
	// The retry works.
	s, _, _ = reconcile(t, s, at(10*time.Minute), p, alive)
	s = apply(s, at(10*time.Minute), sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.BySupervisor},
		sessions.Event{Kind: sessions.EvActivity}, sessions.Event{Kind: sessions.EvTurnCompleted})
	s, obs, _ := reconcile(t, s, at(11*time.Minute), p, alive)
	if len(obs) != 1 || !strings.HasPrefix(obs[0].Detail, "recovered: API unreachable or failing for 90 min; retried 9 times") {
		t.Fatalf("closing observation %+v", obs)
	}
	// A new failure two hours later: a new incident.
	s = apply(s, at(2*time.Hour), sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.ByUser},
		sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.Network}})
	s, _, _ = reconcile(t, s, at(2*time.Hour), p, alive)
	if s.Supervision.RecoveryAttempts != 0 || !s.Supervision.NextAttemptAt.Equal(at(2*time.Hour+30*time.Second)) ||
		!s.Supervision.IncidentStarted.Equal(at(2*time.Hour)) {
		t.Fatalf("the next incident did not start afresh: %+v", s.Supervision)
	}
}
