//go:build windows

package proctree

import (
	"os"
	"os/exec"
	"syscall"
)

// SetGroup starts cmd's process in a new process group, so a console
// interrupt meant for the app does not reach it.
func SetGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// Signal: Windows has no process-group signals; an interrupt is sent as
// is, anything else kills.
func Signal(p *os.Process, sig os.Signal) error {
	if sig == os.Interrupt {
		return p.Signal(sig)
	}
	return p.Kill()
}

// ExitStatus is the process's exit code (-1 when it has not ended);
// Windows names no signal.
func ExitStatus(ps *os.ProcessState) (code int, signal string) {
	if ps == nil {
		return -1, ""
	}
	return ps.ExitCode(), ""
}
