package claude

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Agent is Claude Code's entry in the agent registry (sessions.Registry).
type Agent struct{}

var (
	_ sessions.ManagedAgent = Agent{}
	_ sessions.OrphanReaper = Agent{}
)

// Name is the agent's identifier: sessions store it, and its command
// setting is agents.claude.command (CommandSetting).
func (Agent) Name() string { return "claude" }

// DisplayName is how the UI calls it.
func (Agent) DisplayName() string { return "Claude Code" }

// DefaultCommand is the executable on PATH that npm installs.
func (Agent) DefaultCommand() string { return "claude" }

// InstallHint is how Claude Code is installed.
func (Agent) InstallHint() string { return "npm install -g @anthropic-ai/claude-code" }

// Start launches Claude Code in stream-json mode.
func (Agent) Start(_ context.Context, o sessions.StartOptions) (sessions.Process, error) {
	p, err := Start(ProcessOptions{
		Command: o.Command, Cwd: o.Cwd, Env: o.Env, WriteTimeout: o.WriteTimeout,
		Launch: LaunchOptions{PermissionMode: o.PermissionMode, ResumeID: o.ResumeID},
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// ReapOrphan stops a Claude Code process an earlier run of the app lost.
func (Agent) ReapOrphan(pid int) (bool, error) { return ReapOrphan(pid) }
