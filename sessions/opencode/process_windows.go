//go:build windows

package opencode

import (
	"os"
	"os/exec"
	"syscall"
)

// terminate: Windows has no SIGTERM; the server is killed.
var terminate = os.Kill

func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// signalGroup: Windows has no process-group signals; terminating kills.
func signalGroup(p *os.Process, sig os.Signal) error {
	if sig == os.Interrupt {
		return p.Signal(sig)
	}
	return p.Kill()
}

func exitStatus(ps *os.ProcessState) (int, string) {
	if ps == nil {
		return -1, ""
	}
	return ps.ExitCode(), ""
}
