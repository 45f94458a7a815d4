//go:build windows

package claude

import "syscall"

// Values the syscall package does not export.
const (
	processQueryLimitedInformation = 0x1000
	stillActive                    = 259 // STILL_ACTIVE
	errorInvalidParameter          = syscall.Errno(87)
)

// probeProcess opens the process object by id. OpenProcess refusing the id
// as invalid means no such process; an exit code other than STILL_ACTIVE
// means it exited. STILL_ACTIVE can also be a real exit code, so a
// zero-timeout wait on the handle confirms it still runs. The creation time
// is the identity. The app holds a handle to its own child (os.Process), so
// until Wait the id is not reused. Anything refused (access denied) is
// unknown.
func probeProcess(pid int) probe {
	if pid <= 0 {
		return probe{}
	}
	h, err := syscall.OpenProcess(processQueryLimitedInformation|syscall.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		if err == errorInvalidParameter {
			return probe{state: livenessGone}
		}
		return probe{}
	}
	defer syscall.CloseHandle(h)
	var code uint32
	if err := syscall.GetExitCodeProcess(h, &code); err != nil {
		return probe{}
	}
	if code != stillActive {
		return probe{state: livenessGone}
	}
	ev, err := syscall.WaitForSingleObject(h, 0)
	if err != nil {
		return probe{}
	}
	switch ev {
	case syscall.WAIT_OBJECT_0:
		return probe{state: livenessGone}
	case syscall.WAIT_TIMEOUT:
	default:
		return probe{}
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return probe{state: livenessRunning}
	}
	return probe{state: livenessRunning, ident: uint64(created.Nanoseconds())}
}
