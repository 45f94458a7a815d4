package procscan

import (
	"encoding/binary"
	"strconv"
	"time"
)

// The layout of macOS's struct kinfo_proc (sys/sysctl.h) as far as Probe
// reads it; the same on amd64 and arm64, both little endian. It starts
// with struct extern_proc: p_starttime (a timeval: 8-byte seconds, 4-byte
// microseconds, padding), two pointers, p_flag, then p_stat at 36 and
// p_pid at 40. The offsets match golang.org/x/sys/unix's KinfoProc; this
// package uses the standard library only. The parser builds everywhere so
// its tests run on Linux too.
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
// has p_stat SZOMB. The start time, in microseconds since the epoch, is
// the Stamp.
func parseKinfoProc(b []byte, pid int) (Proc, State) {
	if len(b) == 0 {
		return Proc{PID: pid}, Gone
	}
	if len(b) < kinfoMinReadLength {
		return Proc{PID: pid}, Unknown
	}
	if got := int32(binary.LittleEndian.Uint32(b[kinfoPIDOff:])); int(got) != pid {
		return Proc{PID: pid}, Unknown
	}
	if b[kinfoStatOff] == kinfoStatZombie {
		return Proc{PID: pid}, Gone
	}
	sec := binary.LittleEndian.Uint64(b[kinfoStartSecOff:])
	usec := uint64(binary.LittleEndian.Uint32(b[kinfoStartUsecOff:]))
	return Proc{PID: pid, Stamp: strconv.FormatUint(sec*1_000_000+usec, 10),
		Started: time.Unix(int64(sec), int64(usec)*1000)}, Running
}
