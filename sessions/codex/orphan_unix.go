//go:build unix

package codex

import (
	"slices"

	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// ReapOrphan stops the `codex app-server` pid that an earlier run of the
// app launched and lost when it died, so a resumed thread does not run next
// to it. It acts only on a process group leader whose command line is a
// codex program running app-server (the npm wrapper, `node …/codex.js
// app-server`, or the native binary), so a reused pid is left alone. SIGTERM
// to the group, then SIGKILL after a grace; commands Codex runs in
// pseudo-terminals of their own are found through /proc and stopped with it
// (proctree.ReapGroup).
func ReapOrphan(pid int, stamp string) (bool, error) {
	return proctree.ReapGroup(pid, stamp, "codex", isManagedCodex)
}

// isManagedCodex reports whether a command line is a codex program with the
// app server's arguments.
func isManagedCodex(args []string) bool {
	return proctree.RunsProgram(args, slices.Index(args, Args()[0]), "codex", "codex.js")
}
