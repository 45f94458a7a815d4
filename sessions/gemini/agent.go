package gemini

import "github.com/session-supervisor/session-supervisor/sessions/agentkit"

// Agent is the Gemini CLI's entry in the agent registry (sessions.Registry),
// agentkit.Agent made from its own Adapter.
type Agent struct {
	agentkit.Agent[Agent, *Process]
}

// Adapter is what Agent is made of: the Gemini CLI's names (agentInfo), its
// start (launch) and its orphan reaping (ReapOrphan).
func (Agent) Adapter() agentkit.Adapter[*Process] {
	return agentkit.Adapter[*Process]{Info: agentInfo, Start: launch, ReapOrphan: ReapOrphan}
}
