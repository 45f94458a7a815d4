package supervisor

import (
	"fmt"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// OrphanReaper is the optional Agent capability to stop a process that an
// earlier run of the app launched and lost when it died (a crash, SIGKILL,
// a power cut of the app alone). The agent keeps running without the app:
// its pipes are gone, so it can be neither seen nor steered, and resuming
// the session next to it would put two processes on one transcript.
type OrphanReaper interface {
	// ReapOrphan stops pid if it is still this agent's process that
	// started at stamp (never a reused pid) and reports whether it stopped
	// one.
	ReapOrphan(pid int, stamp string) (bool, error)
}

// reapOrphan stops the process a persisted session still claims, at
// boot, before the session can be resumed. It returns a sentence for the
// timeline when it stopped one.
func (r *Runtime) reapOrphan(s sessions.Session) string {
	if s.Source != sessions.Managed || !s.ProcessAlive || s.PID <= 0 {
		return ""
	}
	reaper, ok := r.agents[s.Agent].(OrphanReaper)
	if !ok {
		return ""
	}
	stopped, err := reaper.ReapOrphan(s.PID, s.PIDStart)
	if err != nil {
		r.log.Warn("stopping an orphaned agent process", "session", s.ID, "pid", s.PID, "err", err)
	}
	if !stopped {
		return ""
	}
	r.log.Info("stopped an orphaned agent process", "session", s.ID, "pid", s.PID)
	return fmt.Sprintf("its agent process %d, left running when the app stopped, was stopped so it cannot work next to a resumed one", s.PID)
}

// startStamp is pid's start stamp as the process table shows it now
// (procscan.Proc.Stamp; "" where the table is not read), kept with the
// session so that reapOrphan, after a restart, signals pid only while it is
// still that process. The app is the process's parent and has not waited
// for it yet, so the pid cannot have been reused.
func startStamp(pid int) string {
	p, _ := procscan.Probe(pid)
	return p.Stamp
}

// probeStored is, at boot, whether the process a stored terminal session
// names still runs: the pid, and the start stamp recorded when the session
// was found (PIDStart), so a pid reused after a reboot or a crash is not
// taken for the agent. A session saved before the stamp was kept is judged
// by its process's start time, which cannot be later than the session was
// found. Unknown for a managed session (the boot never assumes its process
// alive), without a pid, or where the process table is not read.
func probeStored(s sessions.Session) core.Probe {
	if s.Source == sessions.Managed || !s.InTurn || s.PID <= 0 {
		return core.Probe{} // only a turn in flight is decided by it
	}
	p, st := procscan.Probe(s.PID)
	switch {
	case st == procscan.Gone:
		return core.Probe{Known: true}
	case st != procscan.Running:
		return core.Probe{}
	case s.PIDStart != "" && p.Stamp != "":
		return core.Probe{Known: true, Alive: p.Stamp == s.PIDStart}
	case !p.Started.IsZero() && !s.CreatedAt.IsZero():
		return core.Probe{Known: true, Alive: !p.Started.After(s.CreatedAt.Add(storedStartSlack))}
	}
	return core.Probe{}
}

// storedStartSlack absorbs the rounding of a process's start time (the
// boot time is read to the second) against the time its session was found.
const storedStartSlack = 2 * time.Second
