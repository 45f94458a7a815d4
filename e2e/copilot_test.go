//go:build linux

package e2e

// End-to-end tests of the whole app against the real Copilot CLI (issue
// 13): the app binary runs headless and runs one `copilot -p
// --output-format json` process per turn of a session created with `new
// --agent copilot`; Copilot talks only to the fake chat completions API
// (sessions/copilot/fakeapi) through its BYOK provider, offline (no GitHub
// login, no telemetry, no update check), everything else refused by a
// proxy. The scenarios all managed agents share are in agents_test.go;
// here are Copilot's description and its own tests.

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/copilot/fakeapi"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// copilotE2EAgent: a process per turn resuming the Copilot session, with
// every tool allowed (prompt mode asks no one); the turn's process group is
// Copilot (interrupt is SIGINT to it: Copilot's abort).
var copilotE2EAgent = &e2eAgent{
	name:         "copilot",
	reportsUsage: true,
	binary:       fakeapi.CopilotBinary,
	setup: func(h *ce2eHarness, opts e2eOpts) (any, func(string) []e2eReq) {
		api := startFakeAPI(h, fakeapi.Start)
		proxyURL, refused, closeProxy, err := fakeapi.StartRefusingProxy()
		if err != nil {
			h.t.Fatal(err)
		}
		h.t.Cleanup(closeProxy)
		h.t.Cleanup(func() {
			if n := refused(); n > opts.refusedOK {
				h.t.Errorf("Copilot tried to leave loopback %d times (refused by the proxy)", n)
			}
		})
		cache, err := fakeapi.SharedCacheDir()
		if err != nil {
			h.t.Fatal(err)
		}
		h.env = fakeapi.HermeticEnv(h.home, cache, api.URL(), proxyURL)
		return api, func(scenario string) []e2eReq {
			return fakeReqs(api.Requests(scenario))
		}
	},
	newFlags:          []string{"--permission-mode", "bypassPermissions"},
	sessionIDOK:       func(id string) bool { return id != "" },
	tool:              "command",
	toolEvidence:      "command",
	processPerTurn:    true,
	killGroup:         true,
	orphanSurvivesApp: true,
	waitPersisted:     waitCopilotPersisted,
}

// waitCopilotPersisted waits until Copilot's own record of the session
// (COPILOT_HOME/session-state/ID/events.jsonl) holds the event of what
// (user.message, tool.execution_start). Copilot writes its session to disk
// about a second after it prints the same events (measured on 1.0.102): a
// kill before that loses the turn, and the resumed session starts without
// it.
func waitCopilotPersisted(h *agentE2E, sessionID string, what e2eRecord) {
	h.t.Helper()
	typ := "user.message"
	if what == recordedToolCall {
		typ = "tool.execution_start"
	}
	h.waitFile(filepath.Join(h.home, ".copilot", "session-state", sessionID, "events.jsonl"), `"type":"`+typ+`"`, 30*time.Second)
}

// cpe2e is one Copilot test's world (the terminal suite builds on it too).
type cpe2e = agentWithAPI[*fakeapi.Server]

// copilotE2EStart starts a Copilot test's fake API, hermetic environment
// and app.
func copilotE2EStart(t *testing.T, settings ...string) *cpe2e {
	t.Helper()
	return copilotE2EStartWith(t, e2eOpts{}, settings...)
}

// copilotE2EStartWith is copilotE2EStart with options.
func copilotE2EStartWith(t *testing.T, opts e2eOpts, settings ...string) *cpe2e {
	t.Helper()
	return startAgentWithAPI[*fakeapi.Server](t, copilotE2EAgent, opts, settings...)
}

// TestCopilotE2E runs the scenarios every managed agent shares: plain
// reply (the turn's process exiting is not the session ending), command,
// second prompt (a new process resuming the session), stall, agent killed,
// app killed.
func TestCopilotE2E(t *testing.T) {
	t.Parallel()
	runAgentE2E(t, copilotE2EAgent)
}

