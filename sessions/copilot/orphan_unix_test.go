//go:build linux

package copilot

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// fakeTurn starts a stand-in named copilot with args as its command line,
// in a process group of its own when leader is set.
func fakeTurn(leader bool, args ...string) func(t *testing.T) *exec.Cmd {
	return func(t *testing.T) *exec.Cmd {
		bin := filepath.Join(t.TempDir(), "copilot")
		// A loop, not exec sleep: the script's own command line must stay.
		if err := os.WriteFile(bin, []byte("#!/bin/sh\nwhile :; do sleep 1; done\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return agenttest.StartLookalike(t, exec.Command(bin, args...), leader, nil)
	}
}

func TestReapOrphan(t *testing.T) {
	turn := Args("0cb916db-26aa-40f2-86b5-1ba81b225fd2", "bypassPermissions")
	agenttest.CheckReap(t, ReapOrphan, 0, []agenttest.ReapCase{
		{Name: "a lost turn", Start: fakeTurn(true, turn...), Reaped: true},
		{Name: "not a group leader", Start: fakeTurn(false, turn...), Reaped: false},
		{Name: "another copilot (interactive)", Start: fakeTurn(true, "--resume"), Reaped: false},
	})
}
