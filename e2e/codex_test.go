//go:build linux

package e2e

// End-to-end tests of the whole app against the real Codex CLI (issue 12):
// the app binary runs headless, launches `codex app-server` for a session
// created with `new --agent codex`, and Codex talks only to the fake
// Responses API (sessions/codex/fakeapi) on loopback, everything else
// refused by a proxy. The scenarios all managed agents share are in
// agents_test.go; here are Codex's description and its own tests.

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/codex/fakeapi"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// codexE2EAgent: Codex runs one `codex app-server` for the session (turns
// on the same process and thread); the npm `codex` is a Node wrapper that
// runs the native binary as its child in the same process group.
var codexE2EAgent = &e2eAgent{
	reportsUsage: true,
	name:         "codex",
	binary:       fakeapi.CodexBinary,
	setup: func(h *ce2eHarness, o e2eOpts) (any, func(string) []e2eReq) {
		api, proxyURL := startFakes(h, fakeapi.Start, fakeapi.StartRefusingProxy)
		cfg, _ := o.config.(fakeapi.Config)
		if o.longIdle {
			cfg.StreamIdleTimeout = 5 * time.Minute
		}
		codexHome := filepath.Join(h.home, ".codex")
		if err := fakeapi.WriteConfig(codexHome, api.URL(), cfg); err != nil {
			h.t.Fatal(err)
		}
		h.env = fakeapi.HermeticEnv(h.home, codexHome, proxyURL)
		return api, func(scenario string) []e2eReq {
			return fakeReqs(api.Requests(scenario))
		}
	},
	sessionIDOK:  func(id string) bool { return id != "" }, // the thread id
	tool:         "command",
	toolEvidence: "command",
	// Killing the wrapper's pid alone leaves the native app server running
	// (measured: the turn then simply completes). A crash of Codex is the
	// whole group dying; the command it runs in a pseudo-terminal of its
	// own outlives it as an orphan.
	killGroup: true,
}

// cxe2e is one Codex test's world (the terminal suite builds on it too).
type cxe2e = agentWithAPI[*fakeapi.Server]

// codexE2EStart starts a Codex test's fake Responses API (configured by
// cfg), CODEX_HOME and app.
func codexE2EStart(t *testing.T, cfg fakeapi.Config, settings ...string) *cxe2e {
	t.Helper()
	return startAgentWithAPI[*fakeapi.Server](t, codexE2EAgent, e2eOpts{config: cfg}, settings...)
}

// TestCodexE2E runs the scenarios every managed agent shares: plain reply,
// command, second prompt, stall, agent killed, app killed.
func TestCodexE2E(t *testing.T) {
	t.Parallel()
	runAgentE2E(t, codexE2EAgent)
}

// TestCodexE2EApprove: under approval_policy on-request a command that
// asks to leave the sandbox waits on the user; `approve` runs it.
func TestCodexE2EApprove(t *testing.T) {
	t.Parallel()
	h := codexE2EStart(t, fakeapi.Config{ApprovalPolicy: "on-request"})
	h.approveWrite()
}

// TestCodexE2EDeny: `deny` declines the command; it never runs and the
// turn goes on to its end, a review.
func TestCodexE2EDeny(t *testing.T) {
	t.Parallel()
	h := codexE2EStart(t, fakeapi.Config{ApprovalPolicy: "on-request"})
	_, s := h.denyWrite()
	if s.State != sessions.WaitingOnUser || s.WaitReason != sessions.WaitReview {
		t.Errorf("after the denial: %s (%s), want a review", s.State, s.Evidence)
	}
	if reqs := h.api.Requests("write"); len(reqs) != 2 || reqs[1].ToolOutput == "" {
		t.Errorf("requests %+v, want the call and then Codex telling the model it was declined", reqs)
	}
	h.stopApp()
}

// TestCodexE2ERateLimitDrain: a 429 (Codex does not retry it with
// request_max_retries 0) fails the turn with rate_limit; the session is
// held in Recovering with a countdown (no reset time from an API key's 429:
// the policy's 1 minute backoff) and continued, on the same thread.
func TestCodexE2ERateLimitDrain(t *testing.T) {
	t.Parallel()
	h := codexE2EStart(t, fakeapi.Config{}, ce2eFast...)
	held, _ := h.rateLimitDrain("429then_ok", false)
	if !strings.Contains(held.Evidence, "continuing at") {
		t.Errorf("hold evidence %q, want the countdown", held.Evidence)
	}
	h.expectStatuses("429then_ok", 429, 200)
	h.stopApp()
}

// TestCodexE2EAuthEscalated: a 401 (Codex retries it twice, then gives up
// with codexErrorInfo httpConnectionFailed 401, stream_max_retries 2) is
// held for an auth resume; with automatic recovery switched off it is
// escalated.
func TestCodexE2EAuthEscalated(t *testing.T) {
	t.Parallel()
	h := codexE2EStart(t, fakeapi.Config{}, ce2eFast...)
	h.authEscalated([]int{401, 401, 401},
		"state_changed:working", "state_changed:recovering", "state_changed:errored",
		"auth_resume", "state_changed:errored", "escalated")
	h.stopApp()
}

