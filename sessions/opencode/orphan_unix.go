//go:build unix

package opencode

import (
	"slices"

	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// ReapOrphan stops the `opencode serve` pid that an earlier run of the app
// launched and lost when it died: nobody holds its password any more, and a
// resumed session must not run next to it. Only a process group leader
// running an opencode program with exactly this adapter's serve arguments
// is stopped (so a reused pid, or a server the user started, is left alone),
// with the commands it runs.
func ReapOrphan(pid int, stamp string) (bool, error) {
	return proctree.ReapGroup(pid, stamp, "opencode", isManagedServe)
}

// isManagedServe: the command line ends with exactly Args(), after an
// opencode program (the native binary, or its npm bin link, maybe run by a
// shell or an interpreter).
func isManagedServe(args []string) bool {
	want := Args()
	i := len(args) - len(want)
	return i >= 1 && slices.Equal(args[i:], want) && proctree.RunsProgram(args, i, "opencode", "opencode.exe")
}
