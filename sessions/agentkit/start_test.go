//go:build unix

package agentkit

import (
	"io"
	"strings"
	"testing"
)

// An agent inherits the app's environment but for the app's data
// directory: its tools need not know where the app's socket and database
// are. What the adapter adds (Spec.Env) is passed.
func TestStartedAgentDoesNotSeeTheAppsHome(t *testing.T) {
	t.Setenv(AppHomeEnv, "/home/u/.local/share/session-supervisor")
	t.Setenv("AGENTKIT_TEST_KEPT", "kept")
	c, err := Start(Spec{Agent: "sh", Path: "/bin/sh",
		Args: []string{"-c", `printf '%s|%s|%s' "${` + AppHomeEnv + `-unset}" "$AGENTKIT_TEST_KEPT" "$ADDED"`},
		Env:  []string{"ADDED=added"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(c.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), "unset|kept|added"; got != want {
		t.Errorf("the agent saw %q, want %q", got, want)
	}
}
