//go:build unix

package toyagent

import (
	"path/filepath"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

var _ sessions.OrphanReaper = Agent{}

// ReapOrphan stops the `toy --stream` pid an earlier run of the app lost:
// the CLI finishes its turn in flight when its input ends, and a stalled
// turn never does. It acts only on a group leader with the toy's command
// line, so a reused pid is left alone.
func ReapOrphan(pid int, stamp string) (bool, error) {
	return proctree.ReapGroup(pid, stamp, "toy", isToy)
}

// isToy reports whether a command line is the toy's (Args after a program
// named toy).
func isToy(args []string) bool {
	return len(args) > 1 && filepath.Base(args[0]) == agentInfo.Command && args[1] == FlagStream
}
