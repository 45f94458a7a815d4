//go:build unix

package copilot

import (
	"slices"
	"strings"
	"syscall"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// ReapOrphan stops a turn's process that an earlier run of the app lost
// (the app was killed mid-turn), so the resumed session does not run
// beside it on the same Copilot session. It stops pid and its tree only if
// it still is one of the app's turn processes: a process-group leader (the
// app starts every turn in a group of its own) whose command line is
// copilot's prompt mode as Args builds it, with the start stamp the
// session recorded (when it did). Anything else, including an unrelated
// process that reused the pid, is left alone.
func ReapOrphan(pid int, stamp string) (bool, error) {
	if pid <= 0 || !isManagedTurn(pid) || !proctree.StartedAt(pid, stamp) {
		return false, nil
	}
	// Only a known exit counts as gone: where the probe cannot tell, the
	// grace runs out and SIGKILL follows.
	return proctree.Reap("copilot", pid, func(pid int) bool {
		alive, known := processAlive(pid)
		return (alive || !known) && proctree.StartedAt(pid, stamp)
	})
}

func isManagedTurn(pid int) bool {
	if alive, known := processAlive(pid); !alive || !known {
		return false
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		return false
	}
	args, ok := procscan.Cmdline(pid)
	if !ok {
		return false
	}
	i := slices.Index(args, "--output-format")
	if i < 1 || i+2 >= len(args) || args[i+1] != "json" || !strings.HasPrefix(args[i+2], "--session-id=") {
		return false
	}
	return proctree.RunsProgram(args, i, "copilot")
}
