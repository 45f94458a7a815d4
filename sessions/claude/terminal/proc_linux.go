package terminal

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"
)

// probePID reads /proc/PID/stat: gone when missing or a zombie; field 22 is
// the start in clock ticks since boot, turned into a time with the boot
// time from /proc/stat (USER_HZ is 100 on every Linux the CLI runs on).
func probePID(pid int) procInfo {
	if pid <= 0 {
		return procInfo{}
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if os.IsNotExist(err) {
			return procInfo{state: procGone}
		}
		return procInfo{}
	}
	return parseStat(b, bootTime())
}

func parseStat(b []byte, boot time.Time) procInfo {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procInfo{}
	}
	if s := f[0][0]; s == 'Z' || s == 'X' {
		return procInfo{state: procGone}
	}
	p := procInfo{state: procRunning, stamp: string(f[19])}
	if ticks, err := strconv.ParseInt(p.stamp, 10, 64); err == nil && !boot.IsZero() {
		p.started = boot.Add(time.Duration(ticks) * (time.Second / 100))
	}
	return p
}

var bootTime = sync.OnceValue(func() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			if s, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64); err == nil {
				return time.Unix(s, 0)
			}
		}
	}
	return time.Time{}
})
