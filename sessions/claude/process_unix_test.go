//go:build unix

package claude

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A terminating signal reaches a tool that left the agent's process group
// (the real CLI runs Bash commands with setsid), so a hung tool does not
// outlive the stall escalation.
func TestSignalReachesToolsOutsideTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "tool.pid")
	p := startFake(t, `{"turns":[[{"spawn_setsid":"`+pidFile+`"},{"sleep_ms":60000}]]}`)
	if err := p.SendPrompt("hello"); err != nil {
		t.Fatal(err)
	}
	var tool int
	deadline := time.Now().Add(10 * time.Second)
	for tool == 0 {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
			tool, _ = strconv.Atoi(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatal("the fake never started its tool")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { _ = syscall.Kill(tool, syscall.SIGKILL) })
	if pgid, err := syscall.Getpgid(tool); err != nil || pgid == p.PID() {
		t.Fatalf("the tool should be outside the agent's group: pgid %d, %v", pgid, err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range p.Events() {
	}
	if _, sig, _ := p.Wait(); sig == "" {
		t.Error("the agent was not terminated")
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		// Gone, or a zombie of init: either way no longer running.
		if err := syscall.Kill(tool, 0); err != nil {
			break
		}
		if state, _ := os.ReadFile("/proc/" + strconv.Itoa(tool) + "/stat"); strings.Contains(string(state), ") Z") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tool outside the group survived SIGTERM")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
