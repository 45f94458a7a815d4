package gemini

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Agent is the Gemini CLI's entry in the agent registry (sessions.Registry).
type Agent struct{}

var (
	_ sessions.ManagedAgent = Agent{}
	_ sessions.OrphanReaper = Agent{}
)

// Name is the agent's identifier: sessions store it, and its command
// setting is agents.gemini.command (CommandSetting).
func (Agent) Name() string { return "gemini" }

// DisplayName is how the UI calls it.
func (Agent) DisplayName() string { return "Gemini CLI" }

// DefaultCommand is the executable on PATH that npm installs.
func (Agent) DefaultCommand() string { return "gemini" }

// InstallHint is how the Gemini CLI is installed.
func (Agent) InstallHint() string { return "npm install -g @google/gemini-cli" }

// Start launches `gemini --acp` and opens (or loads) the session.
func (Agent) Start(_ context.Context, o sessions.StartOptions) (sessions.Process, error) {
	p, err := Start(ProcessOptions{
		Command: o.Command, Cwd: o.Cwd, Env: o.Env, WriteTimeout: o.WriteTimeout,
		ApprovalMode: ApprovalMode(o.PermissionMode), ResumeID: o.ResumeID,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}
