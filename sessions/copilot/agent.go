package copilot

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Agent is the Copilot CLI's entry in the agent registry (sessions.Registry).
type Agent struct{}

var _ sessions.ManagedAgent = Agent{}

// Name is the agent's identifier: sessions store it, and its command
// setting is agents.copilot.command (CommandSetting).
func (Agent) Name() string { return "copilot" }

// DisplayName is how the UI calls it.
func (Agent) DisplayName() string { return "Copilot CLI" }

// DefaultCommand is the executable on PATH that npm installs.
func (Agent) DefaultCommand() string { return "copilot" }

// InstallHint is how the Copilot CLI is installed.
func (Agent) InstallHint() string { return "npm install -g @github/copilot" }

// Start prepares the session (a new one, or ResumeID's); its first process
// starts with the first prompt.
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