// TestCodexE2EUsageLimitAtReset: a usage limit (codexErrorInfo
// usageLimitExceeded, the window's reset from Codex's rate-limit snapshot)
// is held in Recovering until exactly that reset, then continued.
func TestCodexE2EUsageLimitAtReset(t *testing.T) {
	t.Parallel()
	h := codexE2EStart(t, fakeapi.Config{}, ce2eFast...)
	h.rateLimitDrainAtReset("usage_limit", fakeapi.UsageLimitResetSeconds*time.Second)
	h.stopApp()
}

// TestCodexE2EOverflowCompactRetry: a context window overflow
// (contextWindowExceeded) is compacted (thread/compact/start: Codex
// summarizes the thread through the model) and the turn retried, which
// completes.
func TestCodexE2EOverflowCompactRetry(t *testing.T) {
	t.Parallel()
	h := codexE2EStart(t, fakeapi.Config{}, ce2eFast...)
	id := h.launch("[[scenario:too_long_once]] hi")
	h.overflowRetried(id, 3, "state_changed:working")
	var retried bool
	for _, e := range h.api.Requests("too_long_once") {
		retried = retried || strings.Contains(e.UserText, core.RetryTurnText)
	}
	if !retried {
		t.Error("the fake API never saw the retry")
	}
	// The overflow, Codex's summarizing request for the compaction, the
	// retried turn.
	if got := h.statuses("too_long_once"); !slices.Equal(got, []int{400, 200, 200}) {
		t.Errorf("the fake API answered %v, want 400, then the compaction's and the retry's 200", got)
	}
	h.stopApp()
}

// TestCodexE2EAuthEscalatedAfterResumes: the whole auth budget — three
// resumes of the thread, each failing with 401 again — then escalation.
func TestCodexE2EAuthEscalatedAfterResumes(t *testing.T) {
	t.Parallel()
	h := codexE2EStart(t, fakeapi.Config{}, e2eAuthRetrySettings...)
	h.authBudgetSpent(3 * time.Minute)
	// Four turns (the first and three resumes), each tried three times by
	// Codex (stream_max_retries 2).
	if n := len(h.api.Requests("401")); n != 12 {
		t.Errorf("%d requests, want 12", n)
	}
	h.stopApp()
}

// TestCodexE2EUserInterrupt: `interrupt` stops the turn in flight
// (turn/interrupt, which Codex answers with the turn interrupted); a stop
// the user asked for is a review. (That it is never nudged afterwards is
// the pure rule's, tested in supervisor.)
func TestCodexE2EUserInterrupt(t *testing.T) {
	t.Parallel()
	h := codexE2EStart(t, fakeapi.Config{StreamIdleTimeout: 5 * time.Minute}, ce2eFast...)
	h.api.Handle("hang", func(int, string) fakeapi.Reply { return fakeapi.Reply{Stall: true} })
	id := h.userInterrupt()
	h.stopApp()
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "interrupt_requested"},
		"process_started", "prompt_sent", "state_changed:working", "interrupt_requested",
		"state_changed:waiting_on_user(review)")
}

// TestCodexE2ENetworkOutageWaitedOut: streams cut past Codex's own retries
// (codexErrorInfo responseStreamDisconnected, then "stream disconnected")
// fail the turn with a network failure; the supervisor holds it and retries
// within its window, and the continued turn completes without escalation.
func TestCodexE2ENetworkOutageWaitedOut(t *testing.T) {
	t.Parallel()
	h := codexE2EStart(t, fakeapi.Config{}, append([]string{"supervisor.transient_window_minutes", "1"}, ce2eFast...)...)
	id := h.launch("[[scenario:cut3then_ok]] hi")
	held := h.waitFor(id, "the transient hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.Network || held.NeedsAttention || !strings.Contains(held.Evidence, "retrying at") {
		t.Errorf("hold: failure %+v needs_attention %v evidence %q; want network and a countdown",
			held.Failure, held.NeedsAttention, held.Evidence)
	}
	s := h.waitForWithin(id, "a completed turn", 2*time.Minute, func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview || s.NeedsAttention
	})
	if s.NeedsAttention || !s.Failure.IsZero() {
		t.Fatalf("ended %s with failure %+v, needs_attention %v; want a completed turn", s.State, s.Failure, s.NeedsAttention)
	}
	if got := h.statuses("cut3then_ok"); len(got) != 4 || !h.nudged("cut3then_ok") {
		t.Errorf("requests %v (nudged %v), want three cut then one answered, after the supervisor's retry", got, h.nudged("cut3then_ok"))
	}
	labels := h.labels(id, []string{})
	if slices.Contains(labels, "escalated") {
		t.Errorf("escalated: %s", strings.Join(labels, ", "))
	}
	if want := []string{"state_changed:working", "state_changed:recovering", "state_changed:errored", "transient_retry", "transient_retry"}; len(labels) < len(want) || !slices.Equal(labels[:len(want)], want) {
		t.Errorf("timeline starts %s, want %s", strings.Join(labels, ", "), strings.Join(want, ", "))
	}
	h.stopApp()
}
