package claude

import (
	"fmt"
	"time"
)

// liveness is what a platform probe could tell about a process id.
type liveness int

const (
	// livenessUnknown: the probe could not tell (no probe on this
	// platform, a refused query). The supervisor then acts on nothing and
	// says "not probed".
	livenessUnknown liveness = iota
	// livenessRunning: a process with this id runs and is not a zombie.
	livenessRunning
	// livenessGone: no process has this id, or it has exited (a zombie
	// not yet reaped).
	livenessGone
)

func (l liveness) String() string {
	switch l {
	case livenessUnknown:
		return "unknown"
	case livenessRunning:
		return "running"
	case livenessGone:
		return "gone"
	}
	return fmt.Sprintf("liveness(%d)", int(l))
}

// probe is one observation of a process id: its liveness and, when the
// platform tells, an identity (its start time, in the platform's own units)
// that a later process reusing the id would not share.
type probe struct {
	state liveness
	ident uint64
}

// exitGrace is how long a dead-but-unreaped process is reported as "don't
// know": the normal exit event, with its exit code, is about to arrive and
// says more than a liveness probe.
const exitGrace = 3 * time.Second

// Alive reports whether the agent process still runs, independently of its
// stdout: an orphaned tool can hold stdout open after the agent died, and
// then no exit event ever comes. Each platform probes in its own way (Linux
// /proc, macOS sysctl, Windows the process object); known is false whenever
// the probe cannot tell, never a guess of "alive".
func (p *Process) Alive() (alive, known bool) {
	return p.judge(probeProcess(p.PID()), time.Now())
}

// judge turns one observation into the answer Alive gives. The app is the
// agent's parent and reaps it only in Wait, so until then its pid cannot be
// given to another process; the identity check is for a probe that runs
// after all (a pid seen with a different start time is someone else's, so
// ours is gone).
func (p *Process) judge(o probe, now time.Time) (alive, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	state := o.state
	if state == livenessRunning && o.ident != 0 {
		switch {
		case p.ident == 0:
			p.ident = o.ident
		case p.ident != o.ident:
			state = livenessGone
		}
	}
	switch state {
	case livenessRunning:
		p.deadSince = time.Time{}
		return true, true
	case livenessGone:
		if p.deadSince.IsZero() {
			p.deadSince = now
		}
		if now.Sub(p.deadSince) < exitGrace {
			return false, false
		}
		return false, true
	}
	return false, false
}
