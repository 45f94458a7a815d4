//go:build darwin

package procscan

import (
	"syscall"
	"unsafe"
)

// The sysctl name kern.proc.pid.PID as numbers (sys/sysctl.h): the name
// form cannot be used, because the kernel resolves names only up to a node
// with a handler, which kern.proc.pid is.
const (
	ctlKern     = 1
	kernProc    = 14
	kernProcPID = 1
)

// Probe asks the kernel for the process's kinfo_proc: no answer is gone,
// p_stat SZOMB is gone (kill(pid, 0) would still succeed on a zombie,
// which is how a dead agent read as alive), the start time is the Stamp.
// When the query itself fails it falls back to kill(pid, 0), which can only
// tell "gone" for sure.
func Probe(pid int) (Proc, State) {
	if pid <= 0 {
		return Proc{}, Unknown
	}
	mib := [4]int32{ctlKern, kernProc, kernProcPID, int32(pid)}
	var buf [kinfoProcSize]byte
	n := uintptr(len(buf))
	// The standard library's syscall package exports no raw sysctl on
	// darwin; Syscall6 with SYS___SYSCTL is the call its own sysctl makes.
	_, _, errno := syscall.Syscall6(syscall.SYS___SYSCTL,
		uintptr(unsafe.Pointer(&mib[0])), uintptr(len(mib)),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0, 0)
	if errno != 0 {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return Proc{PID: pid}, Gone
		}
		return Proc{PID: pid}, Unknown
	}
	return parseKinfoProc(buf[:n], pid)
}
