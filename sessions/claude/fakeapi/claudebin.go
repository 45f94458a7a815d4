package fakeapi

import (
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
)

// ClaudeVersion is the Claude Code release the end-to-end tests pin; the
// Makefile installs the same one.
const ClaudeVersion = "2.1.197"

// ClaudeBinary finds the real Claude Code CLI for an end-to-end test:
// $CLAUDE_BIN, else the copy `make test` installs under the module root.
// Without it the test fails when E2E_REQUIRED or CI is set (under `make
// test` and in CI a skip would hide a broken install) and skips otherwise,
// naming what is missing.
func ClaudeBinary(t testing.TB) string {
	t.Helper()
	return fakeserver.Binary(t, fakeserver.CLI{Title: "Claude Code CLI", Env: "CLAUDE_BIN", Dir: "claude", Bin: "claude",
		Package: "@anthropic-ai/claude-code", Version: ClaudeVersion})
}

// ModuleRoot walks up from the working directory to the one holding go.mod.
func ModuleRoot() (string, error) {
	return fakeserver.ModuleRoot()
}
