package claude

import (
	"fmt"
	"github.com/session-supervisor/session-supervisor/sessions/pipeio"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// CommandSetting is the setting that names the Claude Code executable; errors
// about a missing binary point the user at it.
const CommandSetting = "agents.claude.command"

// stderrKeep is how much of stderr is kept, in memory only, for diagnostics.
const stderrKeep = 8 << 10

// Process is one running `claude -p` in stream-json mode that the app owns:
// its stdin takes prompts and control messages, its stdout is decoded into
// sessions.Events.
type Process struct {
	cmd    *exec.Cmd
	dec    *Decoder
	events chan sessions.Event
	stderr *pipeio.Ring

	// stdin is the write end of an os.Pipe (not cmd.StdinPipe), because
	// only an *os.File pipe takes a write deadline.
	stdin *pipeio.Input

	mu sync.Mutex // guards deadSince and ident
	// deadSince is when Alive first found the process dead.
	deadSince time.Time
	// ident is the process's start time as Alive first saw it (see judge).
	ident uint64

	reqSeq atomic.Int64
}

// ProcessOptions says how to start one Claude Code process.
type ProcessOptions struct {
	// Command is the executable, from the setting agents.claude.command.
	Command string
	Cwd     string
	// Env is added to the inherited environment.
	Env []string
	// MaxLine bounds one stdout line (0: DefaultMaxLine).
	MaxLine int
	// WriteTimeout bounds one write to stdin (0: none): a Claude Code that
	// stops reading its input fails the write with os.ErrDeadlineExceeded
	// instead of blocking the caller forever.
	WriteTimeout time.Duration
	Launch       LaunchOptions
}

// Start launches Claude Code in opts.Cwd, in its own process group so that
// terminating it reaches the tools it runs, and starts decoding its stdout.
func Start(opts ProcessOptions) (*Process, error) {
	if err := opts.Launch.Validate(); err != nil {
		return nil, err
	}
	command := opts.Command
	if command == "" {
		command = "claude"
	}
	path, err := exec.LookPath(command)
	if err != nil {
		return nil, fmt.Errorf("the Claude Code command %q was not found (install Claude Code, or point the setting %s at it: session-supervisor settings set %s /path/to/claude): %w",
			command, CommandSetting, CommandSetting, err)
	}
	cmd := exec.Command(path, Args(opts.Launch)...)
	cmd.Dir = opts.Cwd
	cmd.Env = append(os.Environ(), opts.Env...)
	proctree.SetGroup(cmd)
	stdinR, stdin, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdin for claude: %w", err)
	}
	cmd.Stdin = stdinR
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdinR.Close()
		stdin.Close()
		return nil, fmt.Errorf("creating stdout for claude: %w", err)
	}
	p := &Process{cmd: cmd, stdin: pipeio.NewInput(stdin, opts.WriteTimeout, "claude"), stderr: &pipeio.Ring{Max: stderrKeep},
		events: make(chan sessions.Event, 64)}
	cmd.Stderr = p.stderr
	err = cmd.Start()
	stdinR.Close() // the child holds its own copy
	if err != nil {
		stdin.Close()
		return nil, fmt.Errorf("starting %s in %s: %w", path, opts.Cwd, err)
	}
	p.dec = NewDecoder(stdout, opts.MaxLine)
	go p.decode()
	return p, nil
}

// decode feeds decoded events to Events until stdout ends.
func (p *Process) decode() {
	defer close(p.events)
	for {
		line, err := p.dec.Next()
		if err != nil {
			return
		}
		for _, ev := range line.Events {
			p.events <- ev
		}
	}
}

// PID is the process id (also its process group id).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Events yields the decoded stream; closed when stdout ends.
func (p *Process) Events() <-chan sessions.Event { return p.events }

// SkippedLines counts malformed, unknown and oversize lines.
func (p *Process) SkippedLines() int { return int(p.dec.Stats().Skipped()) }

// Stats are the decoder's counters.
func (p *Process) Stats() Counters { return p.dec.Stats() }

// StderrTail is the last few KB of stderr (diagnostics only; never persisted).
func (p *Process) StderrTail() string { return p.stderr.String() }

func (p *Process) write(line []byte) error { return p.stdin.WriteLine(line) }

// SendPrompt sends a user message: a new turn, or part of the running one.
func (p *Process) SendPrompt(text string) error { return p.write(UserMessage(text)) }

// Compact runs Claude Code's /compact command, which works as a prompt.
func (p *Process) Compact() error { return p.write(UserMessage("/compact")) }

// Interrupt sends the interrupt control request.
func (p *Process) Interrupt() error {
	return p.write(InterruptRequest("interrupt_" + strconv.FormatInt(p.reqSeq.Add(1), 10)))
}

// AnswerPermission answers a can_use_tool request. Allowing sends the
// original tool input back unchanged, as the protocol requires.
func (p *Process) AnswerPermission(perm sessions.Permission, allow bool, message string) error {
	var input []byte
	if allow {
		input = p.dec.PendingInput(perm.RequestID)
		if input == nil {
			input = []byte("{}")
		}
	}
	return p.write(PermissionResponse(perm.RequestID, allow, message, input))
}

// CloseInput closes stdin: the turn in flight finishes, then claude exits.
func (p *Process) CloseInput() error { return p.stdin.Close() }

// Signal signals the process group (a terminating signal, its whole tree:
// proctree.Signal).
func (p *Process) Signal(sig os.Signal) error { return proctree.Signal(p.cmd.Process, sig) }

// Wait waits for the process (call after Events is closed) and reports its
// exit code, or the signal that killed it.
func (p *Process) Wait() (int, string, error) {
	code, sig, err := proctree.Wait(p.cmd)
	_ = p.CloseInput()
	return code, sig, err
}
