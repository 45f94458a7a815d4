//go:build linux

package e2e

// End-to-end tests of the whole app against the real OpenCode CLI (issue
// 13): the app binary runs headless, launches `opencode serve` for a
// session created with `new --agent opencode`, and OpenCode talks only to
// the fake chat completions API (sessions/opencode/fakeapi) on loopback,
// everything else refused by a proxy. The scenarios all managed agents
// share are in agents_test.go; here are OpenCode's description and its
// own tests.

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/opencode/fakeapi"
)

// openCodeE2EAgent: one `opencode serve` for the session (turns on the same
// server and session); the npm package's bin is the native binary itself,
// no wrapper, so a crash is that process dying; it outlives an app killed
// with SIGKILL.
var openCodeE2EAgent = &e2eAgent{
	reportsUsage: true,
	name:         "opencode",
	binary:       fakeapi.OpenCodeBinary,
	setup: func(h *ce2eHarness, _ e2eOpts) (any, func(string) []e2eReq) {
		api, proxyURL := startFakes(h, fakeapi.Start, fakeapi.StartRefusingProxy)
		if err := fakeapi.WriteConfig(h.home, api.URL(), fakeapi.Config{}); err != nil {
			h.t.Fatal(err)
		}
		h.env = fakeapi.HermeticEnv(h.home, proxyURL)
		return api, func(scenario string) []e2eReq {
			return fakeReqs(api.Requests(scenario))
		}
	},
	sessionIDOK:       func(id string) bool { return strings.HasPrefix(id, "ses_") },
	tool:              "bash",
	orphanSurvivesApp: true,
	afterPlainReply:   checkOpenCodeOffline,
}

// checkOpenCodeOffline: nothing but the fake API was asked for anything
// (the proxy refuses the rest; an unexpected route on the fake is a 404).
func checkOpenCodeOffline(h *agentE2E) {
	h.t.Helper()
	for _, e := range h.api.(*fakeapi.Server).Log() {
		if e.Status == 404 {
			h.t.Errorf("OpenCode asked the fake API for %s %s", e.Method, e.Path)
		}
	}
}

// oce2e is one OpenCode test's world.
type oce2e = agentWithAPI[*fakeapi.Server]

// openCodeE2EStart starts an OpenCode test's fake API, hermetic HOME and
// app.
func openCodeE2EStart(t *testing.T, settings ...string) *oce2e {
	t.Helper()
	return startAgentWithAPI[*fakeapi.Server](t, openCodeE2EAgent, e2eOpts{}, settings...)
}

// TestOpenCodeE2E runs the scenarios every managed agent shares: plain
// reply, bash, second prompt, stall (abort), agent killed, app killed.
func TestOpenCodeE2E(t *testing.T) {
	t.Parallel()
	runAgentE2E(t, openCodeE2EAgent)
}

// TestOpenCodeE2EApprove: under the permission mode "default" (bash asks)
// a command waits on the user; `approve` runs it.
func TestOpenCodeE2EApprove(t *testing.T) {
	t.Parallel()
	h := openCodeE2EStart(t)
	h.approveWrite()
}

