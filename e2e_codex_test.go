//go:build linux

package main

// End-to-end tests of the whole app against the real Codex CLI (issue 12):
// the app binary runs headless, launches `codex app-server` for a session
// created with `new --agent codex`, and Codex talks only to the fake
// Responses API (sessions/codex/fakeapi) on loopback, everything else
// refused by a proxy. They reuse the Claude suite's harness (e2e_claude_test.go):
// the same app runs, CLI commands, waits, timeline checks and cleanup (every
// process with the test's HOME is killed at the end).

import (
	"github.com/session-supervisor/session-supervisor/supervisor/core"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/codex/fakeapi"
)

// cxe2e is one Codex test's world on top of the shared harness.
type cxe2e struct {
	*ce2eHarness
	api *fakeapi.Server
}

// codexE2EStart sets up a test's fake Responses API, CODEX_HOME and app.
func codexE2EStart(t *testing.T, cfg fakeapi.Config, settings ...string) *cxe2e {
	t.Helper()
	codexBin := fakeapi.CodexBinary(t)
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
	codexHome := filepath.Join(h.home, ".codex")
	if err := fakeapi.WriteConfig(codexHome, api.URL(), cfg); err != nil {
		t.Fatal(err)
	}
	// The app inherits this environment and the CLI inherits the app's.
	h.env = fakeapi.HermeticEnv(h.home, codexHome, proxyURL)
	// No session bus: the notifier must not autolaunch a dbus-daemon
	// under this HOME (it would outlive the app).
	h.env = append(h.env, "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(h.home, "no-bus"))
	t.Cleanup(h.cleanup)
	h.mustCLI("settings", "set", "agents.codex.command", codexBin)
	for i := 0; i+1 < len(settings); i += 2 {
		h.mustCLI("settings", "set", settings[i], settings[i+1])
	}
	h.startApp()
	return &cxe2e{ce2eHarness: h, api: api}
}

// newCodex launches a managed Codex session in the work directory.
func (h *cxe2e) newCodex(prompt string, flags ...string) string {
	h.t.Helper()
	args := append([]string{"new", "--agent", "codex", "--cwd", h.work}, flags...)
	id := strings.TrimSpace(h.mustCLI(append(args, prompt)...))
	if id == "" || strings.ContainsAny(id, " \n\t") {
		h.t.Fatalf("new printed %q, want the session id alone", id)
	}
	return id
}

func (h *cxe2e) statuses(scenario string) []int {
	var out []int
	for _, e := range h.api.Requests(scenario) {
		out = append(out, e.Status)
	}
	return out
}

func (h *cxe2e) nudgedCodex(scenario string) bool {
	for _, e := range h.api.Requests(scenario) {
		if strings.Contains(e.UserText, core.NudgeText) {
			return true
		}
	}
	return false
}

func (h *cxe2e) checkCodexIdentity(s sessions.Session) {
	h.t.Helper()
	if s.Agent != "codex" || s.Source != sessions.Managed || s.Cwd != h.work {
		h.t.Errorf("agent %q source %v cwd %q, want codex, managed, %q", s.Agent, s.Source, s.Cwd, h.work)
	}
	if s.AgentSessionID == "" {
		h.t.Error("agent_session_id is empty: the thread id was not decoded")
	}
	if s.PID <= 0 || s.Evidence == "" {
		h.t.Errorf("pid %d evidence %q", s.PID, s.Evidence)
	}
}

// TestCodexE2EPlainReply: a plain reply ends the turn waiting for review;
// ack makes it idle and the app server stays for the next prompt.
func TestCodexE2EPlainReply(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{})
	id := h.newCodex("[[scenario:text]] hi", "--name", "plain")
	s := h.waitFor(id, "the reply to be waiting for review", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	h.checkCodexIdentity(s)
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
	h.stopApp()
}

// TestCodexE2ECommand: a command execution is an open tool while it runs
// ("running command"), then the turn completes with its output sent back.
func TestCodexE2ECommand(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{})
	w := h.watch()
	id := h.newCodex("[[scenario:tool]] run it")
	h.waitFor(id, "the command turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	w.waitMessage(t, "the review", ce2eSessionMsg(id, ce2eIn(sessions.WaitingOnUser, sessions.WaitReview)))
	var running, finished bool
	for _, s := range w.sessionStates(id) {
		if s.State == sessions.Working && len(s.OpenTools) == 1 && strings.Contains(s.Evidence, "command") {
			running = true
		}
		if running && s.State == sessions.Working && len(s.OpenTools) == 0 {
			finished = true
		}
	}
	if !running || !finished {
		t.Errorf("the stream never showed the command open and then finished (running %v, finished %v)", running, finished)
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

// TestCodexE2ESecondPrompt: `send` starts turn 2 on the same process and
// thread.
func TestCodexE2ESecondPrompt(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{})
	id := h.newCodex("[[scenario:text]] first")
	first := h.waitFor(id, "the first reply", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	h.mustCLI("send", id, "second")
	s := h.waitFor(id, "the second reply", ce2eReview(2))
	if s.PID != first.PID || !s.ProcessAlive || s.AgentSessionID != first.AgentSessionID {
		t.Errorf("turn 2 ran on pid %d (alive %v) thread %s; turn 1 on pid %d thread %s",
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

// TestCodexE2EApprove: under approval_policy on-request a command that
// asks to leave the sandbox waits on the user; `approve` runs it.
func TestCodexE2EApprove(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{ApprovalPolicy: "on-request"})
	id := h.newCodex("[[scenario:write]] make it", "--permission-mode", "default")
	s := h.waitFor(id, "the approval request", ce2eIn(sessions.WaitingOnUser, sessions.WaitPermission))
	if s.Permission == nil || s.Permission.Tool != "command" || !s.InTurn {
		t.Fatalf("permission %+v in_turn %v, want a pending command in a running turn", s.Permission, s.InTurn)
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

// TestCodexE2ERateLimitDrain: a 429 (Codex does not retry it with
// request_max_retries 0) fails the turn with rate_limit; the session is
// held in Recovering with a countdown (no reset time from an API key's 429:
// the policy's 1 minute backoff) and continued, on the same thread.
func TestCodexE2ERateLimitDrain(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{}, ce2eFast...)
	id := h.newCodex("[[scenario:429then_ok]] hi")
	held := h.waitFor(id, "the drain hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.RateLimit || held.Supervision.NextAttemptAt.IsZero() ||
		!strings.Contains(held.Evidence, "continuing at") {
		t.Errorf("hold: failure %+v next attempt %v evidence %q; want rate_limit and a countdown",
			held.Failure, held.Supervision.NextAttemptAt, held.Evidence)
	}
	s := h.waitForWithin(id, "the continued turn to complete", 3*time.Minute, ce2eReview(2))
	if !s.Failure.IsZero() || s.NeedsAttention || s.AgentSessionID != held.AgentSessionID {
		t.Errorf("failure %+v needs_attention %v thread %s (was %s) after the continue", s.Failure, s.NeedsAttention, s.AgentSessionID, held.AgentSessionID)
	}
	if got := h.statuses("429then_ok"); !slices.Equal(got, []int{429, 200}) {
		t.Errorf("the fake API answered %v, want 429 then 200", got)
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:errored",
		"rate_limit_drain", "rate_limit_drain", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestCodexE2EUsageLimitAtReset: a usage limit (codexErrorInfo
// usageLimitExceeded, the window's reset from Codex's rate-limit snapshot)
// is held in Recovering until exactly that reset, then continued.
func TestCodexE2EUsageLimitAtReset(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{}, ce2eFast...)
	id := h.newCodex("[[scenario:usage_limit]] hi")
	held := h.waitFor(id, "the drain hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	reqs := h.api.Requests("usage_limit")
	if len(reqs) == 0 {
		t.Fatal("no request reached the fake API")
	}
	reset := time.Unix(reqs[0].At.Add(fakeapi.UsageLimitResetSeconds*time.Second).Unix(), 0)
	if held.Failure.Kind != sessions.RateLimit || !held.Failure.RetryAt.Equal(reset) || !held.Supervision.NextAttemptAt.Equal(reset) {
		t.Errorf("hold: failure %+v next attempt %v, want rate_limit until the reset %v", held.Failure, held.Supervision.NextAttemptAt, reset)
	}
	s := h.waitForWithin(id, "the continued turn to complete", 3*time.Minute, ce2eReview(2))
	if !s.Failure.IsZero() || s.NeedsAttention {
		t.Errorf("failure %+v needs_attention %v after the continue", s.Failure, s.NeedsAttention)
	}
	rows := h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:errored",
		"rate_limit_drain", "rate_limit_drain", "state_changed:working", "state_changed:waiting_on_user(review)")
	var cont ce2eRow
	for _, r := range rows {
		if r.Kind == "rate_limit_drain" {
			cont = r
		}
	}
	if late := cont.Time.Sub(reset); late < 0 || late > 6*time.Second {
		t.Errorf("continued %s after the reset, want at the reset (within a 5 s tick)", late)
	}
	h.stopApp()
}

// TestCodexE2EAuthEscalated: a 401 (Codex retries it twice, then gives up
// with codexErrorInfo httpConnectionFailed 401) is held for an auth resume;
// with automatic recovery switched off it is escalated.
func TestCodexE2EAuthEscalated(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{}, ce2eFast...)
	id := h.newCodex("[[scenario:401]] hi")
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
	if got := h.statuses("401"); !slices.Equal(got, []int{401, 401, 401}) {
		t.Errorf("the fake API answered %v, want three 401s (stream_max_retries 2)", got)
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:recovering", "state_changed:errored",
		"auth_resume", "state_changed:errored", "escalated")
	h.stopApp()
}

// TestCodexE2EStallInterruptNudge: a model stream that goes silent (Codex's
// own idle timeout set past the supervisor's limits) is suspect, then
// interrupted (turn/interrupt), and the nudge on the same process and
// thread completes the work.
func TestCodexE2EStallInterruptNudge(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{StreamIdleTimeout: 5 * time.Minute}, append([]string{
		"supervisor.stall_suspect_minutes", "0.25", "supervisor.stall_hard_minutes", "0.5"}, ce2eFast...)...)
	id := h.newCodex("[[scenario:stall]] go")
	first := h.waitFor(id, "the silent stream to be suspect", ce2eIn(sessions.Suspect))
	s := h.waitFor(id, "the nudged turn to complete", ce2eReview(2))
	if s.PID != first.PID || !s.ProcessAlive || s.AgentSessionID != first.AgentSessionID {
		t.Errorf("the nudge ran on pid %d (alive %v) thread %s, want the live process %d thread %s",
			s.PID, s.ProcessAlive, s.AgentSessionID, first.PID, first.AgentSessionID)
	}
	if !h.nudgedCodex("stall") {
		t.Error("the fake API never received the continuation nudge")
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "marked_suspect", "stall_interrupt", "state_changed:interrupted",
		"nudge_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestCodexE2EAgentKilledMidCommand: `codex app-server` killed with SIGKILL
// while a command runs is interrupted, and the nudge resumes the thread in
// a new process (thread/resume + turn/start), which completes the work.
func TestCodexE2EAgentKilledMidCommand(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{}, ce2eFast...)
	id := h.newCodex("[[scenario:slowtool]] run it")
	before := h.waitOpenTool(id, "command")
	h.waitProc("sleep 60")
	// The npm `codex` is a Node wrapper that runs the native binary as
	// its child, in the same process group: killing the wrapper's pid alone
	// leaves the native app server running (measured: the turn then simply
	// completes). A crash of Codex is the whole group dying; the command it
	// runs in a pseudo-terminal of its own outlives it as an orphan.
	if err := syscall.Kill(-before.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing codex's group %d: %v", before.PID, err)
	}
	for _, pid := range claudeE2EProcsWithHome(h.home) {
		if pid != h.run.cmd.Process.Pid && pid != before.PID {
			h.orphans = append(h.orphans, pid)
		}
	}
	s := h.waitFor(id, "the resumed turn to complete", ce2eReview(2))
	if s.PID == before.PID || !s.ProcessAlive || s.AgentSessionID != before.AgentSessionID {
		t.Errorf("after the resume: pid %d (alive %v) thread %s; want a new process on thread %s (killed pid %d)",
			s.PID, s.ProcessAlive, s.AgentSessionID, before.AgentSessionID, before.PID)
	}
	if !h.nudgedCodex("slowtool") {
		t.Error("the fake API never received the continuation nudge")
	}
	h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "state_changed:interrupted",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestCodexE2EOverflowCompactRetry: a context window overflow
// (contextWindowExceeded) is compacted (thread/compact/start: Codex
// summarizes the thread through the model) and the turn retried, which
// completes.
func TestCodexE2EOverflowCompactRetry(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{}, ce2eFast...)
	id := h.newCodex("[[scenario:too_long_once]] hi")
	h.waitFor(id, "the retried turn to complete", ce2eReview(3))
	s := h.waitFor(id, "the overflow incident to close", func(s sessions.Session) bool { return s.Supervision.Recovery == "" })
	if !s.Failure.IsZero() || s.NeedsAttention || s.TurnGeneration != 3 {
		t.Errorf("failure %+v needs_attention %v turn %d after the retry", s.Failure, s.NeedsAttention, s.TurnGeneration)
	}
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
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:errored",
		"state_changed:recovering", "overflow_redrive", "state_changed:working",
		"state_changed:compacting", "state_changed:working", "state_changed:waiting_on_user(review)",
		"state_changed:recovering", "overflow_redrive", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestCodexE2EDeny: `deny` declines the command; it never runs and the
// turn goes on to its end.
func TestCodexE2EDeny(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{ApprovalPolicy: "on-request"})
	id := h.newCodex("[[scenario:write]] make it", "--permission-mode", "default")
	h.waitFor(id, "the approval request", ce2eIn(sessions.WaitingOnUser, sessions.WaitPermission))
	h.mustCLI("deny", id, "--message", "not now")
	h.waitFor(id, "the turn to end", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	if _, err := os.Stat(filepath.Join(h.work, "build", "out.txt")); err == nil {
		t.Error("the denied command ran")
	}
	if reqs := h.api.Requests("write"); len(reqs) != 2 || reqs[1].ToolOutput == "" {
		t.Errorf("requests %+v, want the call and then Codex telling the model it was declined", reqs)
	}
	h.stopApp()
}

// TestCodexE2EAuthEscalatedAfterResumes: the whole auth budget — three
// resumes of the thread, each failing with 401 again — then escalation.
func TestCodexE2EAuthEscalatedAfterResumes(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{}, append([]string{"supervisor.auth_retry_minutes", "0.1"}, ce2eFast...)...)
	id := h.newCodex("[[scenario:401]] hi")
	s := h.waitForWithin(id, "the escalation", 3*time.Minute, func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.Auth {
		t.Errorf("escalated as %s with %+v, want errored auth", s.State, s.Failure)
	}
	// Four turns (the first and three resumes), each tried three times by
	// Codex (stream_max_retries 2).
	if n := len(h.api.Requests("401")); n != 12 {
		t.Errorf("%d requests, want 12", n)
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:recovering", "state_changed:errored", "auth_resume",
		"auth_resume", "state_changed:working", "state_changed:recovering", "state_changed:errored", "auth_resume",
		"auth_resume", "state_changed:working", "state_changed:recovering", "state_changed:errored", "auth_resume",
		"auth_resume", "state_changed:working", "state_changed:recovering", "state_changed:errored", "escalated")
	h.stopApp()
}

// TestCodexE2EUserInterrupt: `interrupt` stops the turn in flight
// (turn/interrupt, which Codex answers with the turn interrupted); a stop
// the user asked for is a review. (That it is never nudged afterwards is
// the pure rule's, tested in supervisor.)
func TestCodexE2EUserInterrupt(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{StreamIdleTimeout: 5 * time.Minute}, ce2eFast...)
	h.api.Handle("hang", func(int, string) fakeapi.Reply { return fakeapi.Reply{Stall: true} })
	id := h.newCodex("[[scenario:hang]] go")
	h.waitFor(id, "the turn to be under way", func(s sessions.Session) bool {
		return s.State == sessions.Working && len(h.api.Requests("hang")) > 0
	})
	h.mustCLI("interrupt", id)
	s := h.waitFor(id, "the stop to be a review", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	if s.InTurn || s.NeedsAttention || !s.ProcessAlive {
		t.Errorf("after the interrupt: in_turn %v needs_attention %v alive %v", s.InTurn, s.NeedsAttention, s.ProcessAlive)
	}
	h.stopApp()
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "interrupt_requested"},
		"process_started", "prompt_sent", "state_changed:working", "interrupt_requested",
		"state_changed:waiting_on_user(review)")
}

// TestCodexE2EAppKilledMidTurn: the app killed with SIGKILL while a Codex
// turn is in flight comes back with the session Interrupted, stops the app
// server the dead app left behind (if it still runs), resumes the thread in
// a new process and nudges it to completion.
func TestCodexE2EAppKilledMidTurn(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{StreamIdleTimeout: 5 * time.Minute}, ce2eFast...)
	id := h.newCodex("[[scenario:stall]] go")
	before := h.waitFor(id, "the turn to be under way", func(s sessions.Session) bool {
		return s.State == sessions.Working && s.AgentSessionID != "" && len(h.api.Requests("stall")) > 0
	})
	h.killApp()
	h.startApp()
	s := h.waitFor(id, "the resumed turn to complete", ce2eReview(2))
	if s.PID == before.PID || !s.ProcessAlive || s.AgentSessionID != before.AgentSessionID {
		t.Errorf("after the restart: pid %d (alive %v) thread %q; before: pid %d thread %q",
			s.PID, s.ProcessAlive, s.AgentSessionID, before.PID, before.AgentSessionID)
	}
	if claudeE2EAlive(before.PID) {
		t.Errorf("the codex %d of the killed app still runs next to the resumed %d", before.PID, s.PID)
	}
	if !h.nudgedCodex("stall") {
		t.Error("the fake API never received the continuation nudge")
	}
	h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "boot_reconciled",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestCodexE2ENetworkOutageWaitedOut: streams cut past Codex's own retries
// (codexErrorInfo responseStreamDisconnected, then "stream disconnected")
// fail the turn with a network failure; the supervisor holds it and retries
// within its window, and the continued turn completes without escalation.
func TestCodexE2ENetworkOutageWaitedOut(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{}, append([]string{"supervisor.transient_window_minutes", "1"}, ce2eFast...)...)
	id := h.newCodex("[[scenario:cut3then_ok]] hi")
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
	if got := h.statuses("cut3then_ok"); len(got) != 4 || !h.nudgedCodex("cut3then_ok") {
		t.Errorf("requests %v (nudged %v), want three cut then one answered, after the supervisor's retry", got, h.nudgedCodex("cut3then_ok"))
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
