package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
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

// TestTerminalResumeArgs: each agent's own interactive resume, as "Continue
// in terminal" opens it, with the command setting's value (or the default
// command), and ids that are not ids refused.
func TestTerminalResumeArgs(t *testing.T) {
	const id = "0b9b3e8e-51f3-4d5c-9d54-0d1f5c1d6a11"
	cases := []struct {
		agent, command, id string
		want               []string
		err                string
	}{
		{agent: "claude", id: id, want: []string{"claude", "--resume", id}},
		{agent: "claude", command: "/opt/claude/bin/claude", id: id, want: []string{"/opt/claude/bin/claude", "--resume", id}},
		{agent: "codex", id: id, want: []string{"codex", "resume", "--no-daemon", id}},
		{agent: "copilot", id: id, want: []string{"copilot", "--resume=" + id}},
		{agent: "gemini", id: id, want: []string{"gemini", "--resume", id}},
		{agent: "opencode", id: "ses_3a1f0c2e9ffeAbCd", want: []string{"opencode", "--session", "ses_3a1f0c2e9ffeAbCd"}},
		{agent: "claude", id: "--dangerously-skip-permissions", err: "cannot be resumed in a terminal"},
		{agent: "codex", id: "", err: "cannot be resumed in a terminal"},
		{agent: "gemini", id: "a b", err: "cannot be resumed in a terminal"},
	}
	for _, c := range cases {
		t.Run(c.agent+"/"+c.id, func(t *testing.T) {
			r, ok := agents()[c.agent].(sessions.TerminalResumer)
			if !ok {
				t.Fatalf("%s has no terminal resume", c.agent)
			}
			got, err := r.TerminalResumeArgs(c.command, c.id)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %q, %v; want an error %q", got, err, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
