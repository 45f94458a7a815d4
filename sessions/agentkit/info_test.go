package agentkit

import (
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

type testDescriber struct{}

func (testDescriber) Info() Info {
	return Info{Name: "t", Display: "Test Agent", Command: "no-such-agent-cli", Install: "npm i t", Setting: "agents.t.command"}
}

// An Agent that embeds Named answers the registry from its Info.
func TestNamed(t *testing.T) {
	var a sessions.AgentInfo = struct{ Named[testDescriber] }{}
	if a.Name() != "t" || a.DisplayName() != "Test Agent" || a.DefaultCommand() != "no-such-agent-cli" || a.InstallHint() != "npm i t" {
		t.Errorf("AgentInfo = %q %q %q %q", a.Name(), a.DisplayName(), a.DefaultCommand(), a.InstallHint())
	}
}

// A missing command's error says how to install it or where to point the
// setting; an empty command looks up the default.
func TestLookPathNamesTheSetting(t *testing.T) {
	_, err := testDescriber{}.Info().LookPath("")
	if err == nil || !strings.Contains(err.Error(), `"no-such-agent-cli"`) || !strings.Contains(err.Error(), "agents.t.command") ||
		!strings.Contains(err.Error(), "install Test Agent") {
		t.Fatalf("err = %v", err)
	}
	if path, err := (Info{}).LookPath("sh"); err != nil || path == "" {
		t.Fatalf("LookPath(sh) = %q, %v", path, err)
	}
}
