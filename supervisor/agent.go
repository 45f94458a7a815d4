package supervisor

import "github.com/session-supervisor/session-supervisor/sessions"

// The adapter contract lives in sessions (agent.go there); these aliases
// keep the supervisor's names, so code written against supervisor.Agent,
// supervisor.Process and supervisor.StartOptions compiles unchanged.
type (
	// StartOptions is what an agent needs to start one process.
	StartOptions = sessions.StartOptions
	// Agent launches processes of one agent CLI (sessions.Launcher: the
	// runtime needs only Start; a registry entry is a sessions.ManagedAgent).
	Agent = sessions.Launcher
	// Process is one running agent process the app owns.
	Process = sessions.Process
)
