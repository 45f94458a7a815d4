//go:build windows

package procscan

import (
	"strconv"
	"syscall"
	"time"
)

// Values the syscall package does not export.
const (
	processQueryLimitedInformation = 0x1000
	stillActive                    = 259 // STILL_ACTIVE
	errorInvalidParameter          = syscall.Errno(87)
)

// Probe opens the process object by id. OpenProcess refusing the id
// as invalid means no such process; an exit code other than STILL_ACTIVE
// means it exited. STILL_ACTIVE can also be a real exit code, so a
// zero-timeout wait on the handle confirms it still runs. The creation time
// is the Stamp. The app holds a handle to its own child (os.Process), so
// until Wait the id is not reused. Anything refused (access denied) is
// unknown.
func Probe(pid int) (Proc, State) {
	if pid <= 0 {
		return Proc{}, Unknown
	}
	h, err := syscall.OpenProcess(processQueryLimitedInformation|syscall.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		if err == errorInvalidParameter {
			return Proc{PID: pid}, Gone
		}
		return Proc{PID: pid}, Unknown
	}
	defer syscall.CloseHandle(h)
	var code uint32
	if err := syscall.GetExitCodeProcess(h, &code); err != nil {
		return Proc{PID: pid}, Unknown
	}
	if code != stillActive {
		return Proc{PID: pid}, Gone
	}
	ev, err := syscall.WaitForSingleObject(h, 0)
	if err != nil {
		return Proc{PID: pid}, Unknown
	}
	switch ev {
	case syscall.WAIT_OBJECT_0:
		return Proc{PID: pid}, Gone
	case syscall.WAIT_TIMEOUT:
	default:
		return Proc{PID: pid}, Unknown
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return Proc{PID: pid}, Running
	}
	return Proc{PID: pid, Stamp: strconv.FormatInt(created.Nanoseconds(), 10),
		Started: time.Unix(0, created.Nanoseconds())}, Running
}
