//go:build linux

package main

// End-to-end tests of the whole app against the real OpenCode CLI (issue
// 13): the app binary runs headless, launches `opencode serve` for a
// session created with `new --agent opencode`, and OpenCode talks only to
// the fake chat completions API (sessions/opencode/fakeapi) on loopback,
// everything else refused by a proxy. They reuse the Claude suite's harness
// (e2e_claude_test.go): the same app runs, CLI commands, waits, timeline
// checks and cleanup (every process with the test's HOME is killed at the
// end).

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/opencode/fakeapi"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// oce2e is one OpenCode test's world on top of the shared harness.
type oce2e struct {
	*ce2eHarness
	api *fakeapi.Server
}

// openCodeE2EStart sets up a test's fake API, OpenCode's hermetic HOME and
// the app.
func openCodeE2EStart(t *testing.T, cfg fakeapi.Config, settings ...string) *oce2e {
	t.Helper()
	bin := fakeapi.OpenCodeBinary(t)
	appBin, _ := testBinaries(t)
	api, err := fakeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	proxyURL, closeProxy, err := fakeapi.StartRefusingProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeProxy)
	data, err := os.MkdirTemp("", "sse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) })
	h := &ce2eHarness{t: t, app: appBin, home: t.TempDir(), data: data, work: t.TempDir()}
	if err := fakeapi.WriteConfig(h.home, api.URL(), cfg); err != nil {
		t.Fatal(err)
	}
	// The app inherits this environment and the CLI inherits the app's.
	h.env = fakeapi.HermeticEnv(h.home, proxyURL)
	// No session bus: the notifier must not autolaunch a dbus-daemon
	// under this HOME (it would outlive the app).
	h.env = append(h.env, "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(h.home, "no-bus"))
	t.Cleanup(h.cleanup)
	h.mustCLI("settings", "set", "agents.opencode.command", bin)
	for i := 0; i+1 < len(settings); i += 2 {
		h.mustCLI("settings", "set", settings[i], settings[i+1])
	}
	h.startApp()
	return &oce2e{ce2eHarness: h, api: api}
}

// newOpenCode launches a managed OpenCode session in the work directory.
func (h *oce2e) newOpenCode(prompt string, flags ...string) string {
	h.t.Helper()
	args := append([]string{"new", "--agent", "opencode", "--cwd", h.work}, flags...)
	id := strings.TrimSpace(h.mustCLI(append(args, prompt)...))
	if id == "" || strings.ContainsAny(id, " \n\t") {
		h.t.Fatalf("new printed %q, want the session id alone", id)
	}
	return id
}

func (h *oce2e) statuses(scenario string) []int {
	var out []int
	for _, e := range h.api.Requests(scenario) {
		out = append(out, e.Status)
	}
	return out
}

func (h *oce2e) sawText(scenario, text string) bool {
	for _, e := range h.api.Requests(scenario) {
		if strings.Contains(e.UserText, text) {
			return true
		}
	}
	return false
}

// checkOffline: nothing but the fake API was asked for anything (the
// proxy refuses the rest; an unexpected route on the fake is a 404).
func (h *oce2e) checkOffline() {
	h.t.Helper()
	for _, e := range h.api.Log() {
		if e.Status == 404 {
			h.t.Errorf("OpenCode asked the fake API for %s %s", e.Method, e.Path)
		}
	}
}

func (h *oce2e) checkIdentity(s sessions.Session) {
	h.t.Helper()
	if s.Agent != "opencode" || s.Source != sessions.Managed || s.Cwd != h.work {
		h.t.Errorf("agent %q source %v cwd %q, want opencode, managed, %q", s.Agent, s.Source, s.Cwd, h.work)
	}
	if !strings.HasPrefix(s.AgentSessionID, "ses_") {
		h.t.Errorf("agent_session_id %q: the session id was not decoded", s.AgentSessionID)
	}
	if s.PID <= 0 || s.Evidence == "" {
		h.t.Errorf("pid %d evidence %q", s.PID, s.Evidence)
	}
}

// TestOpenCodeE2EPlainReply: a plain reply ends the turn waiting for
// review; ack makes it idle and the server stays for the next prompt.
func TestOpenCodeE2EPlainReply(t *testing.T) {
	h := openCodeE2EStart(t, fakeapi.Config{})
	id := h.newOpenCode("[[scenario:text]] hi", "--name", "plain")
	s := h.waitFor(id, "the reply to be waiting for review", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	h.checkIdentity(s)
	if s.TurnGeneration != 1 || s.InTurn || !s.Failure.IsZero() || s.NeedsAttention || !s.ProcessAlive || s.SkippedLines != 0 {
		t.Errorf("after the reply: turn %d in_turn %v failure %+v needs_attention %v alive %v skipped %d",
			s.TurnGeneration, s.InTurn, s.Failure, s.NeedsAttention, s.ProcessAlive, s.SkippedLines)
	}
	h.mustCLI("ack", id)
	s = h.waitFor(id, "ack to make it idle", ce2eIn(sessions.Idle))
	if !s.ProcessAlive {
		t.Error("ack ended the agent process; it should stay for the next prompt")
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "acknowledged"},
		"process_started", "prompt_sent", "state_changed:working",
		"state_changed:waiting_on_user(review)", "acknowledged", "state_changed:idle")
	if got := h.statuses("text"); !slices.Equal(got, []int{200}) {
		t.Errorf("the fake API answered %v, want one 200", got)
	}
	h.checkOffline()
	h.stopApp()
}

// TestOpenCodeE2ETool: a bash call is an open tool while it runs, then the
// turn completes with its output sent back.
func TestOpenCodeE2ETool(t *testing.T) {
	h := openCodeE2EStart(t, fakeapi.Config{})
	w := h.watch()
	id := h.newOpenCode("[[scenario:tool]] run it")
	h.waitFor(id, "the tool turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	w.waitMessage(t, "the review", ce2eSessionMsg(id, ce2eIn(sessions.WaitingOnUser, sessions.WaitReview)))
	var running, finished bool
	for _, s := range w.sessionStates(id) {
		for _, c := range s.OpenTools {
			if s.State == sessions.Working && len(s.OpenTools) == 1 && c.Name == "bash" {
				running = true
			}
		}
		if running && s.State == sessions.Working && len(s.OpenTools) == 0 {
			finished = true
		}
	}
	if !running || !finished {
		t.Errorf("the stream never showed bash open and then finished (running %v, finished %v)", running, finished)
		for _, s := range w.sessionStates(id) {
			t.Logf("  %s: %s (open %d)", s.State, s.Evidence, len(s.OpenTools))
		}
	}
	reqs := h.api.Requests("tool")
	if len(reqs) != 2 || !strings.Contains(reqs[1].ToolOutput, "hi") {
		t.Errorf("requests %+v, want the call and then its output hi", reqs)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent"},
		"process_started", "prompt_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestOpenCodeE2ESecondPrompt: `send` starts turn 2 on the same server and
// OpenCode session.
func TestOpenCodeE2ESecondPrompt(t *testing.T) {
	h := openCodeE2EStart(t, fakeapi.Config{})
	id := h.newOpenCode("[[scenario:text]] first")
	first := h.waitFor(id, "the first reply", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	h.mustCLI("send", id, "second")
	s := h.waitFor(id, "the second reply", ce2eReview(2))
	if s.PID != first.PID || !s.ProcessAlive || s.AgentSessionID != first.AgentSessionID {
		t.Errorf("turn 2 ran on pid %d (alive %v) session %s; turn 1 on pid %d session %s",
			s.PID, s.ProcessAlive, s.AgentSessionID, first.PID, first.AgentSessionID)
	}
	reqs := h.api.Requests("text")
	if len(reqs) != 2 || reqs[1].UserText != "second" {
		t.Errorf("requests %+v, want two, the second carrying the prompt", reqs)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent"},
		"process_started", "prompt_sent", "state_changed:working", "state_changed:waiting_on_user(review)",
		"prompt_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestOpenCodeE2EApprove: under the permission mode "default" (bash asks)
// a command waits on the user; `approve` runs it.
func TestOpenCodeE2EApprove(t *testing.T) {
	h := openCodeE2EStart(t, fakeapi.Config{})
	id := h.newOpenCode("[[scenario:write]] make it", "--permission-mode", "default")
	s := h.waitFor(id, "the permission request", ce2eIn(sessions.WaitingOnUser, sessions.WaitPermission))
	if s.Permission == nil || s.Permission.Tool != "bash" || !s.InTurn {
		t.Fatalf("permission %+v in_turn %v, want a pending bash in a running turn", s.Permission, s.InTurn)
	}
	out := filepath.Join(h.work, "build", "out.txt")
	if _, err := os.Stat(out); err == nil {
		t.Fatal("build/out.txt exists before the command was approved")
	}
	h.mustCLI("approve", id)
	s = h.waitFor(id, "the approved turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	if s.Permission != nil {
		t.Errorf("permission %+v still pending", s.Permission)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "permission_answered"},
		"process_started", "prompt_sent", "state_changed:working",
		"state_changed:waiting_on_user(permission)", "permission_answered", "state_changed:working",
		"state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestOpenCodeE2ERateLimitPastRetries: OpenCode retries a 429 by itself
// (the session is Recovering with its retry time meanwhile), gives up after
// its sixth attempt, and the turn fails as a rate limit with the
// provider's retry-after; the supervisor holds it and continues at that
// time, on the same session, and the continued turn completes.
func TestOpenCodeE2ERateLimitPastRetries(t *testing.T) {
	h := openCodeE2EStart(t, fakeapi.Config{}, ce2eFast...)
	w := h.watch()
	id := h.newOpenCode("[[scenario:429past_retries]] hi")
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
	h := openCodeE2EStart(t, fakeapi.Config{}, ce2eFast...)
	id := h.newOpenCode("[[scenario:overflow_once]] hi")
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

// TestOpenCodeE2EOverflowUnrecoverable: when OpenCode's own compaction
// overflows too, the turn fails as a context overflow; the supervisor's
// compaction (summarize) fails the same way and the session is escalated.
func TestOpenCodeE2EOverflowUnrecoverable(t *testing.T) {
	h := openCodeE2EStart(t, fakeapi.Config{}, ce2eFast...)
	id := h.newOpenCode("[[scenario:overflow]] hi")
	s := h.waitForWithin(id, "the escalation", 3*time.Minute, func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.ContextOverflow {
		t.Errorf("escalated as %s with %+v, want errored context_overflow", s.State, s.Failure)
	}
	labels := h.labels(id, []string{})
	t.Logf("timeline: %s", strings.Join(labels, ", "))
	if !slices.Contains(labels, "escalated") || !slices.Contains(labels, "state_changed:compacting") {
		t.Errorf("timeline %s, want a compaction and the escalation", strings.Join(labels, ", "))
	}
	h.stopApp()
}

// TestOpenCodeE2EAuthEscalated: a 401 (not retried by OpenCode) fails the
// turn as auth; it is held for an auth resume, and with automatic recovery
// switched off it is escalated.
func TestOpenCodeE2EAuthEscalated(t *testing.T) {
	h := openCodeE2EStart(t, fakeapi.Config{}, ce2eFast...)
	id := h.newOpenCode("[[scenario:401]] hi")
	held := h.waitFor(id, "the auth hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.Auth || held.NeedsAttention || !strings.Contains(held.Evidence, "resuming at") {
		t.Errorf("hold: failure %+v needs_attention %v evidence %q", held.Failure, held.NeedsAttention, held.Evidence)
	}
	h.mustCLI("settings", "set", "supervisor.auto_recover_enabled", "false")
	s := h.waitFor(id, "the escalation", func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.Auth {
		t.Errorf("escalated as %s with %+v, want errored auth", s.State, s.Failure)
	}
	if got := h.statuses("401"); !slices.Equal(got, []int{401}) {
		t.Errorf("the fake API answered %v, want one 401 (OpenCode does not retry it)", got)
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:errored", "auth_resume", "state_changed:errored", "escalated")
	h.stopApp()
}

// TestOpenCodeE2EStallInterruptNudge: a model stream that goes silent is
// suspect, then interrupted (abort), and the nudge on the same server and
// session completes the work.
func TestOpenCodeE2EStallInterruptNudge(t *testing.T) {
	h := openCodeE2EStart(t, fakeapi.Config{}, append([]string{
		"supervisor.stall_suspect_minutes", "0.25", "supervisor.stall_hard_minutes", "0.5"}, ce2eFast...)...)
	id := h.newOpenCode("[[scenario:stall]] go")
	first := h.waitFor(id, "the silent stream to be suspect", ce2eIn(sessions.Suspect))
	s := h.waitFor(id, "the nudged turn to complete", ce2eReview(2))
	if s.PID != first.PID || !s.ProcessAlive || s.AgentSessionID != first.AgentSessionID {
		t.Errorf("the nudge ran on pid %d (alive %v) session %s, want the live process %d session %s",
			s.PID, s.ProcessAlive, s.AgentSessionID, first.PID, first.AgentSessionID)
	}
	if !h.sawText("stall", core.NudgeText) {
		t.Error("the fake API never received the continuation nudge")
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "marked_suspect", "stall_interrupt", "state_changed:interrupted",
		"nudge_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestOpenCodeE2EAgentKilledMidTool: `opencode serve` (the npm package's
// bin is the native binary itself, no wrapper) killed with SIGKILL while a
// command runs is interrupted, and the nudge resumes the OpenCode session
// in a new server, which completes the work.
func TestOpenCodeE2EAgentKilledMidTool(t *testing.T) {
	h := openCodeE2EStart(t, fakeapi.Config{}, ce2eFast...)
	id := h.newOpenCode("[[scenario:slowtool]] run it")
	before := h.waitOpenTool(id, "bash")
	h.waitProc("sleep 60")
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing opencode %d: %v", before.PID, err)
	}
	// The command it ran outlives it as an orphan.
	for _, pid := range claudeE2EProcsWithHome(h.home) {
		if pid != h.run.cmd.Process.Pid && pid != before.PID {
			h.orphans = append(h.orphans, pid)
		}
	}
	s := h.waitFor(id, "the resumed turn to complete", ce2eReview(2))
	if s.PID == before.PID || !s.ProcessAlive || s.AgentSessionID != before.AgentSessionID {
		t.Errorf("after the resume: pid %d (alive %v) session %s; want a new process on session %s (killed pid %d)",
			s.PID, s.ProcessAlive, s.AgentSessionID, before.AgentSessionID, before.PID)
	}
	if !h.sawText("slowtool", core.NudgeText) {
		t.Error("the fake API never received the continuation nudge")
	}
	h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "state_changed:interrupted",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestOpenCodeE2EDeny: `deny` rejects the command (with the user's
// message); it never runs and the turn ends.
func TestOpenCodeE2EDeny(t *testing.T) {
	h := openCodeE2EStart(t, fakeapi.Config{})
	id := h.newOpenCode("[[scenario:write]] make it", "--permission-mode", "default")
	h.waitFor(id, "the permission request", ce2eIn(sessions.WaitingOnUser, sessions.WaitPermission))
	h.mustCLI("deny", id, "--message", "not now")
	s := h.waitFor(id, "the turn to end", func(s sessions.Session) bool { return !s.InTurn && s.Permission == nil })
	if _, err := os.Stat(filepath.Join(h.work, "build", "out.txt")); err == nil {
		t.Error("the denied command ran")
	}
	// OpenCode ends the turn on a rejection (the tool part errors, the
	// loop stops): a review, not a failure.
	if s.State != sessions.WaitingOnUser || s.WaitReason != sessions.WaitReview || !s.Failure.IsZero() {
		t.Errorf("after the denial: %s (%s) failure %+v, want a review", s.State, s.Evidence, s.Failure)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "permission_answered"},
		"process_started", "prompt_sent", "state_changed:working",
		"state_changed:waiting_on_user(permission)", "permission_answered", "state_changed:working",
		"state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestOpenCodeE2EAppKilledMidTurn: the app killed with SIGKILL while an
// OpenCode turn is in flight comes back with the session Interrupted, stops
// the server the dead app left behind, resumes the session in a new server
// and nudges it to completion.
func TestOpenCodeE2EAppKilledMidTurn(t *testing.T) {
	h := openCodeE2EStart(t, fakeapi.Config{}, ce2eFast...)
	id := h.newOpenCode("[[scenario:stall]] go")
	before := h.waitFor(id, "the turn to be under way", func(s sessions.Session) bool {
		return s.State == sessions.Working && s.AgentSessionID != "" && len(h.api.Requests("stall")) > 0
	})
	h.killApp()
	if !claudeE2EAlive(before.PID) {
		t.Fatalf("the server %d died with the app; nothing to reap", before.PID)
	}
	h.startApp()
	s := h.waitFor(id, "the resumed turn to complete", ce2eReview(2))
	if s.PID == before.PID || !s.ProcessAlive || s.AgentSessionID != before.AgentSessionID {
		t.Errorf("after the restart: pid %d (alive %v) session %q; before: pid %d session %q",
			s.PID, s.ProcessAlive, s.AgentSessionID, before.PID, before.AgentSessionID)
	}
	if claudeE2EAlive(before.PID) {
		t.Errorf("the opencode %d of the killed app still runs next to the resumed %d", before.PID, s.PID)
	}
	if !h.sawText("stall", core.NudgeText) {
		t.Error("the fake API never received the continuation nudge")
	}
	h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "boot_reconciled",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}
