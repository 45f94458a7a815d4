package agentkit

import (
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// ExitGrace is how long a dead-but-unreaped agent process is reported as
// "don't know": its exit event, with the exit code, is about to arrive and
// says more than a liveness probe.
const ExitGrace = 3 * time.Second

// Liveness follows one agent process by pid and start stamp, for a
// Process's Alive (the runtime's liveness probe, see supervisor/loop.go).
// It tells whether the process runs independently of its stdout: an
// orphaned tool can hold stdout open after the agent died, and then no exit
// event ever comes. The zero value is not usable; see NewLiveness.
type Liveness struct {
	pid   int
	probe func(pid int) (procscan.Proc, procscan.State)

	mu sync.Mutex // guards stamp and deadSince
	// stamp is the process's start stamp as first seen: a later process
	// reusing the pid has another.
	stamp string
	// deadSince is when the process was first found gone.
	deadSince time.Time
}

// NewLiveness follows pid, a child of this process, through the
// platform's process table (procscan.ProbeChild: on Linux one waitid that
// reaps nothing, elsewhere procscan.Probe: macOS sysctl, Windows the
// process object).
func NewLiveness(pid int) *Liveness {
	return &Liveness{pid: pid, probe: procscan.ProbeChild}
}

// Alive reports whether the process still runs; known is false whenever
// the probe cannot tell, never a guess of "alive".
func (l *Liveness) Alive() (alive, known bool) {
	p, st := l.probe(l.pid)
	return l.judge(p.Stamp, st, time.Now())
}

// judge turns one observation into the answer Alive gives. The app is the
// agent's parent and reaps it only in Wait, so until then its pid cannot be
// given to another process; the stamp check is for a probe that runs after
// all (a pid seen with another start stamp is someone else's, so ours is
// gone).
func (l *Liveness) judge(stamp string, st procscan.State, now time.Time) (alive, known bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st == procscan.Running && stamp != "" {
		switch {
		case l.stamp == "":
			l.stamp = stamp
		case l.stamp != stamp:
			st = procscan.Gone
		}
	}
	switch st {
	case procscan.Running:
		l.deadSince = time.Time{}
		return true, true
	case procscan.Gone:
		if l.deadSince.IsZero() {
			l.deadSince = now
		}
		if now.Sub(l.deadSince) < ExitGrace {
			return false, false
		}
		return false, true
	}
	return false, false
}
