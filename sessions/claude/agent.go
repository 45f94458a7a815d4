package claude

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// Agent is Claude Code's entry in the agent registry (sessions.Registry).
type Agent struct{ agentkit.Named[describer] }

// describer gives Agent its names (agentInfo).
type describer struct{}

func (describer) Info() agentkit.Info { return agentInfo }

var (
	_ sessions.ManagedAgent = Agent{}
	_ sessions.OrphanReaper = Agent{}
)

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
