package main

import (
	"slices"
	"strings"
	"testing"
)

// TestCodexRegistered: the one registry line makes Codex known everywhere
// the registry feeds: the runtime's launchers, the New session dialog, its
// command setting with the default `codex`, and doctor (as a managed agent,
// listed once).
func TestCodexRegistered(t *testing.T) {
	if _, ok := agents()["codex"]; !ok {
		t.Error("the runtime has no codex launcher")
	}
	var names []string
	for _, a := range agentInfos() {
		names = append(names, a.Name()+"="+a.DisplayName())
	}
	if !slices.Equal(names, []string{"claude=Claude Code", "codex=Codex", "opencode=OpenCode"}) {
		t.Errorf("New session lists %v", names)
	}
	var codex int
	for _, a := range doctorAgents() {
		if a.Name == "codex" {
			codex++
			if !a.Managed || a.Setting != "agents.codex.command" || a.Command != "codex" {
				t.Errorf("doctor checks codex as %+v, want the managed agent with its setting", a)
			}
		}
	}
	if codex != 1 {
		t.Errorf("doctor lists codex %d times, want once", codex)
	}
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "--data-dir", dir, "settings", "get", "agents.codex.command")
	if code != 0 || strings.TrimSpace(out) != "codex" {
		t.Errorf("settings get agents.codex.command: exit %d, %q %q; want the default codex", code, out, errOut)
	}
}

// TestOpenCodeRegistered: OpenCode's registry line makes it a managed agent
// with its launcher, its command setting (default `opencode`) and one
// doctor check (no longer the "not launched yet" entry).
func TestOpenCodeRegistered(t *testing.T) {
	if _, ok := agents()["opencode"]; !ok {
		t.Error("the runtime has no opencode launcher")
	}
	var n int
	for _, a := range doctorAgents() {
		if a.Name == "opencode" {
			n++
			if !a.Managed || a.Setting != "agents.opencode.command" || a.Command != "opencode" || a.Install != "npm install -g opencode-ai" {
				t.Errorf("doctor checks opencode as %+v, want the managed agent with its setting", a)
			}
		}
	}
	if n != 1 {
		t.Errorf("doctor lists opencode %d times, want once", n)
	}
	code, out, errOut := runCLI(t, "--data-dir", t.TempDir(), "settings", "get", "agents.opencode.command")
	if code != 0 || strings.TrimSpace(out) != "opencode" {
		t.Errorf("settings get agents.opencode.command: exit %d, %q %q; want the default opencode", code, out, errOut)
	}
}
