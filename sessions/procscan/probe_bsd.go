//go:build unix && !linux && !darwin

package procscan

import "syscall"

// Probe on the other Unixes: kill(pid, 0) failing with ESRCH is the only
// certain answer. Success does not mean alive (a zombie answers too), so
// it is Unknown.
func Probe(pid int) (Proc, State) {
	if pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH {
		return Proc{PID: pid}, Gone
	}
	return Proc{PID: pid}, Unknown
}
