package claude

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// CommandSetting is the setting that names the Claude Code executable; errors
// about a missing binary point the user at it.
const CommandSetting = "agents.claude.command"

// agentInfo names Claude Code to the registry (Agent) and says how its command is
// found.
var agentInfo = agentkit.Info{Name: "claude", Display: "Claude Code", Command: "claude",
	Install: "npm install -g @anthropic-ai/claude-code", Setting: CommandSetting, TerminalResume: TerminalResume}

// TerminalResume: `claude --resume ID` keeps the session id (no
// --fork-session), measured on 2.1.328 (e2e/terminal_handover_test.go).
func TerminalResume(id string) []string { return []string{"--resume", id} }

// Process is one running `claude -p` in stream-json mode that the app owns:
// its stdin takes prompts and control messages, its stdout is decoded into
// sessions.Events.
type Process struct {
	// Child is the process itself: PID, Signal, Wait, Alive, StderrTail.
	*agentkit.Child
	dec    *Decoder
	events chan sessions.Event

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

// launch starts Claude Code in stream-json mode from the registry's options.
func launch(o sessions.StartOptions) (*Process, error) {
	return Start(ProcessOptions{
		Command: o.Command, Cwd: o.Cwd, Env: o.Env, WriteTimeout: o.WriteTimeout,
		Launch: LaunchOptions{PermissionMode: o.PermissionMode, ResumeID: o.ResumeID},
	})
}

// Start launches Claude Code in opts.Cwd, in its own process group so that
// terminating it reaches the tools it runs, and starts decoding its stdout.
func Start(opts ProcessOptions) (*Process, error) {
	if err := opts.Launch.Validate(); err != nil {
		return nil, err
	}
	path, err := agentInfo.LookPath(opts.Command)
	if err != nil {
		return nil, err
	}
	child, err := agentkit.Start(agentkit.Spec{Agent: "claude", Path: path, Args: Args(opts.Launch),
		Cwd: opts.Cwd, Env: opts.Env, Stdin: true, WriteTimeout: opts.WriteTimeout})
	if err != nil {
		return nil, err
	}
	p := &Process{Child: child, events: make(chan sessions.Event, 64)}
	p.dec = NewDecoder(child.Stdout, opts.MaxLine)
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

// Events yields the decoded stream; closed when stdout ends.
func (p *Process) Events() <-chan sessions.Event { return p.events }

// SkippedLines counts malformed, unknown and oversize lines.
func (p *Process) SkippedLines() int { return int(p.dec.Stats().Skipped()) }

// Stats are the decoder's counters.
func (p *Process) Stats() Counters { return p.dec.Stats() }

func (p *Process) write(line []byte) error { return p.Input.WriteLine(line) }

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
func (p *Process) CloseInput() error { return p.Input.Close() }
