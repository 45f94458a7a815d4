//go:build unix

package copilot

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// setProcessGroup puts a turn's process in a group of its own: the npm
// `copilot` is a Node wrapper that runs the native binary as its child, and
// a signal must reach both.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals the turn's whole process group; terminating signals
// also reach the tools that left it.
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

// interruptGroup sends SIGINT to the group: the wrapper alone would die and
// leave the native binary running (measured on 1.0.102).
func interruptGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGINT) }

func terminating(sig os.Signal) bool {
	s, ok := sig.(syscall.Signal)
	return ok && (s == syscall.SIGTERM || s == syscall.SIGKILL)
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

// processAlive probes pid: running and not a zombie. Known is false when
// /proc cannot tell (not Linux).
func processAlive(pid int) (alive, known bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if os.IsNotExist(err) {
			return false, true
		}
		return false, false
	}
	// The state follows the command's closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false, false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X', true
}
