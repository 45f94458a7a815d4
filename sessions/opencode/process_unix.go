//go:build unix

package opencode

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// terminate is the polite stop.
var terminate os.Signal = syscall.SIGTERM

func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals the whole process group, reaching the commands the
// server runs. Terminating signals also reach the tools that left the
// group, so a hung tool does not outlive the stall escalation.
func signalGroup(p *os.Process, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return p.Signal(sig)
	}
	if s == syscall.SIGTERM || s == syscall.SIGKILL {
		return proctree.SignalTree(p.Pid, s)
	}
	return syscall.Kill(-p.Pid, s)
}

func exitStatus(ps *os.ProcessState) (int, string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return ps.ExitCode(), ""
}
