//go:build linux

package e2e

// End-to-end tests of the whole app against the real Claude Code CLI (issues
// 3, 4 and 15): the app binary runs headless as a child process, launches
// the real CLI, which talks only to the fake Anthropic API (fakeapi) on
// loopback, everything else refused by a proxy. The scenarios all managed
// agents share are in agents_test.go, the harness in harness_test.go; here
// are Claude's description and its own tests.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// claudeE2EAgent: Claude Code runs one `claude -p --input-format
// stream-json` for the session (turns on the same process); a resume is
// `claude --resume`. The CLI is its own process (no wrapper), and each Bash
// command runs in a session of its own (setsid), so it outlives the agent
// whichever way the agent is killed.
var claudeE2EAgent = &e2eAgent{
	reportsUsage: true,
	name:         "claude",
	binary:       fakeapi.ClaudeBinary,
	setup: func(h *ce2eHarness, o e2eOpts) (any, func(string) []e2eReq) {
		api, proxyURL := startFakes(h, fakeapi.Start, fakeapi.StartRefusingProxy)
		env, _ := o.config.(ce2eOptions)
		h.env = env.apply(fakeapi.HermeticEnv(h.home, api.URL(), proxyURL))
		return api, func(scenario string) []e2eReq {
			return e2eReqs(claudeMessages(api, scenario), claudeE2EReq)
		}
	},
	sessionIDOK: func(id string) bool { return id != "" }, // from the CLI's system/init
	tool:        "Bash",
	toolRunning: "running Bash",
	toolDone:    "Bash finished",
	slowProc:    "sleep 30", // fakeapi.SlowToolCommand
	// The CLI outlives the app killed mid-turn (the orphan the scenario is
	// about); the booting supervisor stops it, and records that it did.
	orphanSurvivesApp: true,
	reapRecorded:      true,
	waitPersisted:     waitClaudeTranscript,
	resumeWithin:      ce2eWait,
	afterSecondPrompt: func(h *agentE2E) {
		// The second request carries the whole conversation: same CLI
		// session.
		reqs := claudeMessages(h.api.(*fakeapi.Server), "text")
		if n := len(reqs[1].Request.Messages); n < 3 {
			h.t.Errorf("second request has %d messages, want the whole conversation", n)
		}
	},
}

// claudeMessages returns the fake API's /v1/messages requests of one
// scenario ("" for all of them).
func claudeMessages(api *fakeapi.Server, scenario string) []fakeapi.Entry {
	var out []fakeapi.Entry
	for _, e := range api.Log() {
		if e.Path == "/v1/messages" && (scenario == "" || e.Scenario == scenario) {
			out = append(out, e)
		}
	}
	return out
}

// claudeE2EReq is what the shared scenarios read of a request: the text of
// its last user message, and the tool_result it carries back.
func claudeE2EReq(e fakeapi.Entry) e2eReq {
	r := e2eReq{Status: e.Status, UserText: e.Request.LastUserText(), At: e.At}
	for _, b := range e.Request.LastUserMessage().Blocks() {
		if b.Type == "tool_result" {
			r.ToolOutput = string(b.Content)
		}
	}
	return r
}

// waitClaudeTranscript waits until the CLI has written what the test kills
// it after to its transcript, $HOME/.claude/projects/<cwd with every
// non-alphanumeric character replaced by '-'>/<session id>.jsonl: the tool
// call, or the stalled scenario's prompt. (Killed earlier, the CLI may not
// have saved the session at all, and `claude --resume` then fails with "No
// conversation found with session ID".)
func waitClaudeTranscript(h *agentE2E, agentSession string, what e2eRecord) {
	h.t.Helper()
	mangled := []byte(h.work)
	for i, c := range mangled {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			mangled[i] = '-'
		}
	}
	substr := `"tool_use"`
	if what == recordedPrompt {
		substr = "[[scenario:stall]]"
	}
	h.waitFile(filepath.Join(h.home, ".claude", "projects", string(mangled), agentSession+".jsonl"), substr, ce2eWait)
}

