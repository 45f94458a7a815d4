//go:build unix

package codex

import (
	"bytes"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ReapOrphan stops an orphaned Codex process an earlier run of the app lost.
func (Agent) ReapOrphan(pid int) (bool, error) { return ReapOrphan(pid) }

// ReapOrphan stops the `codex app-server` pid that an earlier run of the
// app launched and lost when it died, so a resumed thread does not run next
// to it. It acts only on a process group leader whose command line is a
// codex program running app-server (the npm wrapper, `node …/codex.js
// app-server`, or the native binary), so a reused pid is left alone. SIGTERM
// to the group, then SIGKILL after a grace (proctree.Reap); commands Codex runs in
// pseudo-terminals of their own are found through /proc and stopped with it.
func ReapOrphan(pid int) (bool, error) {
	if pid <= 0 || !processAlive(pid) || !isManagedCodex(pid) {
		return false, nil
	}
	return proctree.Reap("codex", pid, processAlive)
}

// isManagedCodex reports whether pid leads its process group and runs a
// codex program with the app server's arguments.
func isManagedCodex(pid int) bool {
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		return false
	}
	args, ok := commandArgs(pid)
	if !ok {
		return false
	}
	i := slices.Index(args, Args()[0])
	if i < 1 {
		return false
	}
	for _, a := range args[:i] {
		if base := filepath.Base(a); base == "codex" || base == "codex.js" {
			return true
		}
	}
	return false
}

// commandArgs returns pid's arguments: from /proc on Linux, from ps (split
// on spaces) elsewhere.
func commandArgs(pid int) ([]string, bool) {
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

// processAlive reports whether pid runs; a zombie does not.
func processAlive(pid int) bool {
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
