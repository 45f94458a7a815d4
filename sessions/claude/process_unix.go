//go:build unix

package claude

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals the whole process group, reaching the tools claude
// runs. Terminating signals also reach the tools that left the group
// (Claude Code starts each Bash command in a session of its own), so a
// hung tool does not outlive the stall escalation.
func signalGroup(p *os.Process, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return p.Signal(sig)
	}
	if s == syscall.SIGTERM || s == syscall.SIGKILL {
		return signalTree(p.Pid, s)
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

// exitGrace is how long a dead-but-unreaped process is reported as "don't
// know": the normal exit event, with its exit code, is about to arrive and
// says more than a liveness probe.
const exitGrace = 3 * time.Second

// Alive reports whether the agent process still runs, independently of its
// stdout: an orphaned tool can hold stdout open after the agent died, and
// then no exit event ever comes. On Linux it reads /proc; elsewhere it
// cannot tell.
func (p *Process) Alive() (alive, known bool) {
	if runtime.GOOS != "linux" {
		return false, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID()) + "/stat")
	dead := err != nil
	if err == nil {
		// The state follows the command name, which is in parentheses and
		// may itself contain spaces or parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			dead = b[i+2] == 'Z' || b[i+2] == 'X'
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !dead {
		p.deadSince = time.Time{}
		return true, true
	}
	if p.deadSince.IsZero() {
		p.deadSince = time.Now()
	}
	if time.Since(p.deadSince) < exitGrace {
		return false, false
	}
	return false, true
}
