//go:build unix

package opencode

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// startLookalike starts `sh DIR/NAME args…` (a script that sleeps) in a
// process group of its own, or in the test's group.
func startLookalike(name string, group bool, args ...string) func(t *testing.T) *exec.Cmd {
	return func(t *testing.T) *exec.Cmd {
		script := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(script, []byte("sleep 600\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("/bin/sh", append([]string{script}, args...)...)
		return agenttest.StartLookalike(t, cmd, group, func(args []string) bool { return slices.Contains(args, script) })
	}
}

// TestReapOrphan: only a group leader running an opencode program with
// this adapter's serve arguments is stopped, with what it runs.
func TestReapOrphan(t *testing.T) {
	agenttest.CheckReap(t, Agent{}.ReapOrphan, 0, []agenttest.ReapCase{
		{Name: "our server", Start: startLookalike("opencode", true, Args()...), Reaped: true},
		{Name: "a server the user started on a port", Start: startLookalike("opencode", true, "serve", "--port", "4096"), Reaped: false},
		{Name: "the TUI", Start: startLookalike("opencode", true), Reaped: false},
		{Name: "another program with the same arguments", Start: startLookalike("sleepy", true, Args()...), Reaped: false},
		{Name: "not a group leader", Start: startLookalike("opencode", false, Args()...), Reaped: false},
	})
}
