package supervisor

import (
	"fmt"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
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
