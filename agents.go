package main

import (
	"path/filepath"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude"
	"github.com/session-supervisor/session-supervisor/sessions/claude/claudeterm"
	"github.com/session-supervisor/session-supervisor/sessions/codex"
	"github.com/session-supervisor/session-supervisor/sessions/codex/codexterm"
	"github.com/session-supervisor/session-supervisor/sessions/copilot"
	"github.com/session-supervisor/session-supervisor/sessions/copilot/copilotterm"
	"github.com/session-supervisor/session-supervisor/sessions/gemini"
	"github.com/session-supervisor/session-supervisor/sessions/gemini/geminiterm"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/opencode"
	"github.com/session-supervisor/session-supervisor/sessions/procwatch"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/supervisor"
	"github.com/session-supervisor/session-supervisor/watch"
)

// agentRegistry is every agent CLI the app can launch, in display order (the
// first is the default). Adding an agent is its package under sessions/ and
// one line here; its settings key, New session entry and launch all follow.
// testOnlyAgents (agents_toy.go) come last: none outside a test build.
var agentRegistry = sessions.MustRegistry(append([]sessions.ManagedAgent{
	claude.Agent{},
	codex.Agent{},
	copilot.Agent{},
	gemini.Agent{},
	opencode.Agent{},
}, testOnlyAgents...)...)

// externalSources find the sessions the app did not launch (an agent started
// in a terminal or an IDE) and observe them; the runtime supervises them
// beside the managed ones. Adding one is its source and one line here.
// dataDir holds the socket Claude's hooks forward to (`hooks install`);
// procs is the process table they all read, scanned by one loop.
func externalSources(dataDir string, procs *procwatch.Table) []supervisor.ExternalSource {
	return []supervisor.ExternalSource{
		&claudeterm.Source{Notify: watch.Dirs, HookSocket: filepath.Join(dataDir, claudeterm.HookSocketName), Table: procs},
		&codexterm.Source{ProcSource: observe.ProcSource[codexterm.Proc, codexterm.Rollout]{Notify: watch.Dirs, Table: procs}},
		&copilotterm.Source{ProcSource: observe.ProcSource[copilotterm.Proc, copilotterm.Workspace]{Notify: watch.Dirs, Table: procs}},
		&geminiterm.Source{ProcSource: observe.ProcSource[geminiterm.Proc, geminiterm.Chat]{Notify: watch.Dirs, Table: procs}},
	}
}

// settingsRegistry is every setting the app has: the core ones and each
// agent's command. It is handed to what reads or changes settings (the
// settings service, the CLI, the window).
var settingsRegistry = settings.MustRegistry(agentSettings(agentRegistry)...)

// agentSettings is what the settings registry needs about each agent.
func agentSettings(r *sessions.Registry) []settings.Agent {
	var out []settings.Agent
	for _, a := range r.All() {
		out = append(out, settings.Agent{Name: a.Name(), DisplayName: a.DisplayName(), DefaultCommand: a.DefaultCommand()})
	}
	return out
}

// agents are the registry's launchers, by name, for the runtime.
func agents() map[string]supervisor.Agent {
	out := map[string]supervisor.Agent{}
	for _, a := range agentRegistry.All() {
		out[a.Name()] = a
	}
	return out
}

// defaultAgent is the registry's default (its first): what the runtime
// launches for a request that names no agent.
func defaultAgent() string { return agentRegistry.Names()[0] }

// agentInfos are the registry's agents as the window lists them.
func agentInfos() []sessions.AgentInfo {
	var out []sessions.AgentInfo
	for _, a := range agentRegistry.All() {
		out = append(out, a)
	}
	return out
}
