package codexterm

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
)

// readLines is a testdata rollout's lines.
var readLines = observetest.ReadLines

// upTo feeds a rollout's lines up to and including the first line holding
// marker (all lines when marker is empty).
func upTo(t testing.TB, name, marker string) Summary {
	t.Helper()
	var s Summary
	for _, l := range readLines(t, name) {
		s.Feed(l)
		if marker != "" && bytes.Contains(l, []byte(marker)) {
			return s
		}
	}
	if marker != "" {
		t.Fatalf("%s has no line with %q", name, marker)
	}
	return s
}

// The rule stack on rollouts the real Codex 0.171.0 wrote (the TUI in a
// pseudo-terminal and `codex exec`, against the fake Responses API), read
// whole and cut at the moments that matter.
func TestInferOnRealRollouts(t *testing.T) {
	for _, tc := range []struct {
		file, upTo string
		state      sessions.State
		wait       sessions.WaitReason
		inTurn     bool
		tool       string
		failure    sessions.FailureKind
		retryAt    time.Time
		evidence   string
	}{
		{file: "tui_tool.jsonl", upTo: `"session_meta"`, state: sessions.Idle, evidence: "no prompt yet"},
		{file: "tui_tool.jsonl", upTo: `"task_started"`, state: sessions.Working, inTurn: true, evidence: "turn in flight"},
		{file: "tui_tool.jsonl", upTo: `"function_call"`, state: sessions.Working, inTurn: true, tool: "exec_command", evidence: "running exec_command"},
		{file: "tui_tool.jsonl", upTo: `"function_call_output"`, state: sessions.Working, inTurn: true, evidence: "turn in flight"},
		{file: "tui_tool.jsonl", state: sessions.WaitingOnUser, wait: sessions.WaitReview, evidence: "the turn ended"},
		// approval_policy on-request: the command asks to leave the
		// sandbox and has no output: the prompt is on the user's screen.
		{file: "tui_approval.jsonl", state: sessions.WaitingOnUser, wait: sessions.WaitPermission, inTurn: true, tool: "exec_command", evidence: "outside the sandbox"},
		{file: "tui_interrupt.jsonl", upTo: `"turn_aborted"`, state: sessions.WaitingOnUser, wait: sessions.WaitReview, evidence: "you stopped the turn"},
		{file: "tui_interrupt.jsonl", state: sessions.WaitingOnUser, wait: sessions.WaitReview, evidence: "the turn ended"},
		{file: "exec_usage_limit.jsonl", state: sessions.Errored, failure: sessions.RateLimit, retryAt: time.Unix(1796076633, 0).UTC(), evidence: "rate limited"},
		{file: "exec_too_long.jsonl", state: sessions.Errored, failure: sessions.ContextOverflow},
		{file: "exec_401.jsonl", state: sessions.Errored, failure: sessions.Auth},
		{file: "exec_500.jsonl", state: sessions.Errored, failure: sessions.Network},
		{file: "exec_cut.jsonl", state: sessions.Errored, failure: sessions.Network},
	} {
		t.Run(tc.file+"/"+tc.upTo, func(t *testing.T) {
			sum := upTo(t, tc.file, tc.upTo)
			if sum.Skipped != 0 {
				t.Errorf("%d real lines skipped", sum.Skipped)
			}
			got, rule := Infer(Evidence{Liveness: observe.Liveness{PID: 42, Alive: true, Known: true}, Rollout: true, Summary: sum})
			if got.State != tc.state || got.Wait != tc.wait || got.InTurn != tc.inTurn || got.Tool != tc.tool ||
				got.Failure.Kind != tc.failure || !got.Failure.RetryAt.Equal(tc.retryAt) {
				t.Fatalf("rule %q: got %+v", rule, got)
			}
			if !strings.Contains(got.Evidence, tc.evidence) {
				t.Errorf("evidence %q lacks %q", got.Evidence, tc.evidence)
			}
		})
	}
}

// The session_meta lines of the real files: the TUI's thread is the
// user's and interactive; exec's is not interactive.
func TestRealMeta(t *testing.T) {
	for _, tc := range []struct {
		file        string
		interactive bool
		originator  string
	}{
		{"tui_tool.jsonl", true, "codex-tui"},
		{"tui_interrupt.jsonl", true, "codex-tui"},
		{"exec_401.jsonl", false, "codex_exec"},
	} {
		m, err := ReadMeta(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if m.Interactive() != tc.interactive || m.Subagent() || m.Originator != tc.originator || m.ID == "" || m.Cwd == "" || m.Started.IsZero() {
			t.Errorf("%s: %+v", tc.file, m)
		}
		if !strings.HasSuffix(tc.file, ".jsonl") || !strings.Contains(string(readLines(t, tc.file)[0]), m.ID) {
			t.Errorf("%s: the id %q is not the first line's", tc.file, m.ID)
		}
	}
}

// Synthetic lines for what the captures do not show.
func TestInferSyntheticRules(t *testing.T) {
	const start = `{"timestamp":"2026-11-30T10:00:00Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}`
	for _, tc := range []struct {
		name   string
		lines  []string
		alive  bool
		known  bool
		state  sessions.State
		wait   sessions.WaitReason
		inTurn bool
	}{
		{"question", []string{start, `{"type":"response_item","payload":{"type":"function_call","name":"request_user_input","call_id":"c1","arguments":"{}"}}`},
			true, true, sessions.WaitingOnUser, sessions.WaitQuestion, true},
		{"escalation under never is no prompt", []string{start,
			`{"type":"turn_context","payload":{"approval_policy":"never"}}`,
			`{"type":"response_item","payload":{"type":"function_call","name":"exec_command","call_id":"c1","arguments":"{\"cmd\":\"x\",\"sandbox_permissions\":\"require_escalated\"}"}}`},
			true, true, sessions.Working, 0, true},
		{"custom tool closed", []string{start,
			`{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c1"}}`,
			`{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c1"}}`},
			true, true, sessions.Working, 0, true},
		{"gone mid-turn", []string{start}, false, true, sessions.Interrupted, 0, false},
		{"gone after the turn", []string{start, `{"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1"}}`}, false, true, sessions.Idle, 0, false},
		{"probe cannot tell", []string{start}, false, false, sessions.Working, 0, true},
		{"a new turn clears the failure", []string{start,
			`{"type":"event_msg","payload":{"type":"task_complete","error":{"message":"x","codex_error_info":"usage_limit_exceeded"}}}`, start},
			true, true, sessions.Working, 0, true},
		{"budget abort", []string{start, `{"type":"event_msg","payload":{"type":"turn_aborted","reason":"budget_limited"}}`},
			true, true, sessions.WaitingOnUser, sessions.WaitReview, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Summary
			for _, l := range tc.lines {
				s.Feed([]byte(l))
			}
			got, rule := Infer(Evidence{Liveness: observe.Liveness{PID: 7, Alive: tc.alive, Known: tc.known}, Rollout: true, Summary: s})
			if got.State != tc.state || got.Wait != tc.wait || got.InTurn != tc.inTurn {
				t.Fatalf("rule %q: got %+v", rule, got)
			}
		})
	}
}

