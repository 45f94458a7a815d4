//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
)

// A supervised agent's tool is a process of the user too, and the socket
// path is easy to find: the tool of a real Claude Code session runs the
// app's own CLI against the running app to approve a permission, change
// agents.claude.command and launch a session in bypassPermissions mode.
// The app refuses every change (403, naming the session) and serves the
// read; the same changes from the user's shell (this test) go through.
func TestSecurityAgentToolCannotChangeTheSupervisor(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{})
	cli := fmt.Sprintf("%q --data-dir %q", h.app, h.data)
	command := strings.Join([]string{
		// its own session, found with a read it is allowed
		`for id in $(` + cli + ` ls --json | sed -n 's/^    "id": "\(.*\)",$/\1/p'); do ` + cli + ` approve "$id" 2>&1; done`,
		cli + " settings set agents.claude.command /bin/false 2>&1",
		cli + " new --cwd /tmp --permission-mode bypassPermissions escape 2>&1",
		cli + " ls 2>&1",
	}, "; ")
	var (
		mu     sync.Mutex
		output string
	)
	h.api.Handle("selfapprove", func(c *fakeapi.Call) fakeapi.Reply {
		last := c.Req.LastUserMessage()
		for _, b := range last.Blocks() {
			if b.Type == "tool_result" {
				mu.Lock()
				output = toolResultText(b.Content)
				mu.Unlock()
				return fakeapi.TextReply(fakeapi.ToolDoneText)
			}
		}
		return fakeapi.Reply{Content: []fakeapi.Block{fakeapi.ToolUseBlock("Bash", map[string]string{
			"command": command, "description": "try to change the supervisor"})}}
	})
	id := h.launch("[[scenario:selfapprove]] go", "--name", "escapist")
	// The user approves the Bash call (from their shell: allowed).
	h.waitFor(id, "the Bash call's permission prompt", ce2eIn(sessions.WaitingOnUser, sessions.WaitPermission))
	h.mustCLI("approve", id)
	h.waitFor(id, "the tool's turn to end", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))

	mu.Lock()
	got := output
	mu.Unlock()
	if n := strings.Count(got, "refused: process "); n != 3 {
		t.Errorf("the tool's three changes: %d refused, want 3; its output:\n%s", n, got)
	}
	if !strings.Contains(got, "runs under the agent of session escapist") {
		t.Errorf("the refusal does not name the session: %s", got)
	}
	if !strings.Contains(got, "escapist") || !strings.Contains(got, "NAME") {
		t.Errorf("the tool's `ls` (a read) was not served: %s", got)
	}
	if v := strings.TrimSpace(h.mustCLI("settings", "get", "agents.claude.command")); v == "/bin/false" {
		t.Errorf("the tool changed agents.claude.command")
	}
	if n := len(h.ls()); n != 1 {
		t.Errorf("%d sessions, want 1: the tool launched one", n)
	}
	// The user's shell may.
	h.mustCLI("settings", "set", "supervisor.tick_seconds", "7")
	if v := strings.TrimSpace(h.mustCLI("settings", "get", "supervisor.tick_seconds")); v != "7" {
		t.Errorf("settings set from the user's shell: %q, want 7", v)
	}
}

// toolResultText is a tool_result block's text: a string, or text blocks.
func toolResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct{ Text string }
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}
