package procscan

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ProbeChild tells whether pid, a child of this process not yet reaped,
// still runs: one waitid(2) that neither blocks nor reaps (WNOHANG,
// WNOWAIT), so the child's own Wait still sees its exit. It is the
// runtime's liveness probe of every agent it started, at every tick: one
// system call against Probe's three and the kernel's rendering of the
// stat line. A pid that is not a child here (already reaped by its Wait,
// or never ours) is read from /proc by Probe: gone, or another process's.
func ProbeChild(pid int) (Proc, State) {
	if pid <= 0 {
		return Proc{}, Unknown
	}
	// A child found exited fills info (its signal SIGCHLD); one still
	// running leaves it as it was, zero (Linux, as POSIX allows).
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	switch {
	case errors.Is(err, unix.EINTR):
		return Proc{PID: pid}, Unknown
	case err != nil:
		return Probe(pid)
	case info.Signo == int32(unix.SIGCHLD):
		return Proc{PID: pid}, Gone // exited: a zombie until its Wait reaps it
	}
	return Proc{PID: pid}, Running
}
