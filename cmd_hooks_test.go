package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without the hook program beside the binary (here: the test binary),
// install says how to build it and leaves the settings untouched; status
// and doctor say what is and is not there.
func TestHooksCommandWithoutTheHookProgram(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	settings := filepath.Join(home, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o700)
	orig := "{\n  \"model\": \"opus\"\n}\n"
	os.WriteFile(settings, []byte(orig), 0o644)
	dir := t.TempDir()

	code, _, stderr := runCLI(t, "--data-dir", dir, "hooks", "install")
	if code == 0 || !strings.Contains(stderr, "session-supervisor-hook is missing") || !strings.Contains(stderr, "make build") {
		t.Fatalf("install: exit %d, stderr %q", code, stderr)
	}
	if b, _ := os.ReadFile(settings); string(b) != orig {
		t.Fatalf("settings changed: %s", b)
	}
	code, out, _ := runCLI(t, "--data-dir", dir, "hooks", "status", "--json")
	var st hookStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status: exit %d %q", code, out)
	}
	if st.Installed || st.Listening || st.Received != nil || st.Settings != settings {
		t.Fatalf("status %+v", st)
	}
	// An install by another build (its program elsewhere) is seen, and
	// reported as a problem: the program this binary would use is missing.
	os.WriteFile(settings, []byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "'/old/session-supervisor-hook' --socket '/x'"}]}]}}`), 0o600)
	_, out, _ = runCLI(t, "--data-dir", dir, "hooks", "status")
	if !strings.Contains(out, "installed in "+settings) || !strings.Contains(out, "events: Stop") || !strings.Contains(out, "problem:") {
		t.Fatalf("status:\n%s", out)
	}
	code, _, stderr = runCLI(t, "--data-dir", dir, "hooks", "uninstall")
	if b, _ := os.ReadFile(settings); code != 0 || strings.Contains(string(b), "session-supervisor-hook") {
		t.Fatalf("uninstall: exit %d %q, file %s", code, stderr, b)
	}
	if code, _, _ := runCLI(t, "--data-dir", dir, "hooks", "frobnicate"); code != exitUsage {
		t.Fatalf("unknown subcommand: exit %d", code)
	}
	// Invalid JSON: refused with the reason, untouched.
	os.WriteFile(settings, []byte("{,}"), 0o600)
	if code, _, stderr := runCLI(t, "--data-dir", dir, "hooks", "uninstall"); code == 0 || !strings.Contains(stderr, "not a valid settings file") {
		t.Fatalf("invalid JSON: exit %d %q", code, stderr)
	}
}
