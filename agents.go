package main

import (
	"context"

	"github.com/session-supervisor/session-supervisor/sessions/claude"
	"github.com/session-supervisor/session-supervisor/supervisor"
)

// claudeAgent adapts the Claude Code adapter to supervisor.Agent. It lives in
// the composition root because the adapter must not import supervisor.
type claudeAgent struct{}

func (claudeAgent) Start(_ context.Context, o supervisor.StartOptions) (supervisor.Process, error) {
	p, err := claude.Start(claude.ProcessOptions{
		Command: o.Command, Cwd: o.Cwd, Env: o.Env, WriteTimeout: o.WriteTimeout,
		Launch: claude.LaunchOptions{PermissionMode: o.PermissionMode, ResumeID: o.ResumeID},
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// ReapOrphan stops a Claude Code process an earlier run of the app lost.
func (claudeAgent) ReapOrphan(pid int) (bool, error) { return claude.ReapOrphan(pid) }

// agents are the agent CLIs the app can launch.
func agents() map[string]supervisor.Agent {
	return map[string]supervisor.Agent{"claude": claudeAgent{}}
}
