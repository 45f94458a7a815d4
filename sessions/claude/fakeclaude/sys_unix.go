//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// killSelf dies by SIGKILL, as a crashed agent does.
func killSelf() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }

// detach starts cmd in a session of its own, as Claude Code does with its
// Bash commands.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
