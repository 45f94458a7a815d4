package agentkit

import (
	"strings"
	"testing"
)

type testDescriber struct{}

func (testDescriber) Info() Info {
	return Info{Name: "t", Display: "Test Agent", Command: "no-such-agent-cli", Install: "npm i t", Setting: "agents.t.command"}
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

// An agent without a terminal resume says so; one with it gets the default
// command when the setting is empty.
func TestResumeArgs(t *testing.T) {
	i := testDescriber{}.Info()
	if _, err := i.ResumeArgs("", "abc"); err == nil || !strings.Contains(err.Error(), "Test Agent sessions cannot be continued in a terminal") {
		t.Fatalf("err = %v", err)
	}
	i.TerminalResume = func(id string) []string { return []string{"-r", id} }
	if got, err := i.ResumeArgs("", "abc"); err != nil || strings.Join(got, " ") != "no-such-agent-cli -r abc" {
		t.Fatalf("got %q, %v", got, err)
	}
}
