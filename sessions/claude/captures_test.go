package claude

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The capture files are the real stdout of Claude Code 2.1.197 against a fake
// model server (copied from reference/claude-captures; see
// reference/claude-code-measured.md for how each was produced).

func TestCapturesDecode(t *testing.T) {
	tests := []struct {
		file  string
		kinds string
		// lines is the expected per-line summary where key fields matter.
		lines   []string
		unknown int64
	}{
		{
			file:  "text.jsonl",
			kinds: "session_init activity turn_completed",
			lines: []string{
				"session_init 7c290672-502a-43f4-b583-fbc6940801ec",
				"activity: writing a reply",
				"turn_completed",
			},
		},
		{
			file:  "tool.jsonl",
			kinds: "session_init tool_started task_started task_finished tool_finished activity turn_completed",
			lines: []string{
				"session_init b9cfa74a-6c97-40d3-86ff-fe35b6efde6f",
				"tool_started toolu_9c90e3de0ffb47098807 Bash",
				"task_started b9kyuryv9 run test command",
				"task_finished b9kyuryv9 run test command",
				"tool_finished toolu_9c90e3de0ffb47098807 Bash",
				"activity: writing a reply",
				"turn_completed",
			},
		},
		{
			// Claude Code 2.1's task list (TaskCreate, TaskUpdate) against
			// the fake's tasks scenario, logged in with a subscription
			// token (the rate_limit_event then comes).
			file:  "tasks.jsonl",
			kinds: "session_init tool_started metrics tool_finished tool_started tool_finished tool_started tool_finished tool_started tool_finished activity turn_completed",
		},
		{
			// TodoWrite, with CLAUDE_CODE_ENABLE_TASKS=0 (todowrite scenario).
			file:  "todowrite.jsonl",
			kinds: "session_init tool_started tool_finished metrics activity turn_completed",
		},
		{
			// The five-hour window past its warning threshold (plan_window).
			file:  "plan_window.jsonl",
			kinds: "session_init activity metrics turn_completed",
		},
		{
			file:  "429_r2.jsonl",
			kinds: "session_init retry_scheduled retry_scheduled turn_failed",
			lines: []string{
				"session_init 821521c0-573f-4ac3-8bfc-88d8f87f4fcb",
				"retry_scheduled 1/2 2s status=429 rate_limit",
				"retry_scheduled 2/2 2s status=429 rate_limit",
				"none", // the synthetic error message: the result decides
				"turn_failed rate_limit",
			},
		},
		{
			file:  "429then_ok.jsonl",
			kinds: "session_init retry_scheduled retry_scheduled activity turn_completed",
		},
		{
			file:  "529_r2.jsonl",
			kinds: "session_init retry_scheduled retry_scheduled turn_failed",
			lines: []string{
				"session_init 0d598e29-e478-412f-8971-af0fe189bf83",
				"retry_scheduled 1/2 615.69235ms status=529 overloaded",
				"retry_scheduled 2/2 1.140665363s status=529 overloaded",
				"none",
				"turn_failed overloaded",
			},
		},
		{
			file:  "400_too_long.jsonl",
			kinds: "session_init turn_failed",
			lines: []string{"session_init 81ab350e-9c16-4019-b5da-e30db6e51765", "none", "turn_failed context_overflow"},
		},
		{
			file:  "401.jsonl",
			kinds: "session_init retry_scheduled retry_scheduled turn_failed",
			lines: []string{
				"session_init 21f6f216-973d-471b-9e4c-d9ffcbd80d3a",
				"retry_scheduled 1/2 537.6181ms status=401 auth",
				"retry_scheduled 2/2 1.243728616s status=401 auth",
				"none",
				"turn_failed auth",
			},
		},
		{
			file:  "cut_all_r2.jsonl",
			kinds: "session_init retry_scheduled retry_scheduled turn_failed",
			lines: []string{
				"session_init 3b9cf56a-9cd7-4248-9b19-67534681a9c7",
				"retry_scheduled 1/2 571.185126ms status=0 network",
				"retry_scheduled 2/2 1.145694804s status=0 network",
				"none",
				"turn_failed network",
			},
		},
		{
			file:  "cut_nofallback_r2.jsonl",
			kinds: "session_init turn_failed",
			lines: []string{"session_init eae0d015-9b04-4c51-8a18-4bcd1953a264", "none", "turn_failed network"},
		},
		{file: "cut_r2.jsonl", kinds: "session_init activity turn_completed"},
		{file: "stall_40s.jsonl", kinds: "session_init activity turn_completed"},
		{
			file: "stall_8s_partial.jsonl",
			kinds: "session_init activity" + strings.Repeat(" activity", 7) + " activity" +
				strings.Repeat(" activity", 3) + " turn_completed",
			lines: append(append(append([]string{
				"session_init b767ef46-cd50-4be6-868e-74ce8477f697",
				"activity: requesting the model",
			}, slices.Repeat([]string{"activity: streaming a reply"}, 7)...),
				"activity: writing a reply"),
				"activity: streaming a reply", "activity: streaming a reply", "activity: streaming a reply",
				"turn_completed"),
		},
		{
			file:  "stdin_after_error.jsonl",
			kinds: "session_init activity turn_failed session_init activity activity turn_completed",
			lines: []string{
				"session_init 1fe29f15-cbaf-4983-8890-1694feb90918",
				"activity: prompt received",
				"none",
				"turn_failed rate_limit",
				"session_init 1fe29f15-cbaf-4983-8890-1694feb90918",
				"activity: prompt received",
				"activity: writing a reply",
				"turn_completed",
			},
		},
		{
			file:  "stdin_followup.jsonl",
			kinds: "session_init activity activity turn_completed session_init activity activity turn_completed",
		},
		{file: "stdin_followup_resume.jsonl", kinds: "session_init activity turn_completed"},
		{
			file:  "stdin_midturn.jsonl",
			kinds: "session_init activity tool_started task_started task_finished tool_finished activity activity turn_completed",
			lines: []string{
				"session_init 3a35b7ae-2505-4de1-9723-a42c97c90096",
				"activity: prompt received",
				"tool_started toolu_ec3cccea4ffd4618ad95 Bash",
				"task_started brxz4mszl run test command",
				"task_finished brxz4mszl run test command",
				"tool_finished toolu_ec3cccea4ffd4618ad95 Bash",
				"activity: prompt received",
				"activity: writing a reply",
				"turn_completed",
			},
		},
		{
			file:  "stdin_toolong_2nd_turn.jsonl",
			kinds: "session_init activity activity turn_completed session_init compaction_started compaction_finished activity turn_failed",
			lines: []string{
				"session_init d8491cda-f213-486c-adf1-6937ba545ae0",
				"activity: prompt received",
				"activity: writing a reply",
				"turn_completed",
				"session_init d8491cda-f213-486c-adf1-6937ba545ae0",
				"compaction_started",
				"compaction_finished failed: too_few_groups",
				"activity: prompt received",
				"none",
				"turn_failed context_overflow",
			},
		},
		{
			// The on-disk transcript is not stdout: its bookkeeping records
			// are unknown here and counted, its messages still decode.
			file:    "transcript_sample.jsonl",
			kinds:   "activity activity activity activity activity activity",
			unknown: 11,
		},
	}

	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			events, lines, stats := decodeAll(t, f, 0)
			if got := kinds(events); got != tt.kinds {
				t.Errorf("kinds:\n got %s\nwant %s", got, tt.kinds)
			}
			if tt.lines != nil && !slices.Equal(lines, tt.lines) {
				t.Errorf("lines:\n got %q\nwant %q", lines, tt.lines)
			}
			if stats.Unknown != tt.unknown || stats.Malformed != 0 || stats.Oversize != 0 {
				t.Errorf("stats = %+v, want %d unknown and nothing else skipped", stats, tt.unknown)
			}
			if stats.Events != int64(len(events)) || stats.Lines != int64(len(lines)) {
				t.Errorf("stats = %+v for %d events on %d lines", stats, len(events), len(lines))
			}
			for _, e := range events {
				if e.Kind == sessions.EvTurnFailed && (e.Failure.Message == "" || e.Failure.Message != sessions.SanitizeMessage(e.Failure.Message)) {
					t.Errorf("failure message %q is empty or unsanitized", e.Failure.Message)
				}
			}
		})
	}
	for _, f := range files {
		if !covered[filepath.Base(f)] {
			t.Errorf("capture %s has no expectation", f)
		}
	}
}

