package claude

import (
	"strconv"

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
	// Pipe is the process (PID, Signal, Wait, Alive, StderrTail), its
	// events, its counters and its stdin.
	*agentkit.Pipe
	dec *Decoder
}

// ProcessOptions says how to start one Claude Code process.
type ProcessOptions struct {
	agentkit.Options
	Launch LaunchOptions
}

// launch starts Claude Code in stream-json mode from the registry's options.
func launch(o sessions.StartOptions) (*Process, error) {
	return Start(ProcessOptions{Options: agentkit.OptionsOf(o), Launch: LaunchOptions{PermissionMode: o.PermissionMode, ResumeID: o.ResumeID}})
}

// Start launches Claude Code in opts.Cwd, in its own process group so that
// terminating it reaches the tools it runs, and starts decoding its stdout.
func Start(opts ProcessOptions) (*Process, error) {
	if err := opts.Launch.Validate(); err != nil {
		return nil, err
	}
	child, err := agentInfo.StartPipe(opts.Options, Args(opts.Launch))
	if err != nil {
		return nil, err
	}
	p := &Process{dec: NewDecoder(child.Stdout, opts.MaxLine)}
	p.Pipe = agentkit.NewPipe(child, p.dec.Stats)
	go agentkit.Pump(p.Pipe, p.dec.Next, func(l Line) ([]sessions.Event, []byte) { return l.Events, nil }, nil)
	return p, nil
}

// SendPrompt sends a user message: a new turn, or part of the running one.
func (p *Process) SendPrompt(text string) error { return p.Write(UserMessage(text)) }

// Compact runs Claude Code's /compact command, which works as a prompt.
func (p *Process) Compact() error { return p.Write(UserMessage("/compact")) }

// Interrupt sends the interrupt control request.
func (p *Process) Interrupt() error {
	return p.Write(InterruptRequest("interrupt_" + strconv.FormatInt(p.NextID(), 10)))
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
	return p.Write(PermissionResponse(perm.RequestID, allow, message, input))
}
