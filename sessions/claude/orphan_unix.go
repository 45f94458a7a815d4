//go:build unix

package claude

import (
	"strings"
	"syscall"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// ReapOrphan stops the Claude Code process pid that an earlier run of the
// app launched and lost when it died: its stdin and stdout went with that
// app, so nobody can answer, interrupt or even see it any more, and a
// resumed session must not run next to it. It acts only on a process group
// leader whose command line carries this adapter's launch flags (see Args)
// and whose start stamp is stamp (when one was recorded), so a reused pid
// is left alone. It sends SIGTERM to the group, then
// SIGKILL after a grace (proctree.Reap), and reports whether it stopped a
// process. The tools it runs in sessions of their own are found through
// /proc and stopped with it.
func ReapOrphan(pid int, stamp string) (bool, error) {
	if pid <= 0 || !proctree.AliveSince(pid, stamp) || !isManagedClaude(pid) {
		return false, nil
	}
	return proctree.Reap("claude", pid, func(pid int) bool { return proctree.AliveSince(pid, stamp) })
}

// isManagedClaude reports whether pid leads its process group and runs with
// the launch flags of a managed session.
func isManagedClaude(pid int) bool {
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		return false
	}
	cmdline, ok := commandLine(pid)
	return ok && strings.Contains(cmdline+" ", " "+strings.Join(Args(LaunchOptions{}), " ")+" ")
}

// commandLine returns pid's arguments joined by spaces: from /proc on
// Linux, from ps elsewhere (procscan.Cmdline).
func commandLine(pid int) (string, bool) {
	argv, ok := procscan.Cmdline(pid)
	return strings.Join(argv, " "), ok
}
