//go:build unix

package codex

import (
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startSleeper runs a program called name (a copy of sh) with args, in its
// own process group when group is set.
func startSleeper(t *testing.T, name string, group bool, args ...string) *exec.Cmd {
	t.Helper()
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
	if group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		if group {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		<-done
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		if args, ok := procscan.Cmdline(cmd.Process.Pid); ok && strings.HasSuffix(args[0], name) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sleeper never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd
}

func TestReapOrphan(t *testing.T) {
	t.Run("a codex app-server is stopped", func(t *testing.T) {
		cmd := startSleeper(t, "codex", true, "app-server")
		stopped, err := ReapOrphan(cmd.Process.Pid)
		if err != nil || !stopped {
			t.Fatalf("ReapOrphan = %v, %v; want stopped", stopped, err)
		}
		if !proctree.WaitGone(cmd.Process.Pid, time.Second, proctree.Alive) {
			t.Error("the process still runs")
		}
	})
	t.Run("codex without app-server is left alone", func(t *testing.T) {
		cmd := startSleeper(t, "codex", true, "exec")
		if stopped, err := ReapOrphan(cmd.Process.Pid); stopped || err != nil {
			t.Errorf("ReapOrphan = %v, %v; want left alone", stopped, err)
		}
	})
	t.Run("another program with app-server is left alone", func(t *testing.T) {
		cmd := startSleeper(t, "other", true, "app-server")
		if stopped, err := ReapOrphan(cmd.Process.Pid); stopped || err != nil {
			t.Errorf("ReapOrphan = %v, %v; want left alone", stopped, err)
		}
	})
	t.Run("a process that leads no group is left alone", func(t *testing.T) {
		cmd := startSleeper(t, "codex", false, "app-server")
		if stopped, err := ReapOrphan(cmd.Process.Pid); stopped || err != nil {
			t.Errorf("ReapOrphan = %v, %v; want left alone", stopped, err)
		}
		if !proctree.Alive(cmd.Process.Pid) {
			t.Error("a process in the test's own group was stopped")
		}
	})
	t.Run("a gone process", func(t *testing.T) {
		if stopped, err := ReapOrphan(1 << 22); stopped || err != nil {
			t.Errorf("ReapOrphan = %v, %v", stopped, err)
		}
	})
}
