//go:build unix

package codex

import (
	"path/filepath"
	"slices"
	"syscall"

	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// ReapOrphan stops an orphaned Codex process an earlier run of the app lost.
func (Agent) ReapOrphan(pid int) (bool, error) { return ReapOrphan(pid) }

// ReapOrphan stops the `codex app-server` pid that an earlier run of the
// app launched and lost when it died, so a resumed thread does not run next
// to it. It acts only on a process group leader whose command line is a
// codex program running app-server (the npm wrapper, `node …/codex.js
// app-server`, or the native binary), so a reused pid is left alone. SIGTERM
// to the group, then SIGKILL after a grace; commands Codex runs in
// pseudo-terminals of their own are found through /proc and stopped with it.
func ReapOrphan(pid int) (bool, error) {
	return proctree.ReapGroupLeader(pid, "codex", isCodexAppServer)
}

// isCodexAppServer reports whether a command line runs a codex program
// with the app server's arguments.
func isCodexAppServer(args []string) bool {
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

// isManagedCodex reports whether pid leads its process group and runs a
// codex program with the app server's arguments.
func isManagedCodex(pid int) bool {
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		return false
	}
	args, ok := commandArgs(pid)
	return ok && isCodexAppServer(args)
}

// The helpers the tests use, from proctree.
var (
	commandArgs  = proctree.CommandArgs
	processAlive = proctree.Alive
	waitGone     = proctree.WaitGone
)
