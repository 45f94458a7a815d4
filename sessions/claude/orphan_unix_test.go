//go:build unix

package claude

import (
	"os/exec"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// startSleeper starts `sh -c 'sleep 30'` with extra arguments (which show
// in its command line), in its own process group when group is set.
func startSleeper(group bool, args ...string) func(t *testing.T) *exec.Cmd {
	return func(t *testing.T) *exec.Cmd {
		cmd := exec.Command("sh", append([]string{"-c", "sleep 30", "claude"}, args...)...)
		// Ready once the command line is the shell's (not the forked test
		// binary's).
		return agenttest.StartLookalike(t, cmd, group, func(args []string) bool { return len(args) > 1 && args[0] == "sh" })
	}
}

func TestReapOrphan(t *testing.T) {
	launch := Args(LaunchOptions{ResumeID: "abc"})
	agenttest.CheckReap(t, ReapOrphan, time.Second, []agenttest.ReapCase{
		{Name: "a managed claude is stopped", Start: startSleeper(true, launch...), Reaped: true},
		{Name: "another program is left alone", Start: startSleeper(true, "--verbose"), Reaped: false},
		{Name: "a process that leads no group is left alone", Start: startSleeper(false, launch...), Reaped: false},
	})
}
