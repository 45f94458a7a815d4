package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestNewSessionValidatesInline(t *testing.T) {
	e := newEnv(t, seed(), nil)
	e.w.ShowNewSession()
	f := e.w.newSession
	if f.cwd.Text != "/home/dev/src/ui-polish" {
		t.Errorf("folder prefilled with %q, want the newest session's", f.cwd.Text)
	}
	f.cwd.SetText("")
	test.Tap(f.launch)
	if !f.cwdErr.Visible() || !strings.Contains(f.cwdErr.Text, "Choose the folder") {
		t.Fatalf("missing folder: %q", f.cwdErr.Text)
	}
	if !f.promptErr.Visible() || !strings.Contains(f.promptErr.Text, "first prompt") {
		t.Fatalf("missing prompt: %q", f.promptErr.Text)
	}
	if len(e.rt.Sessions()) != 7 {
		t.Fatal("an invalid form launched something")
	}

	// Typing clears the error for that field.
	test.Type(f.prompt, "fix the flaky test")
	if f.promptErr.Visible() {
		t.Fatal("prompt error still shown after typing a prompt")
	}

	test.Type(f.cwd, "/no/such/folder")
	test.Tap(f.launch)
	if !strings.Contains(f.cwdErr.Text, "does not exist") {
		t.Fatalf("missing folder: %q", f.cwdErr.Text)
	}

	file := filepath.Join(t.TempDir(), "file.txt")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.cwd.SetText(file)
	test.Tap(f.launch)
	if !strings.Contains(f.cwdErr.Text, "not a folder") {
		t.Fatalf("a file as folder: %q", f.cwdErr.Text)
	}

	// Valid input reaches the backend; this runtime has no agents, and
	// its refusal is shown in the dialog, which stays open.
	f.cwd.SetText(t.TempDir())
	test.Tap(f.launch)
	if f.cwdErr.Visible() || f.promptErr.Visible() {
		t.Fatalf("valid input refused: %q %q", f.cwdErr.Text, f.promptErr.Text)
	}
	if !f.launchErr.Visible() || !strings.Contains(f.launchErr.Text, `unknown agent "claude"`) {
		t.Fatalf("launch error: %q", f.launchErr.Text)
	}
	if f.launch.Disabled() {
		t.Fatal("Launch stays disabled after a failed launch")
	}
}

func TestNewSessionRequest(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.w.ShowNewSession()
	f := e.w.newSession
	if f.cwd.Text != "" {
		t.Errorf("no sessions, yet the folder is %q", f.cwd.Text)
	}
	f.cwd.SetText("  /tmp  ")
	f.name.SetText(" refactor ")
	f.mode.SetSelected("plan")
	f.prompt.SetText("go")
	want := localapi.LaunchRequest{Agent: "claude", Cwd: "/tmp", Name: "refactor", PermissionMode: "plan", Prompt: "go"}
	if got := f.request(); got != want {
		t.Fatalf("request %+v, want %+v", got, want)
	}
	if c, p := validateLaunch(localapi.LaunchRequest{Cwd: "relative/dir", Prompt: "x"}, false); !strings.Contains(c, "absolute") || p != "" {
		t.Errorf("relative folder: %q %q", c, p)
	}
	if _, p := validateLaunch(localapi.LaunchRequest{Cwd: "/", Prompt: " \n "}, false); p == "" {
		t.Error("a blank prompt passed")
	}
}

// stubAgent is a registry entry for the dialog's choice; it launches nothing.
type stubAgent struct{ name, display string }

func (a stubAgent) Name() string           { return a.name }
func (a stubAgent) DisplayName() string    { return a.display }
func (a stubAgent) DefaultCommand() string { return a.name }
func (a stubAgent) InstallHint() string    { return "" }

// The New session dialog offers the registry's agents, by display name and
// in registry order, and launches the chosen one by its registry name.
func TestNewSessionAgentsComeFromTheRegistry(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.w.agents = []sessions.AgentInfo{stubAgent{"claude", "Claude Code"}, stubAgent{"codex", "Codex CLI"}}
	e.w.ShowNewSession()
	f := e.w.newSession
	if got := strings.Join(f.agent.Options, ","); got != "Claude Code,Codex CLI" {
		t.Fatalf("agent choices %q", got)
	}
	if f.agent.Selected != "Claude Code" {
		t.Errorf("preselected %q, want the first agent", f.agent.Selected)
	}
	f.agent.SetSelected("Codex CLI")
	if got := f.request().Agent; got != "codex" {
		t.Errorf("request agent %q, want the registry name codex", got)
	}
}
