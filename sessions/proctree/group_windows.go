//go:build windows

package proctree

import (
	"os"
	"os/exec"
	"syscall"
)

// SetGroup makes cmd start in a process group of its own.
func SetGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// SignalGroup: Windows has no process-group signals; terminating kills.
func SignalGroup(p *os.Process, sig os.Signal) error {
	if sig == os.Interrupt {
		return p.Signal(sig)
	}
	return p.Kill()
}

// ExitStatus is a finished process's exit code (Windows reports no signal).
func ExitStatus(ps *os.ProcessState) (int, string) {
	if ps == nil {
		return -1, ""
	}
	return ps.ExitCode(), ""
}
