// Package toyagent is a test-only agent: the worked example of adding an
// agent (docs/development.md, "Adding an agent"). Its CLI is toycli, a
// stand-in built by the tests, and the app knows it only when built with
// the toyagent tag (agents_toy.go), so the shipped binary never does.
//
// The protocol is JSON lines both ways, one long-lived process per session
// (`toy --stream [--resume ID]`):
//
//	stdin, app to CLI:
//	  {"type":"prompt","text":"…"}     a turn, or the next one when a turn runs
//	  {"type":"interrupt"}             abort the turn in flight
//	stdout, CLI to app:
//	  {"type":"session","session_id":"toy_…"}     the session is open
//	  {"type":"turn_start","session_id":"toy_…"}  a turn begins
//	  {"type":"text","text":"…"}                  the model's text
//	  {"type":"tool_start","id":"…","name":"bash","text":"<command>"}
//	  {"type":"tool_end","id":"…","name":"bash"}
//	  {"type":"turn_end"}                         the turn completed
//	  {"type":"turn_end","cancelled":true}        the turn was interrupted
//	  {"type":"error","status":429,"text":"…"}    the turn failed (status: the
//	                                              model API's, 0 for no answer)
//
// Prompts sent while a turn runs are joined into the next turn. The CLI
// keeps each session in $HOME/.toy/sessions/<id>.json, which --resume
// reads; at the end of its input it finishes the turn in flight and exits.
package toyagent

import (
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// agentInfo names the toy agent to the registry and says how its command
// is found.
var agentInfo = agentkit.Info{Name: "toy", Display: "Toy Agent", Command: "toy",
	Install: "go build -o toy ./sessions/agentkit/agenttest/toyagent/toycli", Setting: "agents.toy.command"}

// Agent is the toy agent's entry in the agent registry (sessions.Registry),
// agentkit.Agent made from its own Adapter.
type Agent struct {
	agentkit.Agent[Agent, *Process]
}

// Adapter is what Agent is made of: the toy's names, its start (`toy
// --stream`, resuming o.ResumeID when set) and its orphan reaping.
func (Agent) Adapter() agentkit.Adapter[*Process] {
	return agentkit.Adapter[*Process]{Info: agentInfo, Start: Start, ReapOrphan: ReapOrphan}
}

var (
	_ sessions.ManagedAgent = Agent{}
	_ sessions.OrphanReaper = Agent{}
)
