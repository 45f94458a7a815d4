//go:build unix

package proctree

import (
	"bufio"
	"errors"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// How a real child ended, as Wait reports it: an exit code is an outcome,
// a kill names its signal, and only a failure to wait is an error.
func TestWait(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		code   int
		signal string
	}{
		{"clean exit", "exit 0", 0, ""},
		{"non-zero exit", "exit 3", 3, ""},
		{"killed", "kill -KILL $$", -1, syscall.SIGKILL.String()},
		{"terminated", "kill -TERM $$", -1, syscall.SIGTERM.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", tc.script)
			SetGroup(cmd)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			code, sig, err := Wait(cmd)
			if code != tc.code || sig != tc.signal || err != nil {
				t.Errorf("Wait = %d, %q, %v; want %d, %q, nil", code, sig, err, tc.code, tc.signal)
			}
		})
	}
	// Never started: nothing ended, and waiting failed.
	if code, sig, err := Wait(exec.Command("true")); code != -1 || sig != "" || err == nil {
		t.Errorf("Wait on an unstarted command = %d, %q, %v", code, sig, err)
	}
}

// startGroup runs script in a process group of its own and returns it with
// the pid the script prints first; the group's tree is killed (and reaped,
// unless the test waited) at the end.
func startGroup(t *testing.T, script string) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	SetGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = SignalTree(cmd.Process.Pid, syscall.SIGKILL)
		if cmd.ProcessState == nil {
			_ = cmd.Wait()
		}
	})
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatal(err)
	}
	return cmd, pid
}

// Signal reaches the whole group: a non-terminating signal is sent to the
// group (the shell's child dies of it too), and Terminating names the
// signals that also reach the tree.
func TestSignalGroup(t *testing.T) {
	cmd, child := startGroup(t, "sleep 30 & echo $!; wait")
	if pgid, err := syscall.Getpgid(child); err != nil || pgid != cmd.Process.Pid {
		t.Fatalf("the shell's child %d is in group %d (%v), want the leader's %d", child, pgid, err, cmd.Process.Pid)
	}
	if err := Signal(cmd.Process, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if _, sig, _ := Wait(cmd); sig != syscall.SIGUSR1.String() {
		t.Errorf("the leader ended with %q, want %q", sig, syscall.SIGUSR1)
	}
	// The child, re-parented, is reaped by init once it dies.
	if !WaitGone(child, 5*time.Second, func(pid int) bool { return syscall.Kill(pid, 0) == nil }) {
		t.Error("the group signal did not reach the leader's child")
	}
	for sig, want := range map[syscall.Signal]bool{syscall.SIGTERM: true, syscall.SIGKILL: true, syscall.SIGINT: false, syscall.SIGUSR1: false} {
		if Terminating(sig) != want {
			t.Errorf("Terminating(%v) = %v", sig, !want)
		}
	}
}

// Reap stops a group leader with SIGTERM, one that ignores it with SIGKILL
// after the grace, and leaves a pid that is already gone (checked where
// the group was that one process: a killed group's other members may
// linger until init reaps them).
func TestReap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string
		stopped bool
		signal  string
		alone   bool
	}{
		// Each script says "ready" once its signal handling is in place:
		// a SIGTERM sent before sh ran its trap would stop it, and the
		// case would test nothing but the race.
		{"stops on SIGTERM", "echo ready; exec sleep 30", true, syscall.SIGTERM.String(), true},
		{"ignores SIGTERM", "trap '' TERM; echo ready; sleep 30; sleep 30", true, syscall.SIGKILL.String(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", tc.script)
			SetGroup(cmd)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" || err != nil {
				t.Fatalf("the script said %q (%v), want \"ready\" before it is reaped", line, err)
			}
			type result struct {
				sig string
				err error
			}
			done := make(chan result, 1)
			go func() { _, sig, err := Wait(cmd); done <- result{sig, err} }()
			alive := func(pid int) bool { return syscall.Kill(pid, 0) == nil }
			stopped, err := Reap("test", cmd.Process.Pid, alive)
			if stopped != tc.stopped || err != nil {
				t.Fatalf("Reap = %v, %v; want %v, nil", stopped, err, tc.stopped)
			}
			if r := <-done; r.sig != tc.signal || r.err != nil {
				t.Errorf("the process ended with %q (%v), want %q", r.sig, r.err, tc.signal)
			}
			// Gone now: nothing to stop.
			if !tc.alone {
				return
			}
			if stopped, err := Reap("test", cmd.Process.Pid, alive); stopped || err != nil {
				t.Errorf("Reap of a gone pid = %v, %v; want false, nil", stopped, err)
			}
		})
	}
}

// A reap that cannot stop the process says so, naming the agent.
func TestReapSurvivor(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	SetGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// A probe that never sees it go (the zombie is not reaped here).
	stopped, err := Reap("codex", cmd.Process.Pid, func(int) bool { return true })
	if !stopped || err == nil || !strings.Contains(err.Error(), "orphaned codex") || errors.Is(err, syscall.ESRCH) {
		t.Errorf("Reap = %v, %v; want stopped with an error naming codex", stopped, err)
	}
}

// Descendants walks the parent links down from a process: its child and
// the child's own child (parent links, so also a tool in a session of its
// own, which the group's signals would miss); on Linux only.
func TestDescendants(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the process table is read on Linux only")
	}
	cmd, sleeper := startGroup(t, `sh -c 'sleep 30 & echo $!; wait' & wait`)
	got := Descendants(cmd.Process.Pid)
	if len(got) != 2 || got[1] != sleeper {
		t.Errorf("Descendants = %v, want the inner shell and then its sleep %d", got, sleeper)
	}
	if got := Descendants(sleeper); len(got) != 0 {
		t.Errorf("Descendants of a leaf = %v", got)
	}
}

func TestRunsProgram(t *testing.T) {
	for _, tc := range []struct {
		args []string
		i    int
		want bool
	}{
		{[]string{"/usr/bin/node", "/x/bin/codex.js", "app-server"}, 2, true},
		{[]string{"/x/bin/codex", "app-server"}, 1, true},
		{[]string{"sh", "-c", "codex"}, 2, false}, // "codex" stands at i, not before it
		{[]string{"/x/bin/other", "app-server"}, 1, false},
		{[]string{"app-server"}, 0, false},
		{[]string{"codex"}, -1, false},
	} {
		if got := RunsProgram(tc.args, tc.i, "codex", "codex.js"); got != tc.want {
			t.Errorf("RunsProgram(%q, %d) = %v, want %v", tc.args, tc.i, got, tc.want)
		}
	}
}
