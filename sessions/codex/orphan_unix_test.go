//go:build unix

package codex

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// startSleeper runs a program called name (a copy of sh) with args, in its
// own process group when group is set.
func startSleeper(name string, group bool, args ...string) func(t *testing.T) *exec.Cmd {
	return func(t *testing.T) *exec.Cmd {
		sh, err := exec.LookPath("sh")
		if err != nil {
			t.Skipf("no sh on PATH to run the fake CLIs: %v", err)
		}
		bin := filepath.Join(t.TempDir(), name)
		if err := os.Symlink(sh, bin); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, append([]string{"-c", "sleep 30", name}, args...)...)
		cmd.Args[0] = bin
		return agenttest.StartLookalike(t, cmd, group, func(args []string) bool { return len(args) > 0 && strings.HasSuffix(args[0], name) })
	}
}

func TestReapOrphan(t *testing.T) {
	agenttest.CheckReap(t, ReapOrphan, time.Second, []agenttest.ReapCase{
		{Name: "a codex app-server is stopped", Start: startSleeper("codex", true, "app-server"), Reaped: true},
		{Name: "codex without app-server is left alone", Start: startSleeper("codex", true, "exec"), Reaped: false},
		{Name: "another program with app-server is left alone", Start: startSleeper("other", true, "app-server"), Reaped: false},
		{Name: "a process that leads no group is left alone", Start: startSleeper("codex", false, "app-server"), Reaped: false},
	})
}
