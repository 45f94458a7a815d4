package claude

import (
	"os"
	"strconv"
)

// probeProcess reads /proc/PID/stat: a missing entry or a zombie is gone;
// the start time (field 22, clock ticks since boot) is the identity.
func probeProcess(pid int) probe {
	if pid <= 0 {
		return probe{}
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if os.IsNotExist(err) {
			return probe{state: livenessGone}
		}
		return probe{}
	}
	return parseProcStat(b)
}