// ce2eOptions adjust one Claude test's hermetic environment.
type ce2eOptions struct {
	// settings are set, in order, before the app starts (key, value pairs).
	settings []string
	// env adds "KEY=VALUE" entries to the app's environment (and so to the
	// CLI's, which inherits it); a later entry overrides an earlier one.
	env []string
	// drop removes these variables from the hermetic environment.
	drop []string
}

// apply returns env without the dropped variables and with the added ones.
func (o ce2eOptions) apply(env []string) []string {
	env = slices.DeleteFunc(env, func(kv string) bool {
		for _, k := range o.drop {
			if strings.HasPrefix(kv, k+"=") {
				return true
			}
		}
		return false
	})
	return append(env, o.env...)
}

// cle2e is one Claude test's world.
type cle2e = agentWithAPI[*fakeapi.Server]

// claudeE2EStart sets up a Claude test's world and starts the app on it.
func claudeE2EStart(t *testing.T, o ce2eOptions) *cle2e {
	t.Helper()
	return startAgentWithAPI[*fakeapi.Server](t, claudeE2EAgent, e2eOpts{config: o}, o.settings...)
}

func ce2eStatuses(es []fakeapi.Entry) []int {
	out := make([]int, len(es))
	for i, e := range es {
		out[i] = e.Status
	}
	return out
}

// TestClaudeE2E runs the scenarios every managed agent shares: plain reply,
// Bash tool, second prompt, stall, agent killed (the resume is `claude
// --resume`), app killed.
func TestClaudeE2E(t *testing.T) {
	t.Parallel()
	runAgentE2E(t, claudeE2EAgent)
}

// TestClaudeE2ERateLimitRetried: two 429s the CLI retries itself put the
// session in recovering with the CLI's countdown, then the answer arrives.
func TestClaudeE2ERateLimitRetried(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{})
	w := h.watch()
	id := h.launch("[[scenario:429then_ok]] hi")
	s := h.waitFor(id, "the retried turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	w.waitMessage(t, "the review", ce2eSessionMsg(id, ce2eIn(sessions.WaitingOnUser, sessions.WaitReview)))
	if !s.Failure.IsZero() {
		t.Errorf("failure %+v after the answer, want none", s.Failure)
	}
	var recovering *sessions.Session
	for _, s := range w.sessionStates(id) {
		if s.State == sessions.Recovering {
			recovering = &s
			break
		}
	}
	if recovering == nil {
		t.Error("the stream never showed the session recovering")
	} else if recovering.Failure.Kind != sessions.RateLimit || recovering.Failure.RetryAt.IsZero() || !recovering.InTurn {
		t.Errorf("while the CLI retried: failure %+v in_turn %v, want rate_limit with a retry time, turn in flight",
			recovering.Failure, recovering.InTurn)
	}
	if got := ce2eStatuses(claudeMessages(h.api, "429then_ok")); !slices.Equal(got, []int{429, 429, 200}) {
		t.Errorf("the fake API answered %v, want 429, 429, 200", got)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent"},
		"process_started", "prompt_sent", "state_changed:working", "state_changed:recovering",
		"state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestClaudeE2EEscalatedAtOnce: with automatic recovery off a failed turn
// is escalated at once, errored with the failure's kind and no turn in
// flight: a prompt-too-long 400 as context_overflow; a 401 (retried by the
// CLI, CLAUDE_CODE_MAX_RETRIES=2, then given up) as auth.
func TestClaudeE2EEscalatedAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, scenario string
		kind           sessions.FailureKind
		// statuses checks the fake API's answers, when set (as want says).
		statuses func([]int) bool
		want     string
		timeline []string
	}{
		{"PromptTooLong", "too_long", sessions.ContextOverflow, nil, "", []string{
			"process_started", "prompt_sent", "state_changed:working", "state_changed:errored", "escalated"}},
		{"AuthFailure", "401", sessions.Auth, func(got []int) bool { return len(got) == 3 && got[0] == 401 },
			"three 401s (CLAUDE_CODE_MAX_RETRIES=2)", []string{
				"process_started", "prompt_sent", "state_changed:working", "state_changed:recovering",
				"state_changed:errored", "escalated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := claudeE2EStart(t, ce2eOptions{settings: []string{
				"supervisor.auto_recover_enabled", "false", "supervisor.tick_seconds", "5"}})
			id := h.launch("[[scenario:" + tc.scenario + "]] hi")
			s := h.waitFor(id, "the failure to be escalated", func(s sessions.Session) bool {
				return s.State == sessions.Errored && s.NeedsAttention
			})
			if s.Failure.Kind != tc.kind || s.InTurn {
				t.Errorf("failure %+v in_turn %v, want %s and no turn in flight", s.Failure, s.InTurn, tc.kind)
			}
			if got := ce2eStatuses(claudeMessages(h.api, tc.scenario)); tc.statuses != nil && !tc.statuses(got) {
				t.Errorf("the fake API answered %v, want %s", got, tc.want)
			}
			h.expectTimeline(id, []string{"process_started", "prompt_sent"}, tc.timeline...)
			h.stopApp()
		})
	}
}

