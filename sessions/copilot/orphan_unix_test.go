//go:build linux

package copilot

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// fakeTurn starts a stand-in named copilot with args as its command line,
// in a process group of its own when leader is set.
func fakeTurn(t *testing.T, leader bool, args ...string) *exec.Cmd {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "copilot")
	// A loop, not exec sleep: the script's own command line must stay.
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nwhile :; do sleep 1; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	if leader {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Process.Kill(); <-done })
	return cmd
}

func TestReapOrphan(t *testing.T) {
	turn := Args("0cb916db-26aa-40f2-86b5-1ba81b225fd2", "bypassPermissions")
	tests := []struct {
		name   string
		leader bool
		args   []string
		reaped bool
	}{
		{"a lost turn", true, turn, true},
		{"not a group leader", false, turn, false},
		{"another copilot (interactive)", true, []string{"--resume"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := fakeTurn(t, tt.leader, tt.args...)
			reaped, err := ReapOrphan(cmd.Process.Pid)
			if err != nil || reaped != tt.reaped {
				t.Fatalf("ReapOrphan = %v, %v; want %v", reaped, err, tt.reaped)
			}
			alive, _ := processAlive(cmd.Process.Pid)
			if alive == tt.reaped {
				t.Errorf("after ReapOrphan alive = %v", alive)
			}
		})
	}
	if reaped, err := ReapOrphan(0); reaped || err != nil {
		t.Errorf("pid 0: %v %v", reaped, err)
	}
}
