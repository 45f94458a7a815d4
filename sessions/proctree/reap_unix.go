//go:build unix

package proctree

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The grace an orphan gets to exit after SIGTERM before SIGKILL, and the
// bound on the wait after SIGKILL.
const (
	reapTermGrace = 3 * time.Second
	reapKillWait  = 2 * time.Second
)

// ReapGroup stops the agent process pid that an earlier run of the app
// launched and lost when it died, so a resumed session does not run next
// to it. It acts only on a live process group leader whose arguments match
// accepts (the adapter's own launch line), so a reused pid is left alone:
// SIGTERM to the tree, then SIGKILL after a grace. It reports whether it
// stopped a process; what names the agent in errors.
func ReapGroup(pid int, what string, matches func(args []string) bool) (bool, error) {
	if pid <= 0 || !Alive(pid) {
		return false, nil
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		return false, nil
	}
	if args, ok := CommandArgs(pid); !ok || !matches(args) {
		return false, nil
	}
	if err := SignalTree(pid, syscall.SIGTERM); err != nil {
		if err == syscall.ESRCH {
			return false, nil
		}
		return false, fmt.Errorf("stopping orphaned %s %d: %w", what, pid, err)
	}
	if WaitGone(pid, reapTermGrace) {
		return true, nil
	}
	_ = SignalTree(pid, syscall.SIGKILL)
	if WaitGone(pid, reapKillWait) {
		return true, nil
	}
	return true, fmt.Errorf("orphaned %s %d survived SIGKILL", what, pid)
}

// CommandArgs returns pid's arguments: from /proc on Linux, from ps (split
// on spaces) elsewhere.
func CommandArgs(pid int) ([]string, bool) {
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil || len(b) == 0 {
			return nil, false
		}
		return strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00"), true
	}
	out, err := exec.Command("ps", "-o", "args=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return nil, false
	}
	return strings.Fields(string(out)), true
}

// Alive reports whether pid runs; a zombie does not.
func Alive(pid int) bool {
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			return b[i+2] != 'Z' && b[i+2] != 'X'
		}
	}
	return syscall.Kill(pid, 0) == nil
}

// WaitGone waits up to limit for pid to be gone.
func WaitGone(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for Alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
