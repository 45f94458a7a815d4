//go:build linux

package main

// End-to-end tests of the whole app against the real Gemini CLI (issue 13):
// the app binary runs headless, launches `gemini --acp` for a session
// created with `new --agent gemini`, and the CLI talks only to the fake
// Gemini API (sessions/gemini/fakeapi) on loopback, everything else refused
// by a proxy. They reuse the Claude suite's harness (e2e_claude_test.go).

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/gemini/fakeapi"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// gme2e is one Gemini test's world on top of the shared harness.
type gme2e struct {
	*ce2eHarness
	api *fakeapi.Server
}

// geminiE2EStart sets up a test's fake Gemini API, the CLI's settings and
// the app.
func geminiE2EStart(t *testing.T, settings ...string) *gme2e {
	t.Helper()
	geminiBin := fakeapi.GeminiBinary(t)
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
	if err := fakeapi.WriteSettings(h.home, fakeapi.Config{}); err != nil {
		t.Fatal(err)
	}
	// The app inherits this environment and the CLI inherits the app's.
	h.env = fakeapi.HermeticEnv(h.home, api.URL(), proxyURL)
	h.env = append(h.env, "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(h.home, "no-bus"))
	t.Cleanup(h.cleanup)
	h.mustCLI("settings", "set", "agents.gemini.command", geminiBin)
	for i := 0; i+1 < len(settings); i += 2 {
		h.mustCLI("settings", "set", settings[i], settings[i+1])
	}
	h.startApp()
	return &gme2e{ce2eHarness: h, api: api}
}

// newGemini launches a managed Gemini session in the work directory; tools
// run without asking unless flags choose another permission mode.
func (h *gme2e) newGemini(prompt string, flags ...string) string {
	h.t.Helper()
	if !slices.Contains(flags, "--permission-mode") {
		flags = append(flags, "--permission-mode", "bypassPermissions")
	}
	args := append([]string{"new", "--agent", "gemini", "--cwd", h.work}, flags...)
	id := strings.TrimSpace(h.mustCLI(append(args, prompt)...))
	if id == "" || strings.ContainsAny(id, " \n\t") {
		h.t.Fatalf("new printed %q, want the session id alone", id)
	}
	return id
}

func (h *gme2e) statuses(scenario string) []int {
	var out []int
	for _, e := range h.api.Requests(scenario) {
		out = append(out, e.Status)
	}
	return out
}

// nudged reports whether the fake API received the continuation nudge in
// a request of scenario, or of any scenario when it is "": the CLI drops a
// turn that failed or was cancelled from the history it sends, so a nudge
// after one carries no marker (measured) and lands in "text".
func (h *gme2e) nudged(scenario string) bool {
	reqs := h.api.Requests(scenario)
	if scenario == "" {
		reqs = h.api.Log()
	}
	for _, e := range reqs {
		if strings.Contains(e.UserText, core.NudgeText) {
			return true
		}
	}
	return false
}

func (h *gme2e) checkIdentity(s sessions.Session) {
	h.t.Helper()
	if s.Agent != "gemini" || s.Source != sessions.Managed || s.Cwd != h.work {
		h.t.Errorf("agent %q source %v cwd %q, want gemini, managed, %q", s.Agent, s.Source, s.Cwd, h.work)
	}
	if s.AgentSessionID == "" {
		h.t.Error("agent_session_id is empty: the ACP session id was not decoded")
	}
	if s.PID <= 0 || s.Evidence == "" {
		h.t.Errorf("pid %d evidence %q", s.PID, s.Evidence)
	}
}

// TestGeminiE2EPlainReply: a plain reply ends the turn waiting for review;
// ack makes it idle and the ACP process stays for the next prompt.
func TestGeminiE2EPlainReply(t *testing.T) {
	h := geminiE2EStart(t)
	id := h.newGemini("[[scenario:text]] hi", "--name", "plain")
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
	h.stopApp()
}

// TestGeminiE2ETool: under bypassPermissions (--approval-mode yolo) a
// shell command is an open tool while it runs, then the turn completes
// with its output sent back.
func TestGeminiE2ETool(t *testing.T) {
	h := geminiE2EStart(t)
	w := h.watch()
	id := h.newGemini("[[scenario:tool]] run it")
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
	h.stopApp()
}

// TestGeminiE2EApprove: under the default permission mode the CLI asks
// over ACP before a command; `approve` answers it and the command runs.
func TestGeminiE2EApprove(t *testing.T) {
	h := geminiE2EStart(t)
	id := h.newGemini("[[scenario:write]] make it", "--permission-mode", "default")
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
	h.stopApp()
}

// TestGeminiE2ESecondPrompt: `send` starts turn 2 on the same process and
// ACP session.
func TestGeminiE2ESecondPrompt(t *testing.T) {
	h := geminiE2EStart(t)
	id := h.newGemini("[[scenario:text]] first")
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

// TestGeminiE2ERateLimitDrain: 429s past the CLI's own two attempts
// (general.maxAttempts 2) fail the turn with rate_limit and the CLI's
// suggested delay as the reset; the session is held in Recovering and
// continued on the same session, which completes.
func TestGeminiE2ERateLimitDrain(t *testing.T) {
	h := geminiE2EStart(t, ce2eFast...)
	id := h.newGemini("[[scenario:429then_ok]] hi")
	held := h.waitFor(id, "the drain hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.RateLimit || held.Failure.RetryAt.IsZero() || held.Supervision.NextAttemptAt.IsZero() {
		t.Errorf("hold: failure %+v next attempt %v evidence %q; want rate_limit with the CLI's reset and a countdown",
			held.Failure, held.Supervision.NextAttemptAt, held.Evidence)
	}
	s := h.waitForWithin(id, "the continued turn to complete", 3*time.Minute, ce2eReview(2))
	if !s.Failure.IsZero() || s.NeedsAttention || s.AgentSessionID != held.AgentSessionID || s.PID != held.PID {
		t.Errorf("failure %+v needs_attention %v session %s pid %d (was %s, %d) after the continue",
			s.Failure, s.NeedsAttention, s.AgentSessionID, s.PID, held.AgentSessionID, held.PID)
	}
	if got := h.statuses("429then_ok"); !slices.Equal(got, []int{429, 429}) {
		t.Errorf("the fake API answered %v, want the CLI's two 429s", got)
	}
	if !h.nudged("") {
		t.Error("the fake API never received the continue")
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:errored",
		"rate_limit_drain", "rate_limit_drain", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestGeminiE2EOverflowEscalated: a context overflow (the API's 400 "input
// token count exceeds") cannot be compacted over ACP: the compaction the
// supervisor asks for fails at once with the reason, and the session is
// escalated instead of retried unchanged.
func TestGeminiE2EOverflowEscalated(t *testing.T) {
	h := geminiE2EStart(t, ce2eFast...)
	id := h.newGemini("[[scenario:too_long]] hi")
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

// TestGeminiE2EAuthEscalated: a 401 is held for an auth resume; with
// automatic recovery switched off it is escalated.
func TestGeminiE2EAuthEscalated(t *testing.T) {
	h := geminiE2EStart(t, ce2eFast...)
	id := h.newGemini("[[scenario:401]] hi")
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
		t.Errorf("the fake API answered %v, want one 401 (the CLI does not retry it)", got)
	}
	h.stopApp()
}

// TestGeminiE2EStallInterruptNudge: a model stream that goes silent is
// suspect, then interrupted (session/cancel), and the nudge on the same
// process and session completes the work.
func TestGeminiE2EStallInterruptNudge(t *testing.T) {
	h := geminiE2EStart(t, append([]string{
		"supervisor.stall_suspect_minutes", "0.25", "supervisor.stall_hard_minutes", "0.5"}, ce2eFast...)...)
	id := h.newGemini("[[scenario:stall]] go")
	first := h.waitFor(id, "the silent stream to be suspect", ce2eIn(sessions.Suspect))
	s := h.waitFor(id, "the nudged turn to complete", ce2eReview(2))
	if s.PID != first.PID || !s.ProcessAlive || s.AgentSessionID != first.AgentSessionID {
		t.Errorf("the nudge ran on pid %d (alive %v) session %s, want the live process %d session %s",
			s.PID, s.ProcessAlive, s.AgentSessionID, first.PID, first.AgentSessionID)
	}
	if !h.nudged("") {
		t.Error("the fake API never received the continuation nudge")
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "marked_suspect", "stall_interrupt", "state_changed:interrupted",
		"nudge_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestGeminiE2EAgentKilledMidCommand: the CLI killed with SIGKILL while a
// command runs is interrupted, and the nudge resumes the session in a new
// process (session/load, then session/prompt), which completes the work.
func TestGeminiE2EAgentKilledMidCommand(t *testing.T) {
	h := geminiE2EStart(t, ce2eFast...)
	id := h.newGemini("[[scenario:slowtool]] run it")
	before := h.waitOpenTool(id, "command")
	h.waitProc("sleep 60")
	if err := syscall.Kill(-before.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing gemini's group %d: %v", before.PID, err)
	}
	for _, pid := range claudeE2EProcsWithHome(h.home) {
		if pid != h.run.cmd.Process.Pid && pid != before.PID {
			h.orphans = append(h.orphans, pid)
		}
	}
	// The resume may wait for the next minute (gemini.loadDelay: the CLI's
	// session/load defect within the minute the session was recorded in).
	s := h.waitForWithin(id, "the resumed turn to complete", 3*time.Minute, ce2eReview(2))
	if s.PID == before.PID || !s.ProcessAlive || s.AgentSessionID != before.AgentSessionID {
		t.Errorf("after the resume: pid %d (alive %v) session %s; want a new process on session %s (killed pid %d)",
			s.PID, s.ProcessAlive, s.AgentSessionID, before.AgentSessionID, before.PID)
	}
	if !h.nudged("slowtool") {
		t.Error("the fake API never received the continuation nudge")
	}
	h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "state_changed:interrupted",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestGeminiE2EAppKilledMidTurn: the app killed with SIGKILL while a Gemini
// turn is in flight comes back with the session Interrupted, stops the
// `gemini --acp` the dead app left behind (it does not exit when its input
// closes mid-turn), resumes the session in a new process and nudges it to
// completion.
func TestGeminiE2EAppKilledMidTurn(t *testing.T) {
	h := geminiE2EStart(t, ce2eFast...)
	id := h.newGemini("[[scenario:stall]] go")
	before := h.waitFor(id, "the turn to be under way", func(s sessions.Session) bool {
		return s.State == sessions.Working && s.AgentSessionID != "" && len(h.api.Requests("stall")) > 0
	})
	h.killApp()
	h.startApp()
	s := h.waitForWithin(id, "the resumed turn to complete", 3*time.Minute, ce2eReview(2))
	if s.PID == before.PID || !s.ProcessAlive || s.AgentSessionID != before.AgentSessionID {
		t.Errorf("after the restart: pid %d (alive %v) session %q; before: pid %d session %q",
			s.PID, s.ProcessAlive, s.AgentSessionID, before.PID, before.AgentSessionID)
	}
	if claudeE2EAlive(before.PID) {
		t.Errorf("the gemini %d of the killed app still runs next to the resumed %d", before.PID, s.PID)
	}
	if !h.nudged("") {
		t.Error("the fake API never received the continuation nudge")
	}
	rows := h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "boot_reconciled",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	// The supervisor, not the CLI, ended the old process: the reap is
	// recorded with the boot decision.
	for _, r := range rows {
		if r.Kind == "boot_reconciled" {
			if o, _ := r.detail()["orphan"].(string); !strings.Contains(o, "was stopped") {
				t.Errorf("boot_reconciled %s records no stopped orphan", r.Detail)
			}
		}
	}
	h.stopApp()
}
