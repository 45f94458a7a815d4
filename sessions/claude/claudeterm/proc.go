package claudeterm

import (
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// startSlack is how much later than its session file's startedAt a process
// may appear to have started (clock-tick rounding, a slow registration is
// the other way round). A process that started clearly after the file was
// written is not the one that wrote it: the pid was reused.
const startSlack = 2 * time.Second

// sameProcess judges one probe of a session file's pid: alive, and not a
// later process that reused the pid. procStart equal to the platform's own
// stamp confirms at once; otherwise the process's start time must not be
// after the file's registration. (procscan.Alive is not this rule: it
// compares two probes' start times, where a session file has only the time
// the CLI registered, which is after its start.)
func sameProcess(f SessionFile, p procscan.Proc, st procscan.State) (alive, known bool) {
	switch st {
	case procscan.Unknown:
		return false, false
	case procscan.Gone:
		return false, true
	}
	if f.ProcStart != "" && p.Stamp != "" && f.ProcStart == p.Stamp {
		return true, true
	}
	if !p.Started.IsZero() && f.StartedAt > 0 && p.Started.After(f.Started().Add(startSlack)) {
		return false, true
	}
	return true, true
}

// ProcessAlive probes the session file's process. Where the process table
// is not read (procscan.Probe says Unknown) the observer neither trusts a
// session alive nor declares it gone: the session file's removal still
// ends it.
func ProcessAlive(f SessionFile) (alive, known bool) {
	p, st := procscan.Probe(f.PID)
	return sameProcess(f, p, st)
}
