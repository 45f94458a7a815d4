//go:build linux

package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// TestClaudeE2EUserStopIgnoredIsEnforced (issue 20 item 7): the real CLI's
// turn waits on a stalled model request, and the CLI is wedged (SIGSTOP: it
// reads no more input and acts on no signal but SIGKILL), so the user's
// `interrupt` is written to its stdin and ignored. After the interrupt grace
// (30 s) the app sends SIGTERM to its process group (held pending by the
// stopped CLI), after a second grace SIGKILL, and the turn ends in review,
// its evidence saying what it took; nothing is nudged or resumed.
func TestClaudeE2EUserStopIgnoredIsEnforced(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: []string{"supervisor.tick_seconds", "5"}})
	id := h.launch("[[scenario:stall]] wait for it")
	s := h.waitFor(id, "the stalled request", func(s sessions.Session) bool {
		return s.State == sessions.Working && s.PID > 0 && s.AgentSessionID != "" && len(claudeMessages(h.api, "stall")) > 0
	})
	if err := syscall.Kill(s.PID, syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping the CLI: %v", err)
	}
	asked := time.Now()
	h.mustCLI("interrupt", id)
	s = h.waitForWithin(id, "the turn to end", 2*time.Minute, func(s sessions.Session) bool { return !s.InTurn })
	took := time.Since(asked)
	if s.State != sessions.WaitingOnUser || s.WaitReason != sessions.WaitReview || s.NeedsAttention {
		t.Fatalf("state %v (%v), needs attention %v: %s", s.State, s.WaitReason, s.NeedsAttention, s.Evidence)
	}
	if took < time.Minute {
		t.Errorf("the turn ended %v after the interrupt, before the second grace", took)
	}
	// The note is the next tick's.
	s = h.waitFor(id, "the evidence of what it took", func(s sessions.Session) bool {
		return strings.Contains(s.Evidence, "the agent ignored your interrupt, so its process group was sent SIGKILL")
	})
	if !strings.Contains(s.Evidence, "stopped at your request") {
		t.Errorf("evidence %q", s.Evidence)
	}
	t.Logf("ended %v after the interrupt: %s", took.Round(time.Second), s.Evidence)
	h.expectTimeline(id, []string{"process_started", "prompt_sent", "interrupt_requested", "stop_enforced"},
		"process_started", "prompt_sent", "state_changed:working", "interrupt_requested",
		"stop_enforced", "stop_enforced", "state_changed:waiting_on_user(review)")
	h.stopApp()
}