// The failure's message is sanitized before it becomes evidence: a key in
// an error message is never shown.
func TestFailureMessageSanitized(t *testing.T) {
	var s Summary
	s.Feed([]byte(`{"type":"event_msg","payload":{"type":"task_started"}}`))
	s.Feed([]byte(`{"type":"event_msg","payload":{"type":"task_complete","error":{"message":"Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789","codex_error_info":"unauthorized"}}}`))
	got, _ := Infer(Evidence{Liveness: observe.Liveness{Alive: true, Known: true}, Rollout: true, Summary: s})
	if got.Failure.Kind != sessions.Auth || strings.Contains(got.Failure.Message, "abcdefghijklmnop") {
		t.Fatalf("got %+v", got.Failure)
	}
}

// FuzzSummary feeds arbitrary lines (seeded with every real rollout line
// and the synthetic shapes): the reader never panics, keeps its bounds and
// its invariants, and the rule stack always decides a state with evidence.
func FuzzSummary(f *testing.F) {
	observetest.SeedLines(f)
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"task_started"}}`),
		[]byte(`{"type":"response_item","payload":{"type":"function_call","name":"request_user_input","call_id":"c"}}`))
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"task_complete","error":{"codex_error_info":{"http_connection_failed":{"http_status_code":429}}}}}`),
		[]byte(`{"type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":{"used_percent":100,"resets_at":1}}}}`))
	f.Add([]byte(`{"type":"session_meta","payload":{"source":{"subagent":{"thread_spawn":{}}}}}`), []byte(`{"type":`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var s Summary
		for range 3 {
			s.Feed(a)
			s.Feed(b)
		}
		if len(s.Open) > maxOpen || (s.InTurn && s.Ended) || s.Turns > 3*2 {
			t.Fatalf("invariants: %+v", s)
		}
		for _, alive := range []bool{true, false} {
			st, rule := Infer(Evidence{Liveness: observe.Liveness{PID: 1, Alive: alive, Known: true}, Rollout: true, Summary: s})
			observetest.Decided(t, st, rule)
		}
		// The same bytes as a rollout's first line.
		if m, err := ParseMeta(a); err == nil && s.HasMeta && m != s.Meta && len(b) == 0 {
			t.Fatalf("ParseMeta %+v, Feed %+v", m, s.Meta)
		}
	})
}

// benchRollout is every real rollout in testdata, then command rounds
// whose outputs are 256 KB each (a rollout keeps every command's output).
func benchRollout(b *testing.B, rounds int) [][]byte {
	b.Helper()
	return observetest.WithRounds(b, rounds, func(i int, big []byte) [][]byte {
		return [][]byte{
			[]byte(`{"timestamp":"2026-11-30T10:00:00.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t"}}`),
			[]byte(fmt.Sprintf(`{"timestamp":"2026-11-30T10:00:00.100Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"make\"}","call_id":"c%d"}}`, i)),
			[]byte(fmt.Sprintf(`{"timestamp":"2026-11-30T10:00:05.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c%d","output":%s}}`, i, big)),
			[]byte(`{"timestamp":"2026-11-30T10:00:05.100Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":12.0,"window_minutes":300,"resets_at":1796076633}}}}`),
			[]byte(`{"timestamp":"2026-11-30T10:00:06.000Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t","last_agent_message":"ok"}}`),
		}
	})
}

func benchFeed(b *testing.B, rounds int) {
	observetest.BenchFeed(b, benchRollout(b, rounds), func(s *Summary) int { return s.Skipped })
}

// BenchmarkRolloutFeed: the real rollouts plus sixteen 256 KB outputs.
func BenchmarkRolloutFeed(b *testing.B) { benchFeed(b, 16) }

// BenchmarkRolloutFeedSmall is the real rollouts alone: the per-line cost
// of ordinary records (each session_meta carries ~30 KB of instructions).
func BenchmarkRolloutFeedSmall(b *testing.B) { benchFeed(b, 0) }
