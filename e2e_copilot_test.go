//go:build linux

package main

// End-to-end tests of the whole app against the real Copilot CLI (issue
// 13): the app binary runs headless and runs one `copilot -p
// --output-format json` process per turn of a session created with `new
// --agent copilot`; Copilot talks only to the fake chat completions API
// (sessions/copilot/fakeapi) through its BYOK provider, offline (no GitHub
// login, no telemetry, no update check), everything else refused by a
// proxy. They reuse the Claude suite's harness (e2e_claude_test.go).

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/copilot/fakeapi"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// cpe2e is one Copilot test's world on top of the shared harness.
type cpe2e struct {
	*ce2eHarness
	api *fakeapi.Server
}

// copilotE2EStart sets up a test's fake API, Copilot's hermetic
// environment and the app.
func copilotE2EStart(t *testing.T, settings ...string) *cpe2e {
	t.Helper()
	bin := fakeapi.CopilotBinary(t)
	appBin, _ := testBinaries(t)
	api, err := fakeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	proxyURL, refused, closeProxy, err := fakeapi.StartRefusingProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeProxy)
	t.Cleanup(func() {
		if n := refused(); n != 0 {
			t.Errorf("Copilot tried to leave loopback %d times (refused by the proxy)", n)
		}
	})
	cache, err := fakeapi.SharedCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.MkdirTemp("", "sse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) })
	h := &ce2eHarness{t: t, app: appBin, home: t.TempDir(), data: data, work: t.TempDir()}
	// The app inherits this environment and the CLI inherits the app's.
	h.env = fakeapi.HermeticEnv(h.home, cache, api.URL(), proxyURL)
	h.env = append(h.env, "DBUS_SESSION_BUS_ADDRESS=unix:path="+filepath.Join(h.home, "no-bus"))
	t.Cleanup(h.cleanup)
	h.mustCLI("settings", "set", "agents.copilot.command", bin)
	for i := 0; i+1 < len(settings); i += 2 {
		h.mustCLI("settings", "set", settings[i], settings[i+1])
	}
	h.startApp()
	return &cpe2e{ce2eHarness: h, api: api}
}

// newCopilot launches a managed Copilot session in the work directory,
// with every tool allowed (prompt mode asks no one).
func (h *cpe2e) newCopilot(prompt string, flags ...string) string {
	h.t.Helper()
	args := append([]string{"new", "--agent", "copilot", "--cwd", h.work, "--permission-mode", "bypassPermissions"}, flags...)
	id := strings.TrimSpace(h.mustCLI(append(args, prompt)...))
	if id == "" || strings.ContainsAny(id, " \n\t") {
		h.t.Fatalf("new printed %q, want the session id alone", id)
	}
	return id
}

func (h *cpe2e) statuses(scenario string) []int {
	var out []int
	for _, e := range h.api.Requests(scenario) {
		out = append(out, e.Status)
	}
	return out
}

func (h *cpe2e) nudgedCopilot(scenario string) bool {
	for _, e := range h.api.Requests(scenario) {
		if strings.Contains(e.UserText, core.NudgeText) {
			return true
		}
	}
	return false
}

func (h *cpe2e) checkCopilotIdentity(s sessions.Session) {
	h.t.Helper()
	if s.Agent != "copilot" || s.Source != sessions.Managed || s.Cwd != h.work {
		h.t.Errorf("agent %q source %v cwd %q, want copilot, managed, %q", s.Agent, s.Source, s.Cwd, h.work)
	}
	if s.AgentSessionID == "" {
		h.t.Error("agent_session_id is empty")
	}
	if s.PID <= 0 || s.Evidence == "" {
		h.t.Errorf("pid %d evidence %q", s.PID, s.Evidence)
	}
}