// TestClaudeE2EPermissionApproved: a Bash command that writes asks for
// permission (default mode); `approve` runs it and the turn completes.
func TestClaudeE2EPermissionApproved(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{})
	if s := h.approveWrite(); s.Permission == nil || s.Permission.RequestID == "" {
		t.Errorf("permission %+v, want the CLI's request id", s.Permission)
	}
}

// ce2eAfterCompaction is the evidence the session had when the compaction
// the supervisor asked for (the first overflow_redrive) ended: the
// Compacting → Working change that follows it.
func ce2eAfterCompaction(rows []ce2eRow) string {
	i := slices.IndexFunc(rows, func(r ce2eRow) bool { return r.Kind == "overflow_redrive" })
	if i < 0 {
		return ""
	}
	seen := false
	for _, r := range rows[i:] {
		switch l := r.label(); {
		case l == "state_changed:compacting":
			seen = true
		case seen && l == "state_changed:working":
			return r.message()
		}
	}
	return ""
}

// TestClaudeE2EOverflowFirstTurn (d): the very first request overflows.
// The supervisor sends /compact — which the CLI cannot do on a
// single-exchange conversation ("Not enough messages to compact.") — then
// retries the turn, which completes.
func TestClaudeE2EOverflowFirstTurn(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: ce2eFast})
	id := h.launch("[[scenario:too_long_once]] hi")
	rows := h.overflowRetried(id, 3, "state_changed:working")
	var compact, retried bool
	for _, e := range claudeMessages(h.api, "too_long_once") {
		compact = compact || strings.Contains(e.Request.LastUserText(), "/compact")
		retried = retried || strings.Contains(e.Request.LastUserText(), core.RetryTurnText)
	}
	if !compact || !retried {
		t.Errorf("the fake API saw /compact %v, the retry %v; want both", compact, retried)
	}
	if msg := ce2eAfterCompaction(rows); !strings.Contains(msg, "compaction failed (Not enough messages to compact.)") {
		t.Errorf("after the supervisor's /compact: %q, want the CLI's refusal", msg)
	}
	h.stopApp()
}

// TestClaudeE2EOverflowCompactRetry (d): a later turn overflows (the CLI's
// own auto-compaction gives up first); the supervisor's /compact really
// compacts the conversation, the turn is retried and completes.
func TestClaudeE2EOverflowCompactRetry(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: ce2eFast})
	id := h.launch("[[scenario:too_long_2nd_turn]] first")
	h.waitFor(id, "the first turn", ce2eReview(1))
	h.mustCLI("send", id, "second")
	rows := h.overflowRetried(id, 4,
		"state_changed:working", "state_changed:waiting_on_user(review)",
		"state_changed:working", "state_changed:compacting", "state_changed:working")
	var compactions int
	for _, e := range claudeMessages(h.api, "too_long_2nd_turn") {
		if fakeapi.IsCompaction(e.Request) {
			compactions++
		}
	}
	if compactions != 1 {
		t.Errorf("%d compaction requests, want 1", compactions)
	}
	if msg := ce2eAfterCompaction(rows); msg != "compaction finished; turn continues" {
		t.Errorf("after the supervisor's /compact: %q, want a finished compaction", msg)
	}
	h.stopApp()
}

