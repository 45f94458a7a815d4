//go:build windows

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// killSelf ends the process at once, the nearest Windows has to SIGKILL.
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
}

// detach starts cmd in a process group of its own.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
