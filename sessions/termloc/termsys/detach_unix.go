//go:build !windows

package termsys

import (
	"os/exec"
	"syscall"
)

// detach starts the emulator in a session of its own, so closing the
// caller's terminal (the CLI's) does not close the window it opened.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
