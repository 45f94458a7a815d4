package fakeapi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
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
	bin := os.Getenv("CLAUDE_BIN")
	if bin == "" {
		root, err := ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(root, ".cache", "claude", "node_modules", ".bin", "claude")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("the real Claude Code CLI is not at %s (%v); `make test` installs it "+
			"(npm install --prefix .cache/claude @anthropic-ai/claude-code@%s), or set CLAUDE_BIN", bin, err, ClaudeVersion)
		if os.Getenv("E2E_REQUIRED") != "" || os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// ModuleRoot walks up from the working directory to the one holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
