//go:build unix

package copilot

import (
	"os"
	"syscall"

	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// signalGroup signals the turn's whole process group (agentkit.Start put it
// in one of its own: the npm `copilot` is a Node wrapper that runs the
// native binary as its child, and a signal must reach both); terminating
// signals also reach the tools that left it. (On Windows a signal goes to
// the process as is.)
func signalGroup(p *os.Process, sig os.Signal) error { return proctree.Signal(p, sig) }

// interruptGroup sends SIGINT to the group: the wrapper alone would die and
// leave the native binary running (measured on 1.0.102).
func interruptGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGINT) }

func terminating(sig os.Signal) bool { return proctree.Terminating(sig) }
