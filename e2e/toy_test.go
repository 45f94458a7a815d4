//go:build linux

package e2e

// The shared managed scenarios against the test-only toy agent
// (sessions/agentkit/agenttest/toyagent): what it takes to add an agent,
// shown end to end. The app is built with the toyagent tag (the shipped
// build knows no toy), the CLI is toycli, and the model API is the OpenAI
// chat completions fake of the Copilot suite on loopback.

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/copilot/fakeapi"
)

var (
	toyBuildOnce sync.Once
	toyBins      struct{ app, cli string }
	toyBuildErr  error
)

// toyBinaries builds, once per test process, the app with the toy agent
// registered and the toy CLI, beside the other test binaries.
func toyBinaries(t testing.TB) (app, cli string) {
	t.Helper()
	toyBuildOnce.Do(func() {
		dir, err := testBinDir()
		var flags []string
		if err == nil {
			flags, err = appBuildFlags(dir, "toyagent,"+appTags)
		}
		if err == nil {
			toyBins.app, err = goBuild(dir, "session-supervisor-toy", "..", flags...)
		}
		if err == nil {
			// Named toy: its ReapOrphan knows the toy by its program's name.
			toyBins.cli, err = goBuild(dir, "toy", "../sessions/agentkit/agenttest/toyagent/toycli")
		}
		toyBuildErr = err
	})
	if toyBuildErr != nil {
		t.Fatal(toyBuildErr)
	}
	return toyBins.app, toyBins.cli
}

// toyE2EAgent: one `toy --stream` for the session (turns on the same
// process); it runs its bash tool without asking; at the end of its input
// it finishes the turn in flight, so a stalled turn outlives an app killed
// with SIGKILL and the next app reaps it.
var toyE2EAgent = &e2eAgent{
	name: "toy",
	binary: func(t testing.TB) string {
		_, cli := toyBinaries(t)
		return cli
	},
	setup: func(h *ce2eHarness, _ e2eOpts) (any, func(string) []e2eReq) {
		h.app, _ = toyBinaries(h.t) // the app that knows the toy agent
		api := startFakeAPI(h, fakeapi.Start)
		path := os.Getenv("PATH")
		h.env = []string{"PATH=" + path, "HOME=" + h.home, "TOY_API_URL=" + api.URL()}
		return api, func(scenario string) []e2eReq {
			return fakeReqs(api.Requests(scenario))
		}
	},
	sessionIDOK:       func(id string) bool { return strings.HasPrefix(id, "toy_") },
	tool:              "bash",
	orphanSurvivesApp: true,
	reapRecorded:      true,
}

// TestToyE2E runs the scenarios every managed agent shares against the toy
// agent: plain reply, bash, second prompt, stall (interrupt), agent killed,
// app killed.
func TestToyE2E(t *testing.T) {
	t.Parallel()
	runAgentE2E(t, toyE2EAgent)
}