// TestClaudeE2ERateLimitDrainBackoff (e): 429s outlast the CLI's own
// retries; the failed turn is held in Recovering with a countdown (no
// reset time from the API key's 429: the policy's backoff, 1 minute) and
// continued when it ends.
func TestClaudeE2ERateLimitDrainBackoff(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: ce2eFast})
	id := h.launch("[[scenario:429x3then_ok]] hi")
	held := h.waitFor(id, "the drain hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.RateLimit || held.Supervision.NextAttemptAt.IsZero() ||
		!strings.Contains(held.Evidence, "continuing at") {
		t.Errorf("hold: failure %+v next attempt %v evidence %q; want rate_limit and a countdown",
			held.Failure, held.Supervision.NextAttemptAt, held.Evidence)
	}
	s := h.waitForWithin(id, "the continued turn to complete", 3*time.Minute, ce2eReview(2))
	if !s.Failure.IsZero() || s.NeedsAttention {
		t.Errorf("failure %+v needs_attention %v after the continue", s.Failure, s.NeedsAttention)
	}
	if got := ce2eStatuses(claudeMessages(h.api, "429x3then_ok")); !slices.Equal(got, []int{429, 429, 429, 200}) {
		t.Errorf("the fake API answered %v, want three 429s then 200", got)
	}
	rows := h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:recovering", "state_changed:errored",
		"rate_limit_drain", "rate_limit_drain", "state_changed:working", "state_changed:waiting_on_user(review)")
	var drains []ce2eRow
	for _, r := range rows {
		if r.Kind == "rate_limit_drain" {
			drains = append(drains, r)
		}
	}
	if len(drains) == 2 {
		if wait := drains[1].Time.Sub(drains[0].Time); wait < time.Minute || wait > time.Minute+10*time.Second {
			t.Errorf("continued %s after scheduling, want the 1 min backoff (within a tick)", wait)
		}
	}
	h.stopApp()
}

// TestClaudeE2ERateLimitDrainAtReset (e): a plan's rate limit (the unified
// rate-limit headers, which the CLI honours for a claude.ai login) makes the
// CLI print a rate_limit_event with resetsAt and give up at once; the
// session is held in Recovering until exactly that reset and then
// continued.
func TestClaudeE2ERateLimitDrainAtReset(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{
		settings: ce2eFast,
		// A subscription login instead of an API key: the CLI reads the
		// unified rate-limit headers only for those.
		drop: []string{"ANTHROPIC_API_KEY"},
		env:  []string{"CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-fake"},
	})
	h.rateLimitDrainAtReset("429unified", fakeapi.UnifiedRateLimitWindow)
	if got := ce2eStatuses(claudeMessages(h.api, "429unified")); !slices.Equal(got, []int{429, 200}) {
		t.Errorf("the fake API answered %v, want 429 (no CLI retry) then 200", got)
	}
	h.stopApp()
}

// TestClaudeE2EAuthEscalated (f): a 401 is held in Recovering while the
// supervisor waits for refreshed credentials (a resume every 5 minutes,
// the policy's default); when nothing automatic is left — here automatic
// recovery is switched off during the hold, which takes effect at the next
// tick — it is escalated: Errored, needs_attention in `ls --json`, and the
// escalation published; `ack` clears it.
func TestClaudeE2EAuthEscalated(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: ce2eFast})
	w := h.watch()
	id := h.launch("[[scenario:401]] hi")
	held := h.waitFor(id, "the auth hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.Auth || held.NeedsAttention || !strings.Contains(held.Evidence, "resuming at") {
		t.Errorf("hold: failure %+v needs_attention %v evidence %q", held.Failure, held.NeedsAttention, held.Evidence)
	}
	if wait := time.Until(held.Supervision.NextAttemptAt); wait < 4*time.Minute || wait > 5*time.Minute {
		t.Errorf("next resume in %s, want the 5 min auth interval", wait)
	}
	h.mustCLI("settings", "set", "supervisor.auto_recover_enabled", "false")
	s := h.waitFor(id, "the escalation", func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.Auth {
		t.Errorf("escalated as %s with %+v, want honestly errored auth", s.State, s.Failure)
	}
	var listed bool
	for _, l := range h.ls() {
		listed = listed || l.ID == id && l.NeedsAttention
	}
	if !listed {
		t.Error("ls --json does not show needs_attention")
	}
	// Published for the notifier, on the live stream.
	w.waitMessage(t, "the escalation", func(m localapi.Message) bool {
		return m.Type == localapi.MsgEscalation && m.Session != nil && m.Session.ID == id && m.Session.NeedsAttention
	})
	h.mustCLI("ack", id)
	h.waitFor(id, "ack to clear needs_attention", func(s sessions.Session) bool { return !s.NeedsAttention })
	h.expectTimeline(id, []string{"acknowledged"},
		"state_changed:working", "state_changed:recovering", "state_changed:errored",
		"auth_resume", "state_changed:errored", "escalated", "acknowledged", "state_changed:idle")
	h.stopApp()
}

