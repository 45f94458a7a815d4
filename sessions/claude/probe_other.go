//go:build unix && !linux && !darwin

package claude

import "syscall"

// probeProcess on the other Unixes: kill(pid, 0) failing with ESRCH is
// the only certain answer. Success does not mean alive (a zombie answers
// too), so it is unknown.
func probeProcess(pid int) probe {
	if pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH {
		return probe{state: livenessGone}
	}
	return probe{}
}
