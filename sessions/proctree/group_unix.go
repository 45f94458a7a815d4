//go:build unix

package proctree

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// SetGroup starts cmd's process as the leader of a process group of its
// own, so that Signal reaches the tools it runs and the app's own group is
// never signalled with it.
func SetGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// Signal signals p's whole process group (p leads it: SetGroup). A
// terminating signal (Terminating) also reaches the tools that left the
// group (Claude Code starts each Bash command in a session of its own,
// Codex runs commands in pseudo-terminals), so a hung tool does not outlive
// the stall escalation.
func Signal(p *os.Process, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return p.Signal(sig)
	}
	if Terminating(s) {
		return SignalTree(p.Pid, s)
	}
	return syscall.Kill(-p.Pid, s)
}

// Terminating reports whether sig ends a process that does not handle it
// (SIGTERM, SIGKILL): the signals that also reach the tree.
func Terminating(sig os.Signal) bool {
	s, ok := sig.(syscall.Signal)
	return ok && (s == syscall.SIGTERM || s == syscall.SIGKILL)
}

// ExitStatus is how a process ended: its exit code, or -1 and the name of
// the signal that killed it (-1 and "" when it has not ended).
func ExitStatus(ps *os.ProcessState) (code int, signal string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return ps.ExitCode(), ""
}

// How long an orphan gets to exit after SIGTERM before SIGKILL, and how
// long its SIGKILL is awaited.
const (
	orphanTermGrace = 3 * time.Second
	orphanKillWait  = 2 * time.Second
)

// Reap stops an agent process an earlier run of the app launched and lost
// (its pipes went with that app), with its tree: SIGTERM, then SIGKILL
// after a grace. The caller has made sure pid is still that process (a
// group leader with the agent's command line), so a reused pid is left
// alone; alive is its liveness probe (a zombie is not alive; a probe that
// cannot tell says alive, so only a known exit counts). agent names the
// agent in the errors. It reports whether it stopped a process.
func Reap(agent string, pid int, alive func(pid int) bool) (bool, error) {
	if err := SignalTree(pid, syscall.SIGTERM); err != nil {
		if err == syscall.ESRCH {
			return false, nil
		}
		return false, fmt.Errorf("stopping orphaned %s %d: %w", agent, pid, err)
	}
	if WaitGone(pid, orphanTermGrace, alive) {
		return true, nil
	}
	_ = SignalTree(pid, syscall.SIGKILL)
	if WaitGone(pid, orphanKillWait, alive) {
		return true, nil
	}
	return true, fmt.Errorf("orphaned %s %d survived SIGKILL", agent, pid)
}

// WaitGone polls alive until pid is gone (true) or limit passes (false).
func WaitGone(pid int, limit time.Duration, alive func(pid int) bool) bool {
	deadline := time.Now().Add(limit)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
