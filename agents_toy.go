//go:build toyagent

package main

import (
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest/toyagent"
)

// testOnlyAgents, in a build with the toyagent tag (the end-to-end tests'
// e2e/toy_test.go), adds the test-only toy agent: the worked example of
// adding an agent, run through the shared managed scenarios.
var testOnlyAgents = []sessions.ManagedAgent{toyagent.Agent{}}