// TestClaudeE2EAuthEscalatedAfterResumes (f), the whole budget: three
// resumes (supervisor.auth_retry_minutes apart, shortened here), each
// failing again, then escalation.
func TestClaudeE2EAuthEscalatedAfterResumes(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: e2eAuthRetrySettings})
	h.authBudgetSpent(5 * time.Minute)
	h.stopApp()
}

// --- issue 15: a network outage longer than the CLI's own retries ---

// ce2eTransientRows returns the transient_retry rows of a timeline.
func ce2eTransientRows(rows []ce2eRow) []ce2eRow {
	var out []ce2eRow
	for _, r := range rows {
		if r.Kind == core.TimelineTransientRetry {
			out = append(out, r)
		}
	}
	return out
}

// TestClaudeE2ENetworkOutageWaitedOut: the fake API resets the first six
// requests of the conversation, streams and non-streaming fallbacks alike,
// which outlasts the CLI's own retries (CLAUDE_CODE_MAX_RETRIES=2): its turn
// fails with "Unable to connect to API (ECONNRESET)". The supervisor holds
// the session in Recovering with a countdown and retries (a 1-minute
// window: every wait 10 s) until a turn completes, without escalating.
func TestClaudeE2ENetworkOutageWaitedOut(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: append([]string{"supervisor.transient_window_minutes", "1"}, ce2eFast...)})
	id := h.launch("[[scenario:cut6then_ok]] hi")
	held := h.waitFor(id, "the transient hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.Network || held.NeedsAttention || !strings.Contains(held.Evidence, "retrying at") ||
		!strings.Contains(held.Failure.Message, "ECONNRESET") || held.Supervision.NextAttemptAt.IsZero() {
		t.Errorf("hold: failure %+v needs_attention %v evidence %q next %v; want network, a countdown, no escalation",
			held.Failure, held.NeedsAttention, held.Evidence, held.Supervision.NextAttemptAt)
	}
	s := h.waitForWithin(id, "a completed turn", 2*time.Minute, func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview || s.NeedsAttention
	})
	if s.NeedsAttention || !s.Failure.IsZero() {
		t.Fatalf("ended %s with failure %+v, needs_attention %v; want a completed turn", s.State, s.Failure, s.NeedsAttention)
	}
	// The next tick closes the incident and refills its budget.
	h.waitFor(id, "the incident to close", func(s sessions.Session) bool { return s.Supervision == (sessions.Supervision{}) })
	reqs := claudeMessages(h.api, "cut6then_ok")
	for i, e := range reqs {
		if cut := i < fakeapi.CutThenOKCuts; e.Cut != cut {
			t.Errorf("request %d: cut %v, want %v", i+1, e.Cut, cut)
		}
	}
	if len(reqs) != fakeapi.CutThenOKCuts+1 || !h.nudged("cut6then_ok") {
		t.Errorf("%d requests (nudged %v), want %d cut then one answered, after a retry", len(reqs), h.nudged("cut6then_ok"), fakeapi.CutThenOKCuts)
	}
	rows := h.timeline(id)
	labels := h.labels(id, []string{})
	if slices.Contains(labels, "escalated") {
		t.Errorf("escalated: %s", strings.Join(labels, ", "))
	}
	if want := []string{"state_changed:working", "state_changed:recovering", "state_changed:errored", "transient_retry", "transient_retry"}; len(labels) < len(want) || !slices.Equal(labels[:len(want)], want) {
		t.Errorf("timeline starts %s, want %s", strings.Join(labels, ", "), strings.Join(want, ", "))
	}
	tr := ce2eTransientRows(rows)
	for _, r := range tr {
		t.Logf("%s %s", r.Time.Format("15:04:05.000"), r.message())
	}
	var retries int
	for _, r := range tr {
		if r.detail()["action"] == "continue" {
			retries++
			if r.detail()["outcome"] != "ok" {
				t.Errorf("a retry's outcome: %s", r.Detail)
			}
		}
	}
	last := tr[len(tr)-1].message()
	count := fmt.Sprintf("retried %d times", retries)
	if retries == 1 {
		count = "retried once"
	}
	if retries == 0 || !strings.HasPrefix(last, "recovered: API unreachable or failing for ") ||
		!strings.Contains(last, count) || !strings.Contains(last, "; continued at ") {
		t.Errorf("%d retries; the incident's account %q", retries, last)
	}
	h.stopApp()
}

