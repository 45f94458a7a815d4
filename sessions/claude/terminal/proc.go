package terminal

import "time"

// startSlack is how much later than its session file's startedAt a process
// may appear to have started (clock-tick rounding, a slow registration is
// the other way round). A process that started clearly after the file was
// written is not the one that wrote it: the pid was reused.
const startSlack = 2 * time.Second

// sameProcess judges one probe of a session file's pid: alive, and not a
// later process that reused the pid. procStart equal to the platform's own
// stamp confirms at once; otherwise the process's start time must not be
// after the file's registration.
func sameProcess(f SessionFile, p procInfo) (alive, known bool) {
	switch p.state {
	case procUnknown:
		return false, false
	case procGone:
		return false, true
	}
	if f.ProcStart != "" && p.stamp != "" && f.ProcStart == p.stamp {
		return true, true
	}
	if !p.started.IsZero() && f.StartedAt > 0 && p.started.After(f.Started().Add(startSlack)) {
		return false, true
	}
	return true, true
}

type procState int

const (
	procUnknown procState = iota
	procRunning
	procGone
)

// procInfo is one probe of a pid: running or gone, its platform start stamp
// (Linux: /proc/PID/stat field 22) and its start time when known.
type procInfo struct {
	state   procState
	stamp   string
	started time.Time
}

// ProcessAlive probes the session file's process.
func ProcessAlive(f SessionFile) (alive, known bool) { return sameProcess(f, probePID(f.PID)) }