// TestOpenCodeE2EDeny: `deny` rejects the command (with the user's
// message); it never runs and the turn ends. OpenCode ends the turn on a
// rejection (the tool part errors, the loop stops): a review, not a
// failure.
func TestOpenCodeE2EDeny(t *testing.T) {
	t.Parallel()
	h := openCodeE2EStart(t)
	id, s := h.denyWrite()
	if s.State != sessions.WaitingOnUser || s.WaitReason != sessions.WaitReview || !s.Failure.IsZero() {
		t.Errorf("after the denial: %s (%s) failure %+v, want a review", s.State, s.Evidence, s.Failure)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "permission_answered"},
		"process_started", "prompt_sent", "state_changed:working",
		"state_changed:waiting_on_user(permission)", "permission_answered", "state_changed:working",
		"state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestOpenCodeE2EAuthEscalated: a 401 (not retried by OpenCode) fails the
// turn as auth; it is held for an auth resume, and with automatic recovery
// switched off it is escalated.
func TestOpenCodeE2EAuthEscalated(t *testing.T) {
	t.Parallel()
	h := openCodeE2EStart(t, ce2eFast...)
	h.authEscalated([]int{401},
		"state_changed:working", "state_changed:errored", "auth_resume", "state_changed:errored", "escalated")
	h.stopApp()
}

// TestOpenCodeE2ERateLimitPastRetries: OpenCode retries a 429 by itself
// (the session is Recovering with its retry time meanwhile), gives up after
// its sixth attempt, and the turn fails as a rate limit with the
// provider's retry-after; the supervisor holds it and continues at that
// time, on the same session, and the continued turn completes.
func TestOpenCodeE2ERateLimitPastRetries(t *testing.T) {
	t.Parallel()
	h := openCodeE2EStart(t, ce2eFast...)
	w := h.watch()
	id := h.launch("[[scenario:429past_retries]] hi")
	first := h.waitFor(id, "the turn to be under way", func(s sessions.Session) bool { return s.AgentSessionID != "" })
	s := h.waitForWithin(id, "the continued turn to complete", 3*time.Minute, ce2eReview(2))
	if !s.Failure.IsZero() || s.NeedsAttention || s.AgentSessionID != first.AgentSessionID || s.PID != first.PID {
		t.Errorf("failure %+v needs_attention %v session %s pid %d after the continue (was %s, %d)",
			s.Failure, s.NeedsAttention, s.AgentSessionID, s.PID, first.AgentSessionID, first.PID)
	}
	var agentRetry, held bool
	for _, st := range w.sessionStates(id) {
		if st.State == sessions.Recovering && st.InTurn && st.Failure.Kind == sessions.RateLimit {
			agentRetry = true
		}
		if st.State == sessions.Recovering && !st.InTurn && st.Failure.Kind == sessions.RateLimit && !st.Failure.RetryAt.IsZero() {
			held = true
		}
	}
	if !agentRetry || !held {
		t.Errorf("agent retry seen %v, supervisor hold with the retry time seen %v", agentRetry, held)
	}
	want := append(slices.Repeat([]int{429}, fakeapi.RateLimitAttempts), 200)
	if got := h.statuses("429past_retries"); !slices.Equal(got, want) {
		t.Errorf("the fake API answered %v, want %v", got, want)
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:recovering", "state_changed:errored",
		"rate_limit_drain", "rate_limit_drain", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestOpenCodeE2EOverflowCompacted: a context overflow is compacted by
// OpenCode itself (a summary request to the model), which then goes on;
// the session shows the compaction and the turn completes, with no
// failure left for the supervisor.
func TestOpenCodeE2EOverflowCompacted(t *testing.T) {
	t.Parallel()
	h := openCodeE2EStart(t, ce2eFast...)
	id := h.launch("[[scenario:overflow_once]] hi")
	s := h.waitFor(id, "the turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	if !s.Failure.IsZero() || s.NeedsAttention || s.TurnGeneration != 1 {
		t.Errorf("failure %+v needs_attention %v turn %d after the compaction", s.Failure, s.NeedsAttention, s.TurnGeneration)
	}
	reqs := h.api.Requests("overflow_once")
	if len(reqs) != 2 || reqs[0].Status != 400 || reqs[1].Tools != 0 || reqs[1].Status != 200 {
		t.Errorf("requests %+v, want the overflow, then the summary (no tools)", reqs)
	}
	// After the compaction the history is the summary (which has no
	// marker): OpenCode's continuation of the turn is a plain request.
	if cont := h.api.Requests("text"); len(cont) != 1 || cont[0].Tools == 0 || cont[0].Status != 200 {
		t.Errorf("continuation requests %+v, want one with the tools, answered", cont)
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:compacting", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestOpenCodeE2ETodos: the model keeps a task list with OpenCode's
// todowrite tool; OpenCode publishes it (todo.updated) and the session
// counts it for its time-left band: three items (the cancelled one left
// out), one done, one under way.
func TestOpenCodeE2ETodos(t *testing.T) {
	t.Parallel()
	h := openCodeE2EStart(t)
	id := h.launch("[[scenario:todos]] plan the fix")
	s := h.waitFor(id, "the turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	want := sessions.TodoProgress{Total: 3, Completed: 1, InProgress: 1}
	if s.Todos != want || s.TodosSince.IsZero() {
		t.Errorf("todos %+v since %v, want %+v", s.Todos, s.TodosSince, want)
	}
	if reqs := h.api.Requests("todos"); len(reqs) != 2 {
		t.Errorf("requests %+v, want the todowrite call and the answer after its result", reqs)
	}
	h.stopApp()
}

// TestOpenCodeE2EOverflowUnrecoverable: when OpenCode's own compaction
// overflows too, the turn fails as a context overflow; the supervisor's
// compaction (summarize) fails the same way and the session is escalated.
func TestOpenCodeE2EOverflowUnrecoverable(t *testing.T) {
	t.Parallel()
	h := openCodeE2EStart(t, ce2eFast...)
	h.overflowEscalated("overflow")
	h.stopApp()
}
