package claude

import "encoding/binary"

// The layout of macOS's struct kinfo_proc (sys/sysctl.h) as far as the
// liveness probe reads it; the same on amd64 and arm64, both little endian.
// It starts with struct extern_proc: p_starttime (a timeval: 8-byte
// seconds, 4-byte microseconds, padding), two pointers, p_flag, then p_stat
// at 36 and p_pid at 40. The offsets match golang.org/x/sys/unix's
// KinfoProc; this package uses the standard library only.
const (
	kinfoProcSize      = 648
	kinfoStartSecOff   = 0
	kinfoStartUsecOff  = 8
	kinfoStatOff       = 36
	kinfoPIDOff        = 40
	kinfoStatZombie    = 5 // SZOMB in sys/proc.h
	kinfoMinReadLength = kinfoPIDOff + 4
)

// parseKinfoProc reads the answer to sysctl kern.proc.pid.PID. The kernel
// answers a pid that does not exist with zero bytes, not an error; a zombie
// has p_stat SZOMB. The start time is the identity.
func parseKinfoProc(b []byte, pid int) probe {
	if len(b) == 0 {
		return probe{state: livenessGone}
	}
	if len(b) < kinfoMinReadLength {
		return probe{}
	}
	if got := int32(binary.LittleEndian.Uint32(b[kinfoPIDOff:])); int(got) != pid {
		return probe{}
	}
	if b[kinfoStatOff] == kinfoStatZombie {
		return probe{state: livenessGone}
	}
	sec := binary.LittleEndian.Uint64(b[kinfoStartSecOff:])
	usec := uint64(binary.LittleEndian.Uint32(b[kinfoStartUsecOff:]))
	return probe{state: livenessRunning, ident: sec*1_000_000 + usec}
}
