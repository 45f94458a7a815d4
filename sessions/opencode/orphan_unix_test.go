//go:build unix

package opencode

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// startLookalike starts `sh DIR/NAME args…` (a script that sleeps) in a
// process group of its own, or in the test's group.
func startLookalike(t *testing.T, name string, group bool, args ...string) *exec.Cmd {
	t.Helper()
	script := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(script, []byte("sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", append([]string{script}, args...)...)
	if group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range proctree.Descendants(cmd.Process.Pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// Start returns once the exec began, before the kernel has set up the
	// new command line (it reads empty for a moment): an orphan is long
	// past that, so wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if args, ok := procscan.Cmdline(cmd.Process.Pid); ok && slices.Contains(args, script) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lookalike never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd
}

// TestReapOrphan: only a group leader running an opencode program with
// this adapter's serve arguments is stopped, with what it runs.
func TestReapOrphan(t *testing.T) {
	tests := []struct {
		name  string
		prog  string
		group bool
		args  []string
		want  bool
	}{
		{"our server", "opencode", true, Args(), true},
		{"a server the user started on a port", "opencode", true, []string{"serve", "--port", "4096"}, false},
		{"the TUI", "opencode", true, nil, false},
		{"another program with the same arguments", "sleepy", true, Args(), false},
		{"not a group leader", "opencode", false, Args(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := startLookalike(t, tc.prog, tc.group, tc.args...)
			pid := cmd.Process.Pid
			args, _ := procscan.Cmdline(pid)
			got, err := Agent{}.ReapOrphan(pid)
			if err != nil || got != tc.want {
				t.Fatalf("ReapOrphan(%q) = %v, %v; want %v", strings.Join(args, " "), got, err, tc.want)
			}
			if alive := proctree.Alive(pid); alive == tc.want {
				t.Errorf("alive %v after ReapOrphan returned %v", alive, got)
			}
		})
	}
	if got, err := (Agent{}).ReapOrphan(0); got || err != nil {
		t.Errorf("pid 0: %v %v", got, err)
	}
}
