package core

import (
	"fmt"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Transient incidents (issue 15): a connection that failed or dropped, a 5xx
// or an overload that outlasted the agent's own retries. Claude Code gives
// up after about three minutes by default; a laptop that lost Wi-Fi for five,
// a VPN that reconnected or the provider's bad quarter of an hour lasts
// longer. Such a failure is waited out rather than escalated:
//
//   - Errored(network or overloaded) → Recovering, with the time of the next
//     retry in the evidence (the countdown), after a backoff of 30 s, 1, 2,
//     5, 10 and 15 min, then every 15 min;
//   - at that time the session is continued (ActContinue: the constant nudge
//     text, resuming the agent's session if its process is gone); a retry
//     that fails again comes back here with the next step of the backoff;
//   - escalation only when Policy.TransientWindow is spent, counted from the
//     incident's first failure;
//   - while the machine can tell it is offline (Probe.Offline) the session
//     is held without spending retries or the window, and retried at the
//     first tick after the network is back;
//   - a turn that completes ends the incident and refills the budget (one
//     incident, one budget), and the timeline gets an account of it.
//
// The bookkeeping lives in Supervision (IncidentStarted, OfflineSince,
// OfflineFor, RecoveryAttempts, NextAttemptAt), persisted with the session,
// so an app restart in the middle neither restarts the window nor forgets
// a retry.

// RecoveryTransient is the Supervision.Recovery of a transient incident
// (persisted: part of the storage contract).
const RecoveryTransient = "transient"

// TimelineTransientRetry is the timeline kind of a transient incident's
// retries (ActContinue), and of the observations that schedule them, hold
// them while offline, and close the incident.
const TimelineTransientRetry = "transient_retry"

// transientSchedule is the wait before each retry of an incident; the last
// step repeats until the window is spent.
var transientSchedule = []time.Duration{
	30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
}

// transientMinTries: no single wait is longer than this fraction of the
// window, so a short window still gets several tries instead of one retry
// at its very end. For the default 90 min it caps nothing (90/6 = 15 min).
const transientMinTries = 6

// transientDelay is the wait before the retry that follows `retries`
// earlier ones. retries comes from persisted data: any value is safe.
func (p Policy) transientDelay(retries int) time.Duration {
	d := transientSchedule[len(transientSchedule)-1]
	if retries >= 0 && retries < len(transientSchedule) {
		d = transientSchedule[retries]
	}
	if p.TransientWindow > 0 {
		d = min(d, p.TransientWindow/transientMinTries)
	}
	return d
}

// transientSpentAt is how much of the window the incident has used by t:
// the time since it began less the time the machine was known to be
// offline. Never negative (a clock set back must not lengthen the window
// beyond what was promised, nor make it negative).
func (r *reconciler) transientSpentAt(t time.Time) time.Duration {
	sv := &r.n.Supervision
	spent := t.Sub(sv.IncidentStarted) - sv.OfflineFor
	if !sv.OfflineSince.IsZero() && t.After(sv.OfflineSince) {
		spent -= t.Sub(sv.OfflineSince)
	}
	return max(spent, 0)
}

// recoverTransient handles Errored with a transient failure: it starts the
// incident (or carries on with the one in progress: a retry that failed
// again) and schedules the next retry, or escalates when the window is spent.
func (r *reconciler) recoverTransient() {
	sv := &r.n.Supervision
	if sv.Recovery != RecoveryTransient {
		r.startIncident(RecoveryTransient) // its start is set just below
	}
	if _, _, online := r.incidentClock(); !online {
		return
	}
	window := r.p.TransientWindow
	spent := r.transientSpentAt(r.now)
	if spent >= window {
		r.escalate(fmt.Sprintf("%s; the %s window for transient failures is spent", r.transientAccount(r.now), humanSpan(window)))
		return
	}
	left := window - spent
	// The last retry falls at the end of the window at the latest, so the
	// window is used to its end before escalating.
	next := r.now.Add(min(r.p.transientDelay(sv.RecoveryAttempts), left))
	if at := r.n.Failure.RetryAt; at.After(next) && !at.After(r.now.Add(left)) {
		next = at // the provider's own retry time, within the window, is a floor
	}
	sv.NextAttemptAt = next
	ev := fmt.Sprintf("%s; retrying at %s (retry %d, %s of the %s window left)",
		r.n.Failure.Kind.Label(), clockPhrase(next, r.now), sv.RecoveryAttempts+1, humanSpan(left), humanSpan(window))
	r.transition(sessions.Recovering, ev)
	r.observe(TimelineTransientRetry, "scheduled: "+ev)
}

// holdTransient runs the hold between retries: Recovering with no turn in
// flight. It retries when the countdown ends, holds while offline, and
// escalates a retry that did not take when the window is spent.
func (r *reconciler) holdTransient() {
	sv := &r.n.Supervision
	if !r.p.AutoRecover || !r.p.NudgeEnabled {
		r.abandonHold()
		return
	}
	off, back, online := r.incidentClock()
	if !online {
		return
	}
	if back {
		// The network is back: retry now rather than at the end of a
		// countdown that ran while nothing could have worked.
		sv.NextAttemptAt = r.now
		r.observe(TimelineTransientRetry, fmt.Sprintf("the network is back after %s offline; retrying now", humanSpan(off)))
	}
	if r.now.Before(sv.NextAttemptAt) {
		return
	}
	window := r.p.TransientWindow
	// Judged at the time the retry was due, not at this (possibly late)
	// tick: a retry scheduled within the window is always made. One due
	// after it is the fallback of a retry that did not take (the continue
	// failed, or the turn never started): the window is spent.
	if r.transientSpentAt(sv.NextAttemptAt) > window {
		r.restoreErrored("the last retry did not take")
		r.escalate(fmt.Sprintf("%s; the %s window for transient failures is spent", r.transientAccount(r.now), humanSpan(window)))
		return
	}
	sv.RecoveryAttempts++
	// If the continue does not take, the hold acts again at NextAttemptAt.
	sv.NextAttemptAt = r.now.Add(r.p.transientDelay(sv.RecoveryAttempts))
	left := max(window-r.transientSpentAt(r.now), 0)
	r.note(fmt.Sprintf("retried at %s (retry %d)", clockPhrase(r.now, r.now), sv.RecoveryAttempts))
	r.act(ActContinue, TimelineTransientRetry, fmt.Sprintf("%s on turn %d; continuing the session (retry %d, %s of the %s window left)",
		r.n.Failure.Kind.Label(), r.n.TurnGeneration, sv.RecoveryAttempts, humanSpan(left), humanSpan(window)))
}

// holdOffline holds the incident while the machine is offline: Recovering,
// no retry spent, the window paused. The first offline tick records it;
// later ones change nothing (the evidence already says since when).
func (r *reconciler) holdOffline() {
	n, sv := &r.n, &r.n.Supervision
	first := sv.OfflineSince.IsZero()
	if first {
		sv.OfflineSince = r.now
		// No countdown while offline: the next retry waits for the network,
		// not for a time (a stale one would read "due now" in the UI).
		sv.NextAttemptAt = time.Time{}
		r.changed = true
	}
	if !first && n.State == sessions.Recovering {
		return
	}
	window := r.p.TransientWindow
	left := max(window-r.transientSpentAt(r.now), 0)
	ev := fmt.Sprintf("%s; the machine is offline (no network route) since %s: holding without spending retries, retrying when the network is back (%s of the %s window left)",
		n.Failure.Kind.Label(), clockPhrase(sv.OfflineSince, r.now), humanSpan(left), humanSpan(window))
	r.transition(sessions.Recovering, ev)
	r.observe(TimelineTransientRetry, "offline: "+ev)
}

// foldOffline ends an offline span: its length joins OfflineFor, which the
// window does not count. It returns the span.
// incidentClock keeps the transient window's clock: it sets a start that is
// missing (a new incident) or lost or in the future (the clock was set
// back), so the window counts from now rather than never or from a time not
// yet reached; holds the session while the machine is offline (online
// false); and once it is back folds the time offline into the incident
// (back true, off how long).
func (r *reconciler) incidentClock() (off time.Duration, back, online bool) {
	sv := &r.n.Supervision
	if sv.IncidentStarted.IsZero() || sv.IncidentStarted.After(r.now) {
		sv.IncidentStarted = r.now
		r.changed = true
	}
	if r.probe.Offline {
		r.holdOffline()
		return 0, false, false
	}
	if sv.OfflineSince.IsZero() {
		return 0, false, true
	}
	return r.foldOffline(), true, true
}

func (r *reconciler) foldOffline() time.Duration {
	sv := &r.n.Supervision
	off := max(r.now.Sub(sv.OfflineSince), 0)
	sv.OfflineFor += off
	sv.OfflineSince = time.Time{}
	r.changed = true
	return off
}

// closeTransient records how a transient incident ended when its turn
// completed (forgetStaleBookkeeping then clears it, which refills the
// budget): "API unreachable or failing for 12 min (offline 5 min of it);
// retried 4 times; continued at 14:32:05".
func (r *reconciler) closeTransient() {
	sv := &r.n.Supervision
	if sv.Recovery != RecoveryTransient || sv.IncidentStarted.IsZero() {
		return
	}
	// The turn that completed is the one the last retry started.
	continued := r.n.TurnStarted
	if continued.IsZero() || continued.Before(sv.IncidentStarted) || continued.After(r.now) {
		continued = r.now
	}
	r.observe(TimelineTransientRetry, fmt.Sprintf("recovered: %s; continued at %s",
		r.transientAccount(continued), clockPhrase(continued, r.now)))
}

// transientAccount sums up an incident until t: how long, how much of it
// offline, how many retries.
func (r *reconciler) transientAccount(t time.Time) string {
	sv := &r.n.Supervision
	off := sv.OfflineFor
	if !sv.OfflineSince.IsZero() && t.After(sv.OfflineSince) {
		off += t.Sub(sv.OfflineSince)
	}
	s := "API unreachable or failing for " + humanSpan(t.Sub(sv.IncidentStarted))
	if off > 0 {
		s += fmt.Sprintf(" (offline %s of it)", humanSpan(off))
	}
	switch sv.RecoveryAttempts {
	case 0:
		s += "; not retried"
	case 1:
		s += "; retried once"
	default:
		s += fmt.Sprintf("; retried %d times", sv.RecoveryAttempts)
	}
	return s
}
