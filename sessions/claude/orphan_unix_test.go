//go:build unix

package claude

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// startSleeper starts `sh -c 'sleep 30'` with extra arguments (which show
// in its command line), in its own process group when group is set.
func startSleeper(t *testing.T, group bool, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", "sleep 30", "claude"}, args...)...)
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
	// Wait until the command line is the shell's (not the forked test binary's).
	deadline := time.Now().Add(5 * time.Second)
	for {
		if line, ok := commandLine(cmd.Process.Pid); ok && strings.HasPrefix(line, "sh ") {
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
	launch := Args(LaunchOptions{ResumeID: "abc"})

	t.Run("a managed claude is stopped", func(t *testing.T) {
		cmd := startSleeper(t, true, launch...)
		stopped, err := ReapOrphan(cmd.Process.Pid)
		if err != nil || !stopped {
			t.Fatalf("ReapOrphan = %v, %v; want stopped", stopped, err)
		}
		if !proctree.WaitGone(cmd.Process.Pid, time.Second, processAlive) {
			t.Error("the process still runs")
		}
	})
	t.Run("another program is left alone", func(t *testing.T) {
		cmd := startSleeper(t, true, "--verbose")
		if stopped, err := ReapOrphan(cmd.Process.Pid); stopped || err != nil {
			t.Errorf("ReapOrphan = %v, %v; want left alone", stopped, err)
		}
		if !processAlive(cmd.Process.Pid) {
			t.Error("a process without the launch flags was stopped")
		}
	})
	t.Run("a process that leads no group is left alone", func(t *testing.T) {
		cmd := startSleeper(t, false, launch...)
		if stopped, err := ReapOrphan(cmd.Process.Pid); stopped || err != nil {
			t.Errorf("ReapOrphan = %v, %v; want left alone", stopped, err)
		}
		if !processAlive(cmd.Process.Pid) {
			t.Error("a process in the test's own group was stopped")
		}
	})
	t.Run("a gone process", func(t *testing.T) {
		if stopped, err := ReapOrphan(1 << 22); stopped || err != nil {
			t.Errorf("ReapOrphan = %v, %v", stopped, err)
		}
	})
}