func TestCapturesApply(t *testing.T) {
	review := sessions.WaitReview
	tests := []struct {
		file           string
		state          sessions.State
		wait           sessions.WaitReason
		failure        sessions.FailureKind
		wantRecovering bool
		// states is the expected state after each event of the replay, when
		// the path matters and not just the end.
		states string
	}{
		{file: "text.jsonl", state: sessions.WaitingOnUser, wait: review},
		{file: "tool.jsonl", state: sessions.WaitingOnUser, wait: review},
		{file: "429_r2.jsonl", state: sessions.Errored, failure: sessions.RateLimit, wantRecovering: true,
			states: "working working recovering recovering errored"},
		{file: "429then_ok.jsonl", state: sessions.WaitingOnUser, wait: review, wantRecovering: true,
			states: "working working recovering recovering working waiting_on_user"},
		{file: "529_r2.jsonl", state: sessions.Errored, failure: sessions.Overloaded, wantRecovering: true},
		{file: "400_too_long.jsonl", state: sessions.Errored, failure: sessions.ContextOverflow},
		{file: "401.jsonl", state: sessions.Errored, failure: sessions.Auth, wantRecovering: true},
		// Streams (and the non-streaming fallback) cut: the connection
		// failed, which the supervisor waits out (issue 15).
		{file: "cut_all_r2.jsonl", state: sessions.Errored, failure: sessions.Network, wantRecovering: true},
		{file: "cut_nofallback_r2.jsonl", state: sessions.Errored, failure: sessions.Network},
		{file: "cut_r2.jsonl", state: sessions.WaitingOnUser, wait: review},
		{file: "stall_40s.jsonl", state: sessions.WaitingOnUser, wait: review},
		{file: "stall_8s_partial.jsonl", state: sessions.WaitingOnUser, wait: review},
		{file: "stdin_after_error.jsonl", state: sessions.WaitingOnUser, wait: review,
			states: "working working working errored working working working working waiting_on_user"},
		{file: "stdin_followup.jsonl", state: sessions.WaitingOnUser, wait: review},
		{file: "stdin_followup_resume.jsonl", state: sessions.WaitingOnUser, wait: review},
		{file: "stdin_midturn.jsonl", state: sessions.WaitingOnUser, wait: review},
		{file: "stdin_toolong_2nd_turn.jsonl", state: sessions.Errored, failure: sessions.ContextOverflow,
			states: "working working working working waiting_on_user working working compacting working working errored"},
		// No system/init, so no turn: transcript messages alone change nothing.
		{file: "transcript_sample.jsonl", state: sessions.Idle},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			events, _ := decodeFile(t, tt.file)
			s, states := replay(events, sessions.ByUser)
			if s.State != tt.state || s.WaitReason != tt.wait || s.Failure.Kind != tt.failure {
				t.Errorf("final = %s/%s/%s (%s), want %s/%s/%s",
					s.State, s.WaitReason, s.Failure.Kind, s.Evidence, tt.state, tt.wait, tt.failure)
			}
			if got := slices.Contains(states, sessions.Recovering); got != tt.wantRecovering {
				t.Errorf("passed through Recovering = %v, want %v (states %v)", got, tt.wantRecovering, states)
			}
			if tt.states != "" {
				var got []string
				for _, st := range states {
					got = append(got, st.String())
				}
				if strings.Join(got, " ") != tt.states {
					t.Errorf("states:\n got %s\nwant %s", strings.Join(got, " "), tt.states)
				}
			}
			if s.InTurn || s.HasOpenWork() {
				t.Errorf("turn still open after the stream: in_turn=%v tools=%v tasks=%v", s.InTurn, s.OpenTools, s.OpenTasks)
			}
			if tt.state != sessions.Idle && s.AgentSessionID == "" {
				t.Error("agent session id not recorded")
			}
			if tt.state != sessions.Idle && s.Evidence == "" {
				t.Error("no evidence for the final state")
			}
		})
	}
}

// TestCapturesToolOpenWhileRunning checks the intermediate state the stall
// thresholds depend on: while the Bash call runs, the session has it open.
func TestCapturesToolOpenWhileRunning(t *testing.T) {
	events, _ := decodeFile(t, "tool.jsonl")
	i := slices.IndexFunc(events, func(e sessions.Event) bool { return e.Kind == sessions.EvTaskStarted })
	s, _ := replay(events[:i+1], sessions.ByUser)
	if s.State != sessions.Working || len(s.OpenTools) != 1 || len(s.OpenTasks) != 1 {
		t.Fatalf("mid-tool: state %s tools %v tasks %v", s.State, s.OpenTools, s.OpenTasks)
	}
	if s.OpenTools["toolu_9c90e3de0ffb47098807"].Name != "Bash" {
		t.Errorf("open tool = %v, want Bash", s.OpenTools)
	}
}
