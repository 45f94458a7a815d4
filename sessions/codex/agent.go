package codex

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Agent is the Codex CLI's entry in the agent registry (sessions.Registry).
type Agent struct{}

var (
	_ sessions.ManagedAgent = Agent{}
	_ sessions.OrphanReaper = Agent{}
)

// Name is the agent's identifier: sessions store it, and its command
// setting is agents.codex.command (CommandSetting).
func (Agent) Name() string { return "codex" }

// DisplayName is how the UI calls it.
func (Agent) DisplayName() string { return "Codex" }

// DefaultCommand is the executable on PATH that npm installs.
func (Agent) DefaultCommand() string { return "codex" }

// InstallHint is how the Codex CLI is installed.
func (Agent) InstallHint() string { return "npm install -g @openai/codex" }

// Start launches `codex app-server` and opens (or resumes) the thread.
func (Agent) Start(_ context.Context, o sessions.StartOptions) (sessions.Process, error) {
	p, err := Start(ProcessOptions{
		Command: o.Command, Cwd: o.Cwd, Env: o.Env, WriteTimeout: o.WriteTimeout,
		ApprovalPolicy: ApprovalPolicy(o.PermissionMode), ResumeID: o.ResumeID,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}
