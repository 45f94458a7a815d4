package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/storage"
)

// TestAgentsRegistered: each agent's one registry line makes it known
// everywhere the registry feeds: the runtime's launchers, the New session
// dialog (in display order, Claude Code first), its command setting with
// its default, and doctor (as a managed agent, listed once, no longer in the
// optional list).
func TestAgentsRegistered(t *testing.T) {
	var names []string
	for _, a := range agentInfos() {
		names = append(names, a.Name()+"="+a.DisplayName())
	}
	want := []string{"claude=Claude Code", "codex=Codex", "copilot=Copilot CLI", "gemini=Gemini CLI", "opencode=OpenCode"}
	if !slices.Equal(names, want) {
		t.Errorf("New session lists %v, want %v", names, want)
	}
	for _, name := range []string{"claude", "codex", "copilot", "gemini", "opencode"} {
		t.Run(name, func(t *testing.T) {
			if _, ok := agents()[name]; !ok {
				t.Errorf("the runtime has no %s launcher", name)
			}
			var n int
			for _, a := range doctorAgents() {
				if a.Name == name {
					n++
					if !a.Managed || a.Setting != "agents."+name+".command" || a.Command != name {
						t.Errorf("doctor checks %s as %+v, want the managed agent with its setting", name, a)
					}
				}
			}
			if n != 1 {
				t.Errorf("doctor lists %s %d times, want once", name, n)
			}
			code, out, errOut := runCLI(t, "--data-dir", t.TempDir(), "settings", "get", "agents."+name+".command")
			if code != 0 || strings.TrimSpace(out) != name {
				t.Errorf("settings get agents.%s.command: exit %d, %q %q; want the default %s", name, code, out, errOut, name)
			}
		})
	}
}

// agentkit keeps the app's data-directory variable from the agents under a
// name of its own (sessions/ imports no storage): it must be storage's.
func TestAgentsAreNotGivenTheAppsHome(t *testing.T) {
	if agentkit.AppHomeEnv != storage.EnvHome {
		t.Errorf("agentkit.AppHomeEnv = %q, storage.EnvHome = %q", agentkit.AppHomeEnv, storage.EnvHome)
	}
}
