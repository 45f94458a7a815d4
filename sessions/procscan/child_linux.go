package procscan

import (
	"syscall"
	"unsafe"
)

// pPID is waitid(2)'s P_PID: wait for the child whose pid is given.
const pPID = 1

// siginfo is the kernel's siginfo_t (128 bytes) as far as ProbeChild reads
// it: its signal.
type siginfo struct {
	signo int32
	_     [124]byte
}

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
	info, err := waitidNoReap(pid, syscall.WNOHANG)
	switch {
	case err == syscall.EINTR:
		return Proc{PID: pid}, Unknown
	case err != nil:
		return Probe(pid)
	case info.signo == int32(syscall.SIGCHLD):
		return Proc{PID: pid}, Gone // exited: a zombie until its Wait reaps it
	}
	return Proc{PID: pid}, Running
}

// waitidNoReap is waitid(P_PID, pid, WEXITED|WNOWAIT|flags): a child found
// exited fills info (its signal SIGCHLD); with WNOHANG one still running
// leaves it as it was, zero (Linux, as POSIX allows).
func waitidNoReap(pid, flags int) (siginfo, error) {
	var info siginfo
	_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info)), uintptr(syscall.WEXITED|syscall.WNOWAIT|flags), 0, 0)
	if e != 0 {
		return info, e
	}
	return info, nil
}
