//go:build unix

package proctree

import (
	"os"
	"os/exec"
	"syscall"
)

// SetGroup makes cmd start in a process group of its own, so the agent and
// everything it runs can be signalled together.
func SetGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// SignalGroup signals the whole process group led by p, reaching the tools
// the agent runs. Terminating signals also reach the tools that left the
// group (agent CLIs start commands in sessions or pseudo-terminals of their
// own), so a hung tool does not outlive the stall escalation.
func SignalGroup(p *os.Process, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return p.Signal(sig)
	}
	if s == syscall.SIGTERM || s == syscall.SIGKILL {
		return SignalTree(p.Pid, s)
	}
	return syscall.Kill(-p.Pid, s)
}

// ExitStatus is a finished process's exit code, or -1 and the name of the
// signal that killed it.
func ExitStatus(ps *os.ProcessState) (int, string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return ps.ExitCode(), ""
}
