// Package procscan reads the process table: the processes of one program
// with their command line, working directory, start time and open files,
// and a probe that tells whether a process is still the one seen earlier
// (a pid can be reused). An external source uses it to find agent
// processes that did not register themselves anywhere (Codex's terminal
// sessions) and to follow their liveness.
package procscan

import (
	"errors"
	"time"
)

// ErrNotProbed: this platform's process table is not read (only Linux's
// /proc is, so far).
var ErrNotProbed = errors.New("the process table is not probed on this platform")

// Proc is one process as the table showed it.
type Proc struct {
	PID  int
	PPID int
	// Comm is the kernel's name of the process (Linux: /proc/PID/stat
	// field 2: the executable's base name cut to 15 bytes, or the title
	// the program gave its main thread); "" where the platform does not
	// say.
	Comm string
	// Argv is the command line (empty when it could not be read: a
	// process of another user, or one that just exited).
	Argv []string
	// Cwd is the working directory (empty when it could not be read).
	Cwd string
	// Started is the process's start time, to the clock tick; two probes of
	// the same process give the same value, a later process that reused
	// the pid a later one.
	Started time.Time
	// Stamp is the platform's exact start stamp (Linux: /proc/PID/stat
	// field 22, clock ticks since boot): what Claude Code writes as its
	// session file's procStart, and equal across probes of one process
	// where Started, computed from the boot time, may be rounded.
	Stamp string
}

// Listed is one entry of the process table's listing: a pid, and a
// number that changes when the pid may name another process than before
// (Linux: the inode number of /proc/PID, which a new process under a
// reused pid never shares; it may also change for the same process, when
// the kernel dropped its cache). Zero says nothing.
type Listed struct {
	PID int
	Ino uint64
}

// State is what a probe of one pid found.
type State int

// The probe's answers. Unknown is the zero value: the platform cannot tell.
const (
	Unknown State = iota
	Running
	Gone
)

var stateNames = []string{"unknown", "running", "gone"}

func (s State) String() string {
	if int(s) < 0 || int(s) >= len(stateNames) {
		return "state(?)"
	}
	return stateNames[s]
}

// sameSlack absorbs the rounding of a start time computed twice (the boot
// time is read to the second).
const sameSlack = time.Second

// Alive reports whether pid still runs and is the process that started at
// started (not a later one that reused the pid); known is false when the
// platform cannot tell.
func Alive(pid int, started time.Time) (alive, known bool) {
	p, st := Probe(pid)
	switch st {
	case Unknown:
		return false, false
	case Gone:
		return false, true
	}
	if !started.IsZero() && !p.Started.IsZero() {
		d := p.Started.Sub(started)
		if d > sameSlack || d < -sameSlack {
			return false, true
		}
	}
	return true, true
}