// TestClaudeE2ENetworkOutageLongerThanWindowEscalates: every request is
// reset, for good. With a 15-second window (waits of 2.5 s, a retry per
// 5-second tick) the supervisor retries until the window is spent, then
// escalates once, with the agent's error in the evidence, and sends
// nothing more.
func TestClaudeE2ENetworkOutageLongerThanWindowEscalates(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: append([]string{"supervisor.transient_window_minutes", "0.25"}, ce2eFast...)})
	w := h.watch()
	id := h.launch("[[scenario:cut]] hi")
	s := h.waitForWithin(id, "the escalation", 2*time.Minute, func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.Network || !strings.Contains(s.Failure.Message, "ECONNRESET") {
		t.Errorf("escalated as %s with %+v, want errored network with the agent's error", s.State, s.Failure)
	}
	w.waitMessage(t, "the escalation", func(m localapi.Message) bool {
		return m.Type == localapi.MsgEscalation && m.Session != nil && m.Session.ID == id
	})
	// Three more ticks: nothing is retried or escalated again.
	sent := len(claudeMessages(h.api, "cut"))
	deadline := time.Now().Add(16 * time.Second)
	for time.Now().Before(deadline) {
		if s := h.show(id); !s.NeedsAttention || s.State != sessions.Errored {
			t.Fatalf("after the escalation the session became %s (needs_attention %v)", s.State, s.NeedsAttention)
		}
		time.Sleep(time.Second)
	}
	if n := len(claudeMessages(h.api, "cut")); n != sent {
		t.Errorf("%d requests after the escalation", n-sent)
	}
	var escalations int
	for _, m := range w.messages() {
		if m.Type == localapi.MsgEscalation && m.Session != nil && m.Session.ID == id {
			escalations++
		}
	}
	if escalations != 1 {
		t.Errorf("%d escalations published, want 1", escalations)
	}
	rows := h.timeline(id)
	var esc []ce2eRow
	for _, r := range rows {
		if r.Kind == core.TimelineEscalated {
			esc = append(esc, r)
		}
	}
	if len(esc) != 1 {
		t.Fatalf("%d escalated rows, want 1: %s", len(esc), strings.Join(h.labels(id, nil), ", "))
	}
	msg := esc[0].message()
	t.Logf("timeline: %s\nescalation: %s", strings.Join(h.labels(id, []string{}), ", "), msg)
	for _, part := range []string{"ECONNRESET", "API unreachable or failing for", "retried", "the 15 s window for transient failures is spent"} {
		if !strings.Contains(msg, part) {
			t.Errorf("escalation %q lacks %q", msg, part)
		}
	}
	var retries int
	for _, r := range ce2eTransientRows(rows) {
		if r.detail()["action"] == "continue" {
			retries++
			if r.Time.After(esc[0].Time) {
				t.Errorf("a retry after the escalation: %s", r.Detail)
			}
		}
	}
	if retries == 0 {
		t.Error("escalated without a single retry")
	}
	h.stopApp()
}
