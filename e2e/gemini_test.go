//go:build linux

package e2e

// End-to-end tests of the whole app against the real Gemini CLI (issue 13):
// the app binary runs headless, launches `gemini --acp` for a session
// created with `new --agent gemini`, and the CLI talks only to the fake
// Gemini API (sessions/gemini/fakeapi) on loopback, everything else refused
// by a proxy. The scenarios all managed agents share are in
// agents_test.go; here are Gemini's description and its own tests.

import (
	"slices"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/gemini/fakeapi"
)

// geminiE2EAgent: Gemini runs one `gemini --acp` for the session (turns on
// the same process and ACP session); tools run without asking
// (--approval-mode yolo) unless a test chooses another permission mode.
var geminiE2EAgent = &e2eAgent{
	reportsUsage: true,
	name:         "gemini",
	binary:       fakeapi.GeminiBinary,
	setup: func(h *ce2eHarness, _ e2eOpts) (any, func(string) []e2eReq) {
		api, proxyURL := startFakes(h, fakeapi.Start, fakeapi.StartRefusingProxy)
		if err := fakeapi.WriteSettings(h.home, fakeapi.Config{}); err != nil {
			h.t.Fatal(err)
		}
		h.env = fakeapi.HermeticEnv(h.home, api.URL(), proxyURL)
		return api, func(scenario string) []e2eReq {
			entries := api.Requests(scenario)
			if scenario == "" {
				entries = api.Log()
			}
			return fakeReqs(entries)
		}
	},
	newFlags:     []string{"--permission-mode", "bypassPermissions"},
	sessionIDOK:  func(id string) bool { return id != "" }, // the ACP session id
	tool:         "command",
	toolEvidence: "command",
	killGroup:    true,
	// The CLI drops a turn that failed or was cancelled from the history
	// it sends, so a nudge after one carries no marker (measured) and
	// lands in "text".
	nudgeAnywhere: true,
	// `gemini --acp` does not exit when its input closes mid-turn: the
	// supervisor stops it, and records that it did.
	reapRecorded:      true,
	unpinnedTimelines: true,
}

// gme2e is one Gemini test's world (the terminal suite builds on it too).
type gme2e = agentWithAPI[*fakeapi.Server]

// geminiE2EStart starts a Gemini test's fake API, the CLI's settings and
// the app.
func geminiE2EStart(t *testing.T, settings ...string) *gme2e {
	t.Helper()
	return startAgentWithAPI[*fakeapi.Server](t, geminiE2EAgent, e2eOpts{}, settings...)
}

// TestGeminiE2E runs the scenarios every managed agent shares: plain
// reply, command, second prompt, stall (session/cancel), agent killed (the
// resume is session/load, then session/prompt), app killed.
func TestGeminiE2E(t *testing.T) {
	t.Parallel()
	runAgentE2E(t, geminiE2EAgent)
}

// TestGeminiE2EApprove: under the default permission mode the CLI asks
// over ACP before a command; `approve` answers it and the command runs.
func TestGeminiE2EApprove(t *testing.T) {
	t.Parallel()
	geminiE2EStart(t).approveWrite()
}

// TestGeminiE2ERateLimitDrain: 429s past the CLI's own two attempts
// (general.maxAttempts 2) fail the turn with rate_limit and the CLI's
// suggested delay as the reset; the session is held in Recovering and
// continued on the same process and session, which completes.
func TestGeminiE2ERateLimitDrain(t *testing.T) {
	t.Parallel()
	h := geminiE2EStart(t, ce2eFast...)
	held, s := h.rateLimitDrain("429then_ok", false)
	if held.Failure.RetryAt.IsZero() || s.PID != held.PID {
		t.Errorf("hold: failure %+v (want the CLI's reset); continued on pid %d, held on %d", held.Failure, s.PID, held.PID)
	}
	h.expectStatuses("429then_ok", 429, 429)
	if !h.nudged("") {
		t.Error("the fake API never received the continue")
	}
	h.stopApp()
}

// TestGeminiE2EAuthEscalated: a 401 (the CLI does not retry it) is held
// for an auth resume; with automatic recovery switched off it is
// escalated.
func TestGeminiE2EAuthEscalated(t *testing.T) {
	t.Parallel()
	h := geminiE2EStart(t, ce2eFast...)
	h.authEscalated([]int{401})
	h.stopApp()
}

// TestGeminiE2EOverflowEscalated: a context overflow (the API's 400 "input
// token count exceeds") cannot be compacted over ACP: the compaction the
// supervisor asks for fails at once with the reason, and the session is
// escalated instead of retried unchanged.
func TestGeminiE2EOverflowEscalated(t *testing.T) {
	t.Parallel()
	h := geminiE2EStart(t, ce2eFast...)
	id := h.launch("[[scenario:too_long]] hi")
	s := h.waitFor(id, "the escalation", func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || !strings.Contains(s.Failure.Message, "no compaction") {
		t.Errorf("escalated as %s with %+v, want errored with the reason compaction is unavailable", s.State, s.Failure)
	}
	if got := h.statuses("too_long"); !slices.Equal(got, []int{400}) {
		t.Errorf("the fake API answered %v, want the one overflow", got)
	}
	labels := h.labels(id, []string{})
	for _, want := range []string{"overflow_redrive", "escalated"} {
		if !slices.Contains(labels, want) {
			t.Errorf("timeline %s lacks %s", strings.Join(labels, ", "), want)
		}
	}
	h.stopApp()
}
