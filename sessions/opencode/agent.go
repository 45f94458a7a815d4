package opencode

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Agent is OpenCode's entry in the agent registry (sessions.Registry).
type Agent struct{}

var (
	_ sessions.ManagedAgent = Agent{}
	_ sessions.OrphanReaper = Agent{}
)

// Name is the agent's identifier: sessions store it, and its command
// setting is agents.opencode.command (CommandSetting).
func (Agent) Name() string { return "opencode" }

// DisplayName is how the UI calls it.
func (Agent) DisplayName() string { return "OpenCode" }

// DefaultCommand is the executable on PATH that npm installs.
func (Agent) DefaultCommand() string { return "opencode" }

// InstallHint is how OpenCode is installed.
func (Agent) InstallHint() string { return "npm install -g opencode-ai" }

// Start launches `opencode serve` and opens (or resumes) the session.
func (Agent) Start(_ context.Context, o sessions.StartOptions) (sessions.Process, error) {
	p, err := Start(ProcessOptions{
		Command: o.Command, Cwd: o.Cwd, Env: o.Env, WriteTimeout: o.WriteTimeout,
		PermissionMode: o.PermissionMode, ResumeID: o.ResumeID,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}
