//go:build !toyagent

package main

import "github.com/session-supervisor/session-supervisor/sessions"

// testOnlyAgents is empty in every build but the tests' toyagent one
// (agents_toy.go): the shipped app knows no test agent.
var testOnlyAgents []sessions.ManagedAgent