// waitCopilotPersisted waits until Copilot's own record of the session
// (COPILOT_HOME/session-state/ID/events.jsonl) holds an event of typ.
func (h *cpe2e) waitCopilotPersisted(sessionID, typ string) {
	h.t.Helper()
	path := filepath.Join(h.home, ".copilot", "session-state", sessionID, "events.jsonl")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), `"type":"`+typ+`"`) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s never held %s", path, typ)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCopilotE2EPlainReply: a plain reply ends the turn waiting for review;
// the turn's process exiting after it is not the session ending; ack makes
// it idle.
func TestCopilotE2EPlainReply(t *testing.T) {
	h := copilotE2EStart(t)
	id := h.newCopilot("[[scenario:text]] hi", "--name", "plain")
	s := h.waitFor(id, "the reply to be waiting for review", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	h.checkCopilotIdentity(s)
	if s.TurnGeneration != 1 || s.InTurn || !s.Failure.IsZero() || s.NeedsAttention || s.SkippedLines != 0 {
		t.Errorf("after the reply: turn %d in_turn %v failure %+v needs_attention %v skipped %d",
			s.TurnGeneration, s.InTurn, s.Failure, s.NeedsAttention, s.SkippedLines)
	}
	// The turn's process is gone; the session still is not.
	deadline := time.Now().Add(30 * time.Second)
	for claudeE2EAlive(s.PID) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	h.mustCLI("ack", id)
	s = h.waitFor(id, "ack to make it idle", ce2eIn(sessions.Idle))
	if !s.ProcessAlive || s.NeedsAttention {
		t.Errorf("after the turn's process exited: alive %v needs_attention %v; the session stays ready", s.ProcessAlive, s.NeedsAttention)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "acknowledged"},
		"process_started", "prompt_sent", "state_changed:working",
		"state_changed:waiting_on_user(review)", "acknowledged", "state_changed:idle")
	if got := h.statuses("text"); !slices.Equal(got, []int{200}) {
		t.Errorf("the fake API answered %v, want one 200", got)
	}
	h.stopApp()
}

