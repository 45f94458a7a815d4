//go:build unix

package gemini

import (
	"slices"

	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// ReapOrphan stops the `gemini --acp` pid that an earlier run of the app
// launched and lost when it died. It is needed: `gemini --acp` does not
// exit at the end of its input while a turn runs (measured on 0.61.0: a
// stalled turn kept it alive past 20 s after stdin closed), so it would
// work next to the session resumed in a new process. It acts only on a
// process group leader whose command line is a gemini program (the npm
// bin or bundle/gemini.js) run with --acp, so a reused pid is left alone.
func ReapOrphan(pid int, stamp string) (bool, error) {
	return proctree.ReapGroup(pid, stamp, "gemini", isGeminiACP)
}

func isGeminiACP(args []string) bool {
	return proctree.RunsProgram(args, slices.Index(args, "--acp"), "gemini", "gemini.js")
}
