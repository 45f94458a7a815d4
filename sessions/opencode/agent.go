package opencode

import "github.com/session-supervisor/session-supervisor/sessions/agentkit"

// Agent is OpenCode's entry in the agent registry (sessions.Registry).
type Agent struct {
	agentkit.Agent[adapter, *Process]
}

// adapter gives Agent OpenCode's names (agentInfo), its start (launch) and
// its orphan reaping (ReapOrphan).
type adapter struct{}

func (adapter) Adapter() agentkit.Adapter[*Process] {
	return agentkit.Adapter[*Process]{Info: agentInfo, Start: launch, ReapOrphan: ReapOrphan}
}
