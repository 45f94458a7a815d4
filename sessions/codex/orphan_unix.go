//go:build unix

package codex

import (
	"path/filepath"
	"slices"
	"syscall"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
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
func commandArgs(pid int) ([]string, bool) { return procscan.Cmdline(pid) }

// processAlive reports whether pid runs; a zombie does not. Where the
// process table cannot tell, kill(pid, 0) decides.
func processAlive(pid int) bool {
	switch _, st := procscan.Probe(pid); st {
	case procscan.Running:
		return true
	case procscan.Gone:
		return false
	}
	return syscall.Kill(pid, 0) == nil
}