// TestCopilotE2ERateLimitDrain: 429s past Copilot's own retries (it tries
// six times, waiting the retry-after, assistant.turn_retry) fail the turn
// with rate_limit (session.error errorType rate_limit); the session is held
// in Recovering with a countdown and continued in the same Copilot session.
func TestCopilotE2ERateLimitDrain(t *testing.T) {
	t.Parallel()
	h := copilotE2EStart(t, ce2eFast...)
	held, _ := h.rateLimitDrain("429x6then_ok", true)
	if !strings.Contains(held.Evidence, "continuing at") {
		t.Errorf("hold evidence %q, want the countdown", held.Evidence)
	}
	h.expectStatuses("429x6then_ok", 429, 429, 429, 429, 429, 429, 200)
	h.stopApp()
}

// TestCopilotE2EAuthEscalated: a 401 (Copilot retries it twice as a
// transient auth error, then gives up with errorType authentication) is
// held for an auth resume, the key never in the failure; with automatic
// recovery off it is escalated.
func TestCopilotE2EAuthEscalated(t *testing.T) {
	t.Parallel()
	h := copilotE2EStart(t, ce2eFast...)
	held := h.authEscalated([]int{401, 401, 401},
		"state_changed:working", "state_changed:recovering", "state_changed:errored",
		"auth_resume", "state_changed:errored", "escalated")
	if strings.Contains(held.Failure.Message, "sk-fake") {
		t.Errorf("the failure message carries the key: %q", held.Failure.Message)
	}
	h.stopApp()
}

// TestCopilotE2EOverflowCompactRetry: a context overflow on the second
// turn (the provider's context_length_exceeded, which Copilot reports as
// errorType "query") is compacted (Copilot's /compact in a turn of its own,
// which makes the summarizing call) and the turn retried, which completes.
func TestCopilotE2EOverflowCompactRetry(t *testing.T) {
	t.Parallel()
	h := copilotE2EStart(t, ce2eFast...)
	id := h.launch("[[scenario:too_long_second]] hi")
	h.waitFor(id, "the first reply", ce2eReview(1))
	h.mustCLI("send", id, "more")
	h.overflowRetried(id, 4, "state_changed:working", "state_changed:waiting_on_user(review)", "state_changed:working")
	reqs := h.api.Requests("too_long_second")
	if len(reqs) != 4 || !strings.Contains(reqs[3].UserText, core.RetryTurnText) {
		t.Errorf("requests %+v, want the first turn, the overflow, the compaction's summary and the retry", reqs)
	}
	if got := h.statuses("too_long_second"); !slices.Equal(got, []int{200, 400, 200, 200}) {
		t.Errorf("the fake API answered %v, want 200, 400, then the compaction's and the retry's 200", got)
	}
	h.stopApp()
}

// TestCopilotE2EOverflowFirstTurnEscalated: an overflow on the first turn
// leaves Copilot nothing to compact (it exits 1, "Nothing to compact."):
// the compaction fails and, the overflow budget spent, the session is
// escalated rather than retried forever.
func TestCopilotE2EOverflowFirstTurnEscalated(t *testing.T) {
	t.Parallel()
	h := copilotE2EStart(t, ce2eFast...)
	s := h.overflowEscalated("too_long")
	if s.ProcessAlive && s.PID > 0 && pidAlive(s.PID) {
		t.Errorf("a turn's process %d still runs after the escalation", s.PID)
	}
	h.stopApp()
}

// TestCopilotE2EUserInterrupt: `interrupt` stops the turn in flight (SIGINT
// to its process group, which Copilot answers with abort); a stop the user
// asked for is a review, and the session takes the next prompt.
func TestCopilotE2EUserInterrupt(t *testing.T) {
	t.Parallel()
	h := copilotE2EStart(t, ce2eFast...)
	h.api.Handle("hang", func(n int, _ string) fakeapi.Reply {
		if n == 1 {
			return fakeapi.Reply{Stall: true}
		}
		return fakeapi.Reply{Text: "Resumed after the stop."}
	})
	id := h.userInterrupt()
	h.mustCLI("send", id, "go on")
	h.waitFor(id, "the next prompt's reply", ce2eReview(2))
	h.stopApp()
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "interrupt_requested"},
		"process_started", "prompt_sent", "state_changed:working", "interrupt_requested",
		"state_changed:waiting_on_user(review)", "prompt_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
}