// TestCopilotE2ECommand: Copilot's bash tool is an open tool ("command")
// while it runs, then the turn completes with its output sent back.
func TestCopilotE2ECommand(t *testing.T) {
	h := copilotE2EStart(t)
	w := h.watch()
	id := h.newCopilot("[[scenario:tool]] run it")
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

// TestCopilotE2ESecondPrompt: `send` runs turn 2 in a new process that
// resumes the same Copilot session (the model sees turn 1).
func TestCopilotE2ESecondPrompt(t *testing.T) {
	h := copilotE2EStart(t)
	id := h.newCopilot("[[scenario:text]] first")
	first := h.waitFor(id, "the first reply", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	h.mustCLI("send", id, "second")
	s := h.waitFor(id, "the second reply", ce2eReview(2))
	if s.PID == first.PID || s.AgentSessionID != first.AgentSessionID {
		t.Errorf("turn 2 ran on pid %d session %s; turn 1 on pid %d session %s: want a new process, the same session",
			s.PID, s.AgentSessionID, first.PID, first.AgentSessionID)
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

// TestCopilotE2ERateLimitDrain: 429s past Copilot's own retries (it tries
// six times, waiting the retry-after) fail the turn with rate_limit
// (session.error errorType rate_limit); the session is held in Recovering
// with a countdown and continued in the same Copilot session.
func TestCopilotE2ERateLimitDrain(t *testing.T) {
	h := copilotE2EStart(t, ce2eFast...)
	id := h.newCopilot("[[scenario:429x6then_ok]] hi")
	held := h.waitForWithin(id, "the drain hold", 3*time.Minute, func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.RateLimit || held.Supervision.NextAttemptAt.IsZero() ||
		!strings.Contains(held.Evidence, "continuing at") {
		t.Errorf("hold: failure %+v next attempt %v evidence %q; want rate_limit and a countdown",
			held.Failure, held.Supervision.NextAttemptAt, held.Evidence)
	}
	s := h.waitForWithin(id, "the continued turn to complete", 3*time.Minute, ce2eReview(2))
	if !s.Failure.IsZero() || s.NeedsAttention || s.AgentSessionID != held.AgentSessionID {
		t.Errorf("failure %+v needs_attention %v session %s (was %s) after the continue", s.Failure, s.NeedsAttention, s.AgentSessionID, held.AgentSessionID)
	}
	if got := h.statuses("429x6then_ok"); !slices.Equal(got, []int{429, 429, 429, 429, 429, 429, 200}) {
		t.Errorf("the fake API answered %v, want six 429s then 200", got)
	}
	// Recovering first: Copilot's own retries (assistant.turn_retry).
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:recovering", "state_changed:errored",
		"rate_limit_drain", "rate_limit_drain", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestCopilotE2EOverflowCompactRetry: a context overflow on the second
// turn (the provider's context_length_exceeded, which Copilot reports as
// errorType "query") is compacted (Copilot's /compact in a turn of its own,
// which makes the summarizing call) and the turn retried, which completes.
func TestCopilotE2EOverflowCompactRetry(t *testing.T) {
	h := copilotE2EStart(t, ce2eFast...)
	id := h.newCopilot("[[scenario:too_long_second]] hi")
	h.waitFor(id, "the first reply", ce2eReview(1))
	h.mustCLI("send", id, "more")
	h.waitFor(id, "the retried turn to complete", ce2eReview(4))
	s := h.waitFor(id, "the overflow incident to close", func(s sessions.Session) bool { return s.Supervision.Recovery == "" })
	if !s.Failure.IsZero() || s.NeedsAttention || s.TurnGeneration != 4 {
		t.Errorf("failure %+v needs_attention %v turn %d after the retry", s.Failure, s.NeedsAttention, s.TurnGeneration)
	}
	reqs := h.api.Requests("too_long_second")
	if len(reqs) != 4 || !strings.Contains(reqs[3].UserText, core.RetryTurnText) {
		t.Errorf("requests %+v, want the first turn, the overflow, the compaction's summary and the retry", reqs)
	}
	if got := h.statuses("too_long_second"); !slices.Equal(got, []int{200, 400, 200, 200}) {
		t.Errorf("the fake API answered %v, want 200, 400, then the compaction's and the retry's 200", got)
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:waiting_on_user(review)",
		"state_changed:working", "state_changed:errored",
		"state_changed:recovering", "overflow_redrive", "state_changed:working",
		"state_changed:compacting", "state_changed:working", "state_changed:waiting_on_user(review)",
		"state_changed:recovering", "overflow_redrive", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestCopilotE2EOverflowFirstTurnEscalated: an overflow on the first turn
// leaves Copilot nothing to compact (it exits 1, "Nothing to compact."):
// the compaction fails and, the overflow budget spent, the session is
// escalated rather than retried forever.
func TestCopilotE2EOverflowFirstTurnEscalated(t *testing.T) {
	h := copilotE2EStart(t, ce2eFast...)
	id := h.newCopilot("[[scenario:too_long]] hi")
	s := h.waitForWithin(id, "the escalation", 3*time.Minute, func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.ContextOverflow {
		t.Errorf("escalated as %s with %+v, want errored context_overflow", s.State, s.Failure)
	}
	labels := h.labels(id, []string{})
	if !slices.Contains(labels, "state_changed:compacting") || !slices.Contains(labels, "escalated") {
		t.Errorf("timeline %s, want a compaction tried and the escalation", strings.Join(labels, ", "))
	}
	if s.ProcessAlive && s.PID > 0 && claudeE2EAlive(s.PID) {
		t.Errorf("a turn's process %d still runs after the escalation", s.PID)
	}
	h.stopApp()
}

// TestCopilotE2EAuthEscalated: a 401 (Copilot retries it twice as a
// transient auth error, then gives up with errorType authentication) is
// held for an auth resume; with automatic recovery off it is escalated.
func TestCopilotE2EAuthEscalated(t *testing.T) {
	h := copilotE2EStart(t, ce2eFast...)
	id := h.newCopilot("[[scenario:401]] hi")
	held := h.waitFor(id, "the auth hold", func(s sessions.Session) bool {
		return s.State == sessions.Recovering && !s.InTurn
	})
	if held.Failure.Kind != sessions.Auth || held.NeedsAttention || !strings.Contains(held.Evidence, "resuming at") {
		t.Errorf("hold: failure %+v needs_attention %v evidence %q", held.Failure, held.NeedsAttention, held.Evidence)
	}
	if strings.Contains(held.Failure.Message, "sk-fake") {
		t.Errorf("the failure message carries the key: %q", held.Failure.Message)
	}
	h.mustCLI("settings", "set", "supervisor.auto_recover_enabled", "false")
	s := h.waitFor(id, "the escalation", func(s sessions.Session) bool { return s.NeedsAttention })
	if s.State != sessions.Errored || s.Failure.Kind != sessions.Auth {
		t.Errorf("escalated as %s with %+v, want errored auth", s.State, s.Failure)
	}
	if got := h.statuses("401"); !slices.Equal(got, []int{401, 401, 401}) {
		t.Errorf("the fake API answered %v, want three 401s (Copilot's own two retries)", got)
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "state_changed:recovering", "state_changed:errored",
		"auth_resume", "state_changed:errored", "escalated")
	h.stopApp()
}

// TestCopilotE2EStallInterruptNudge: a model stream that goes silent is
// suspect, then interrupted (SIGINT to the turn's process group: Copilot's
// abort), and the nudge, a new process on the same session, completes it.
func TestCopilotE2EStallInterruptNudge(t *testing.T) {
	h := copilotE2EStart(t, append([]string{
		"supervisor.stall_suspect_minutes", "0.25", "supervisor.stall_hard_minutes", "0.5"}, ce2eFast...)...)
	id := h.newCopilot("[[scenario:stall]] go")
	first := h.waitFor(id, "the silent stream to be suspect", ce2eIn(sessions.Suspect))
	s := h.waitFor(id, "the nudged turn to complete", ce2eReview(2))
	if s.AgentSessionID != first.AgentSessionID || s.PID == first.PID {
		t.Errorf("the nudge ran on pid %d session %s; want a new process on session %s (stalled pid %d)",
			s.PID, s.AgentSessionID, first.AgentSessionID, first.PID)
	}
	if claudeE2EAlive(first.PID) {
		t.Errorf("the interrupted turn's process %d still runs", first.PID)
	}
	if !h.nudgedCopilot("stall") {
		t.Error("the fake API never received the continuation nudge")
	}
	h.expectTimeline(id, []string{},
		"state_changed:working", "marked_suspect", "stall_interrupt", "state_changed:interrupted",
		"nudge_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestCopilotE2EAgentKilledMidCommand: the turn's process group killed
// with SIGKILL while a command runs is interrupted, and the nudge resumes
// the Copilot session in a new process, which completes the work.
func TestCopilotE2EAgentKilledMidCommand(t *testing.T) {
	h := copilotE2EStart(t, ce2eFast...)
	id := h.newCopilot("[[scenario:slowtool]] run it")
	before := h.waitOpenTool(id, "command")
	h.waitProc("sleep 60")
	// Copilot writes its session to disk about a second after it prints
	// the same events (measured on 1.0.102): a kill before that loses the
	// turn, and the resumed session starts without it. The test is about
	// the resume, so it kills once the turn is on disk.
	h.waitCopilotPersisted(before.AgentSessionID, "tool.execution_start")
	if err := syscall.Kill(-before.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing copilot's group %d: %v", before.PID, err)
	}
	for _, pid := range claudeE2EProcsWithHome(h.home) {
		if pid != h.run.cmd.Process.Pid && pid != before.PID {
			h.orphans = append(h.orphans, pid)
		}
	}
	s := h.waitFor(id, "the resumed turn to complete", ce2eReview(2))
	if s.PID == before.PID || s.AgentSessionID != before.AgentSessionID {
		t.Errorf("after the resume: pid %d session %s; want a new process on session %s (killed pid %d)",
			s.PID, s.AgentSessionID, before.AgentSessionID, before.PID)
	}
	if !h.nudgedCopilot("slowtool") {
		t.Errorf("the fake API never received the continuation nudge: %+v", h.api.Requests("slowtool"))
	}
	h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "state_changed:interrupted",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}

// TestCopilotE2EUserInterrupt: `interrupt` stops the turn in flight (SIGINT
// to its process group, which Copilot answers with abort); a stop the user
// asked for is a review, and the session takes the next prompt.
func TestCopilotE2EUserInterrupt(t *testing.T) {
	h := copilotE2EStart(t, ce2eFast...)
	h.api.Handle("hang", func(n int, _ string) fakeapi.Reply {
		if n == 1 {
			return fakeapi.Reply{Stall: true}
		}
		return fakeapi.Reply{Text: "Resumed after the stop."}
	})
	id := h.newCopilot("[[scenario:hang]] go")
	h.waitFor(id, "the turn to be under way", func(s sessions.Session) bool {
		return s.State == sessions.Working && len(h.api.Requests("hang")) > 0
	})
	h.mustCLI("interrupt", id)
	s := h.waitFor(id, "the stop to be a review", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	if s.InTurn || s.NeedsAttention {
		t.Errorf("after the interrupt: in_turn %v needs_attention %v", s.InTurn, s.NeedsAttention)
	}
	h.mustCLI("send", id, "go on")
	h.waitFor(id, "the next prompt's reply", ce2eReview(2))
	h.stopApp()
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "interrupt_requested"},
		"process_started", "prompt_sent", "state_changed:working", "interrupt_requested",
		"state_changed:waiting_on_user(review)", "prompt_sent", "state_changed:working", "state_changed:waiting_on_user(review)")
}

// TestCopilotE2EAppKilledMidTurn: the app killed with SIGKILL while a turn
// is in flight comes back with the session Interrupted, stops the turn's
// process the dead app left behind, and resumes the Copilot session in a
// new process, nudged to completion.
func TestCopilotE2EAppKilledMidTurn(t *testing.T) {
	h := copilotE2EStart(t, ce2eFast...)
	id := h.newCopilot("[[scenario:stall]] go")
	before := h.waitFor(id, "the turn to be under way", func(s sessions.Session) bool {
		return s.State == sessions.Working && s.PID > 0 && len(h.api.Requests("stall")) > 0
	})
	h.waitCopilotPersisted(before.AgentSessionID, "user.message")
	h.killApp()
	if !claudeE2EAlive(before.PID) {
		t.Fatalf("the turn's process %d died with the app; the test needs it orphaned", before.PID)
	}
	h.startApp()
	s := h.waitFor(id, "the resumed turn to complete", ce2eReview(2))
	if s.PID == before.PID || s.AgentSessionID != before.AgentSessionID {
		t.Errorf("after the restart: pid %d session %q; before: pid %d session %q",
			s.PID, s.AgentSessionID, before.PID, before.AgentSessionID)
	}
	if claudeE2EAlive(before.PID) {
		t.Errorf("the turn's process %d of the killed app still runs next to the resumed one", before.PID)
	}
	if !h.nudgedCopilot("stall") {
		t.Error("the fake API never received the continuation nudge")
	}
	h.expectTimeline(id, []string{"process_started"},
		"process_started", "state_changed:working", "boot_reconciled",
		"nudge_sent", "process_started", "state_changed:working", "state_changed:waiting_on_user(review)")
	h.stopApp()
}
