//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
)

// TestClaudeE2ELostResultCompletedFromTranscript (issue 20 item 8): the
// real CLI runs a Bash tool and answers, but its `result` line never
// reaches the app (a filter drops it, and the idle status line, from the
// stream). The app reads the transcript the CLI wrote and completes the
// turn a minute after the stream went quiet: a review, never Suspect, never
// interrupted, never nudged.
func TestClaudeE2ELostResultCompletedFromTranscript(t *testing.T) {
	t.Parallel()
	wrapper := filepath.Join(t.TempDir(), "claude-lost-result")
	script := "#!/bin/sh\n# The real CLI, with the end of each turn lost from its stream.\n" +
		"'" + fakeapi.ClaudeBinary(t) + "' \"$@\" | grep --line-buffered -v -e '\"type\":\"result\"' -e '\"subtype\":\"session_state_changed\"'\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	h := claudeE2EStart(t, ce2eOptions{settings: []string{
		"agents.claude.command", wrapper, "supervisor.tick_seconds", "5"}})
	id := h.launch("[[scenario:tool]] run the command")
	start := time.Now()
	s := h.waitForWithin(id, "the turn completed from its transcript", 3*time.Minute, func(s sessions.Session) bool {
		return !s.InTurn
	})
	took := time.Since(start)
	if s.State != sessions.WaitingOnUser || s.WaitReason != sessions.WaitReview || s.NeedsAttention {
		t.Fatalf("state %v (%v), needs attention %v: %s", s.State, s.WaitReason, s.NeedsAttention, s.Evidence)
	}
	if !strings.Contains(s.Evidence, "by the agent's transcript; its result never arrived on the stream") {
		t.Errorf("evidence %q", s.Evidence)
	}
	if took > 2*time.Minute {
		t.Errorf("the turn took %v to complete", took)
	}
	t.Logf("completed from the transcript %v after the launch: %s", took.Round(time.Second), s.Evidence)
	if n := len(claudeMessages(h.api, "tool")); n != 2 {
		t.Errorf("%d model requests, want 2 (the tool call, the answer after it)", n)
	}
	h.expectTimeline(id, []string{"process_started", "prompt_sent"},
		"process_started", "prompt_sent", "state_changed:working", "state_changed:waiting_on_user")
	h.stopApp()
}
