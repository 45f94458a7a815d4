package core

import (
	"fmt"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// TimelineBootReconciled records what the boot rule changed.
const TimelineBootReconciled = "boot_reconciled"

// TimelineOrphanReaped records an agent process an earlier run left
// running that the boot stopped, when the boot changed nothing else.
const TimelineOrphanReaped = "orphan_reaped"

// BootReconcile is the pure boot rule: a turn that was in flight when the app
// stopped is Interrupted (a review when the user had asked to stop it). A
// managed session's process is never assumed alive (the app that owned it
// is gone). A terminal session's process is what probe found at the pid
// and start stamp it had: gone, its turn died while the app was down and is
// Interrupted like a managed one (the recovery rules then resume it in the
// background or escalate it); alive, the session is left as it was, to be
// followed again from its transcript once its source finds it; unknown,
// its turn is left to the stall rules. A session at rest is not probed: its
// source finds it again if it runs. changed reports whether s needs
// saving; obs says why when a turn was ended.
func BootReconcile(s sessions.Session, now time.Time, probe Probe) (next sessions.Session, obs []Observation, changed bool) {
	terminal := s.Source != sessions.Managed
	if terminal && s.InTurn && !(probe.Known && !probe.Alive) {
		return bootLiveTerminal(s, now, probe)
	}
	if !s.InTurn && !s.ProcessAlive {
		return s, nil, false
	}
	n := s.Clone()
	// Until found running again (a terminal session's source does that).
	n.ProcessAlive = false
	n.UpdatedAt = now
	if !s.InTurn {
		return n, nil, true
	}
	endTurn(&n)
	n.State = sessions.Interrupted
	n.Evidence = fmt.Sprintf("turn %d was in flight when the app last stopped", s.TurnGeneration)
	if terminal {
		n.Evidence += fmt.Sprintf("; its process %d is gone (it ended while the app was down)", s.PID)
	}
	if s.StoppedByUser() {
		// The user had asked to stop it: a review, never a nudge.
		n.State, n.WaitReason = sessions.WaitingOnUser, sessions.WaitReview
		n.Evidence = fmt.Sprintf("turn %d stopped at your request (the app stopped before the agent confirmed); waiting for review", s.TurnGeneration)
	}
	n.StateChangedAt = now
	obs = []Observation{{Kind: TimelineBootReconciled, Detail: n.Evidence, From: s.State, To: n.State}}
	if n.State == sessions.Interrupted && s.State != sessions.Interrupted {
		// Every change into Interrupted is marked with its cause.
		// The state change itself is the boot_reconciled row's.
		obs = append(obs, Observation{Kind: TimelineMarkedInterrupted, Detail: n.Evidence, From: n.State, To: n.State, Cause: sessions.CauseBoot})
	}
	return n, obs, true
}

// bootLiveTerminal is a terminal session whose turn was in flight when the
// app stopped and whose process was not found gone: the app stopping did
// not stop it. Its state stands until its source finds it again and reads
// its transcript; the row says why it was not ended.
func bootLiveTerminal(s sessions.Session, now time.Time, probe Probe) (sessions.Session, []Observation, bool) {
	n := s.Clone()
	n.ProcessAlive = probe.Known && probe.Alive
	n.UpdatedAt = now
	why := fmt.Sprintf("its process %d still runs, so it is followed again from its transcript", s.PID)
	if !n.ProcessAlive {
		why = fmt.Sprintf("whether its process %d still runs cannot be told; it is followed again if it is found running", s.PID)
	}
	msg := fmt.Sprintf("turn %d was in flight when the app last stopped; %s", s.TurnGeneration, why)
	return n, []Observation{{Kind: TimelineBootReconciled, Detail: msg, From: s.State, To: s.State}}, true
}
