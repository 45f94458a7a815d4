package agentkit

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/pipeio"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// StderrKeep is how much of an agent's stderr is kept, in memory only, for
// diagnostics.
const StderrKeep = 8 << 10

// Spec is how to start one agent process.
type Spec struct {
	// Agent names the agent in errors ("codex").
	Agent string
	// Path is the resolved executable (Command.LookPath).
	Path string
	Args []string
	Cwd  string
	// Env is added to the inherited environment.
	Env []string
	// Stdin gives the process a pipe whose writes take WriteTimeout;
	// without it stdin is the null device.
	Stdin        bool
	WriteTimeout time.Duration
	// Stderr collects stderr (nil: a new ring of StderrKeep bytes); a
	// session of several processes (Copilot's turns) shares one.
	Stderr *pipeio.Ring
}

// Child is one started agent process: in a process group of its own, so
// that a terminating signal reaches the tools it runs, with its stdout to
// read, its stdin to write, the tail of its stderr and its liveness.
type Child struct {
	Cmd *exec.Cmd
	// Stdout is the process's standard output, to decode until it ends.
	Stdout io.ReadCloser
	// Input is stdin (nil unless Spec.Stdin).
	Input  *pipeio.Input
	Stderr *pipeio.Ring
	live   *Liveness
}

// AppHomeEnv is the app's data-directory variable (storage.EnvHome, which
// this package may not import): an agent is not given it. Its tools are the
// user's programs run on a model's say; where the app keeps its socket and
// its database is none of theirs (the hooks name their socket themselves).
const AppHomeEnv = "SESSION_SUPERVISOR_HOME"

// agentEnviron is the app's environment as an agent inherits it: all of it
// but the app's own data directory.
func agentEnviron(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, AppHomeEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Start starts the process described by spec.
func Start(spec Spec) (*Child, error) {
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Cwd
	cmd.Env = append(agentEnviron(os.Environ()), spec.Env...)
	proctree.SetGroup(cmd)
	c := &Child{Cmd: cmd, Stderr: spec.Stderr}
	if c.Stderr == nil {
		c.Stderr = &pipeio.Ring{Max: StderrKeep}
	}
	cmd.Stderr = c.Stderr
	// stdin is the write end of an os.Pipe (not cmd.StdinPipe), because
	// only an *os.File pipe takes a write deadline.
	var stdinR, stdinW *os.File
	if spec.Stdin {
		var err error
		if stdinR, stdinW, err = os.Pipe(); err != nil {
			return nil, fmt.Errorf("creating stdin for %s: %w", spec.Agent, err)
		}
		cmd.Stdin = stdinR
	}
	closeStdin := func() {
		if spec.Stdin {
			stdinR.Close()
			stdinW.Close()
		}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		closeStdin()
		return nil, fmt.Errorf("creating stdout for %s: %w", spec.Agent, err)
	}
	if err := cmd.Start(); err != nil {
		closeStdin()
		return nil, fmt.Errorf("starting %s in %s: %w", spec.Path, spec.Cwd, err)
	}
	if spec.Stdin {
		stdinR.Close() // the child holds its own copy
		c.Input = pipeio.NewInput(stdinW, spec.WriteTimeout, spec.Agent)
	}
	c.Stdout = stdout
	c.live = NewLiveness(cmd.Process.Pid)
	return c, nil
}

// PID is the process id (also its process group id).
func (c *Child) PID() int { return c.Cmd.Process.Pid }

// StderrTail is the last few KB of stderr (diagnostics only; never persisted).
func (c *Child) StderrTail() string { return c.Stderr.String() }

// Signal signals the process group (a terminating signal, its whole tree:
// proctree.Signal).
func (c *Child) Signal(sig os.Signal) error { return proctree.Signal(c.Cmd.Process, sig) }

// Alive reports whether the process still runs (Liveness.Alive).
func (c *Child) Alive() (alive, known bool) { return c.live.Alive() }

// Wait waits for the process (after its stdout ended) and reports its exit
// code, or the signal that killed it; stdin is closed then, so a write
// after it fails at once.
func (c *Child) Wait() (int, string, error) {
	code, sig, err := proctree.Wait(c.Cmd)
	if c.Input != nil {
		_ = c.Input.Close()
	}
	return code, sig, err
}
