package codex

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// Agent is the Codex CLI's entry in the agent registry (sessions.Registry).
type Agent struct{ agentkit.Named[describer] }

// describer gives Agent its names (agentInfo).
type describer struct{}

func (describer) Info() agentkit.Info { return agentInfo }

var (
	_ sessions.ManagedAgent = Agent{}
	_ sessions.OrphanReaper = Agent{}
)

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
