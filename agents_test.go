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
	if !slices.Contains(names, "claude=Claude Code") || !slices.Contains(names, "codex=Codex") || names[0] != "claude=Claude Code" {
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

// TestCopilotRegistered: the registry line makes the Copilot CLI known to
// the runtime, the New session dialog, the settings (agents.copilot.command,
// default `copilot`) and doctor, once, as a managed agent.
func TestCopilotRegistered(t *testing.T) {
	if _, ok := agents()["copilot"]; !ok {
		t.Error("the runtime has no copilot launcher")
	}
	var listed bool
	for _, a := range agentInfos() {
		listed = listed || a.Name()+"="+a.DisplayName() == "copilot=Copilot CLI"
	}
	if !listed {
		t.Error("New session does not list the Copilot CLI")
	}
	var n int
	for _, a := range doctorAgents() {
		if a.Name == "copilot" {
			n++
			if !a.Managed || a.Setting != "agents.copilot.command" || a.Command != "copilot" {
				t.Errorf("doctor checks copilot as %+v, want the managed agent with its setting", a)
			}
		}
	}
	if n != 1 {
		t.Errorf("doctor lists copilot %d times, want once", n)
	}
	code, out, errOut := runCLI(t, "--data-dir", t.TempDir(), "settings", "get", "agents.copilot.command")
	if code != 0 || strings.TrimSpace(out) != "copilot" {
		t.Errorf("settings get agents.copilot.command: exit %d, %q %q; want the default copilot", code, out, errOut)
	}
}
