package copilotterm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
)

// readLines is a testdata events file's lines.
var readLines = observetest.ReadLines

// replay feeds a file line by line and returns the distinct states the
// stack inferred on the way (a live process) and the final summary.
func replay(t *testing.T, name string) ([]string, Summary) {
	var sum Summary
	path := observetest.Path(readLines(t, name), sum.Feed, func() sessions.ObservedState {
		st, _ := Infer(Evidence{Liveness: observe.Liveness{PID: 1, Alive: true, Known: true}, Events: true, Summary: sum})
		return st
	}, true)
	return path, sum
}

// The events files the real 1.0.102 TUI wrote against the fake chat
// completions API, read line by line: the states a follower sees on the
// way, and the last one, alive and with the process gone.
func TestInferOnRealEvents(t *testing.T) {
	for _, tc := range []struct {
		file  string
		path  []string
		final sessions.State
		wait  sessions.WaitReason
		kind  sessions.FailureKind
		gone  sessions.State
		turns int
	}{
		// A plain reply, then /exit (session.shutdown).
		{"tui_text.jsonl", []string{"idle", "working", "waiting_on_user/review"},
			sessions.WaitingOnUser, sessions.WaitReview, sessions.NoFailure, sessions.Idle, 1},
		// A command that needs approval: asked, approved, run, answered.
		{"tui_tool.jsonl", []string{"idle", "working", "working/command", "waiting_on_user/permission/command", "working/command", "working", "waiting_on_user/review"},
			sessions.WaitingOnUser, sessions.WaitReview, sessions.NoFailure, sessions.Idle, 1},
		// The same, still waiting for the approval.
		{"tui_permission.jsonl", []string{"idle", "working", "working/command", "waiting_on_user/permission/command"},
			sessions.WaitingOnUser, sessions.WaitPermission, sessions.NoFailure, sessions.Interrupted, 1},
		// A provider refusing the key: the turn fails (auth).
		{"tui_401.jsonl", []string{"idle", "working", "waiting_on_user/review", "errored"},
			sessions.Errored, sessions.NoWait, sessions.Auth, sessions.Idle, 1},
		// SIGKILL while its command ran: the events stop mid-turn.
		{"tui_killed.jsonl", []string{"idle", "working", "working/command"},
			sessions.Working, sessions.NoWait, sessions.NoFailure, sessions.Interrupted, 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path, sum := replay(t, tc.file)
			if strings.Join(path, " → ") != strings.Join(tc.path, " → ") {
				t.Errorf("path %v, want %v", path, tc.path)
			}
			st, rule := Infer(Evidence{Liveness: observe.Liveness{PID: 1, Alive: true, Known: true}, Events: true, Summary: sum})
			if st.State != tc.final || st.Wait != tc.wait || st.Failure.Kind != tc.kind || st.Evidence == "" {
				t.Errorf("final %+v (rule %s), want %v/%v/%v", st, rule, tc.final, tc.wait, tc.kind)
			}
			if sum.Turns != tc.turns || sum.Skipped != 0 || sum.SessionID == "" || sum.FirstPrompt == "" {
				t.Errorf("summary %+v", sum)
			}
			gone, _ := Infer(Evidence{Liveness: observe.Liveness{PID: 1, Alive: false, Known: true}, Events: true, Summary: sum})
			if gone.State != tc.gone {
				t.Errorf("process gone: %+v, want %v", gone, tc.gone)
			}
		})
	}
}

// The permission evidence quotes the command Copilot asks to run.
func TestPermissionEvidenceQuotesTheCommand(t *testing.T) {
	_, sum := replay(t, "tui_permission.jsonl")
	st, _ := Infer(Evidence{Liveness: observe.Liveness{PID: 1, Alive: true, Known: true}, Events: true, Summary: sum})
	if !strings.Contains(st.Evidence, "`sleep 1; echo hi`") || !st.InTurn {
		t.Fatalf("%+v", st)
	}
}

// Synthetic events for what the captures do not show: a round that asks
// for tools is not the turn's end, a prompt typed mid-turn is the same
// turn, failures are classified by the managed decoder, compaction, an
// abort, a question.
func TestInferSyntheticRules(t *testing.T) {
	ev := func(typ, data string) []byte {
		return []byte(`{"type":"` + typ + `","data":` + data + `,"timestamp":"2026-11-30T10:00:00Z"}`)
	}
	var (
		user     = ev("user.message", `{"content":"fix it"}`)
		start    = ev("assistant.turn_start", `{"turnId":"0"}`)
		end      = ev("assistant.turn_end", `{"turnId":"0"}`)
		msgTools = ev("assistant.message", `{"content":"","toolRequests":[{"toolCallId":"c1","name":"bash"}]}`)
		msgText  = ev("assistant.message", `{"content":"done","toolRequests":[]}`)
		toolS    = ev("tool.execution_start", `{"toolCallId":"c1","toolName":"view"}`)
		toolE    = ev("tool.execution_complete", `{"toolCallId":"c1","success":true}`)
	)
	for _, tc := range []struct {
		name  string
		lines [][]byte
		state sessions.State
		wait  sessions.WaitReason
		kind  sessions.FailureKind
		turns int
		tool  string
	}{
		{"a round asking for tools goes on", [][]byte{user, start, msgTools, end}, sessions.Working, 0, 0, 1, ""},
		{"an open tool", [][]byte{user, start, msgTools, toolS}, sessions.Working, 0, 0, 1, "view"},
		{"the last round ends the turn", [][]byte{user, start, msgTools, toolS, toolE, end, start, msgText, end}, sessions.WaitingOnUser, sessions.WaitReview, 0, 1, ""},
		{"a prompt typed mid-turn is the same turn", [][]byte{user, start, user, msgText, end}, sessions.WaitingOnUser, sessions.WaitReview, 0, 1, ""},
		{"two turns", [][]byte{user, start, msgText, end, user, start}, sessions.Working, 0, 0, 2, ""},
		{"the tail began inside a turn", [][]byte{start, msgTools}, sessions.Working, 0, 0, 1, ""},
		{"rate limit", [][]byte{user, start, end, ev("session.error", `{"errorType":"rate_limit","message":"You have reached your weekly rate limit","statusCode":429}`)},
			sessions.Errored, 0, sessions.RateLimit, 1, ""},
		{"overflow", [][]byte{user, start, end, ev("session.error", `{"errorType":"query","message":"This model's maximum context length is 128000 tokens","statusCode":400}`)},
			sessions.Errored, 0, sessions.ContextOverflow, 1, ""},
		{"a new prompt after a failure", [][]byte{user, start, end, ev("session.error", `{"errorType":"authentication","statusCode":401}`), user}, sessions.Working, 0, 0, 2, ""},
		{"compacting", [][]byte{user, start, ev("session.compaction_start", `{}`)}, sessions.Compacting, 0, 0, 1, ""},
		{"compacted", [][]byte{user, start, ev("session.compaction_start", `{}`), ev("session.compaction_complete", `{"success":true}`)}, sessions.Working, 0, 0, 1, ""},
		{"aborted", [][]byte{user, start, toolS, ev("abort", `{"reason":"user initiated"}`)}, sessions.WaitingOnUser, sessions.WaitReview, 0, 1, ""},
		{"a question", [][]byte{user, start, ev("user_input.requested", `{"requestId":"q1"}`)}, sessions.WaitingOnUser, sessions.WaitQuestion, 0, 1, ""},
		{"a question answered", [][]byte{user, start, ev("user_input.requested", `{"requestId":"q1"}`), ev("user_input.completed", `{"requestId":"q1"}`)}, sessions.Working, 0, 0, 1, ""},
		{"a retry", [][]byte{user, start, ev("assistant.turn_retry", `{"reason":"429"}`)}, sessions.Working, 0, 0, 1, ""},
		{"shutdown mid-turn", [][]byte{user, start, ev("session.shutdown", `{}`)}, sessions.WaitingOnUser, sessions.WaitReview, 0, 1, ""},
		{"keys in another order", [][]byte{user, start, []byte(`{"data":{"toolCallId":"c9","toolName":"grep"},"type":"tool.execution_start"}`)}, sessions.Working, 0, 0, 1, "grep"},
		{"not an event", [][]byte{[]byte("garbage"), []byte(`{"no":"type"}`), []byte(`{"type":"tool.execution_start","data":`)}, sessions.Idle, 0, 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sum Summary
			for _, l := range tc.lines {
				sum.Feed(l)
			}
			st, rule := Infer(Evidence{Liveness: observe.Liveness{PID: 1, Alive: true, Known: true}, Events: true, Summary: sum})
			if st.State != tc.state || st.Wait != tc.wait || st.Failure.Kind != tc.kind || sum.Turns != tc.turns || st.Tool != tc.tool {
				t.Fatalf("%+v (rule %s, turns %d), want %v/%v/%v turns %d tool %q", st, rule, sum.Turns, tc.state, tc.wait, tc.kind, tc.turns, tc.tool)
			}
		})
	}
}

// A retry is said in the evidence; a failure's message is sanitized.
func TestEvidenceWords(t *testing.T) {
	var sum Summary
	sum.Feed([]byte(`{"type":"user.message","data":{"content":"x"}}`))
	sum.Feed([]byte(`{"type":"assistant.turn_retry","data":{"reason":"HTTP 429"}}`))
	st, _ := Infer(Evidence{Liveness: observe.Liveness{Alive: true, Known: true}, Events: true, Summary: sum})
	if !strings.Contains(st.Evidence, "retries (attempt 1)") {
		t.Fatalf("%+v", st)
	}
	sum.Feed([]byte(`{"type":"session.error","data":{"errorType":"authentication","message":"bad key sk-ant-api03-SECRETSECRETSECRETSECRET","statusCode":401}}`))
	st, _ = Infer(Evidence{Liveness: observe.Liveness{Alive: true, Known: true}, Events: true, Summary: sum})
	if st.State != sessions.Errored || strings.Contains(st.Failure.Message, "SECRETSECRET") {
		t.Fatalf("%+v", st)
	}
}

// FuzzSummary feeds arbitrary lines (seeded with every real events line
// and the synthetic shapes): the reader never panics, keeps its bounds and
// its invariants, and the rule stack always decides a state with evidence.
func FuzzSummary(f *testing.F) {
	observetest.SeedLines(f)
	f.Add([]byte(`{"type":"user.message","data":{"content":"x"}}`),
		[]byte(`{"type":"permission.requested","data":{"requestId":"r","permissionRequest":{"kind":"shell"}}}`))
	f.Add([]byte(`{"type":"session.error","data":{"errorType":"rate_limit","statusCode":429}}`), []byte(`{"type":"abort","data":{}}`))
	f.Add([]byte(`{"type":"tool.execution_start","data":{"toolCallId":"c"}}`), []byte(`{"type":`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var s Summary
		for range 3 {
			s.Feed(a)
			s.Feed(b)
		}
		if len(s.Open) > maxOpen || len(s.Asks) > maxOpen || (s.InTurn && s.Ended) || s.Turns > 3*2 {
			t.Fatalf("invariants: %+v", s)
		}
		for _, alive := range []bool{true, false} {
			st, rule := Infer(Evidence{Liveness: observe.Liveness{PID: 1, Alive: alive, Known: true}, Events: true, Summary: s})
			observetest.Decided(t, st, rule)
		}
	})
}

// benchEvents is every real events file in testdata, then tool rounds
// whose results are 256 KB each (the file keeps every tool's result).
func benchEvents(b *testing.B, rounds int) [][]byte {
	b.Helper()
	return observetest.WithRounds(b, rounds, func(i int, big []byte) [][]byte {
		return [][]byte{
			[]byte(`{"type":"assistant.turn_start","data":{"turnId":"0"}}`),
			[]byte(fmt.Sprintf(`{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"c%d","name":"bash"}]}}`, i)),
			[]byte(fmt.Sprintf(`{"type":"tool.execution_start","data":{"toolCallId":"c%d","toolName":"bash","arguments":{"command":"make"}}}`, i)),
			[]byte(fmt.Sprintf(`{"type":"tool.execution_complete","data":{"toolCallId":"c%d","success":true,"result":{"content":%s}}}`, i, big)),
			[]byte(`{"type":"assistant.turn_end","data":{"turnId":"0"}}`),
		}
	})
}

func benchFeed(b *testing.B, rounds int) {
	observetest.BenchFeed(b, benchEvents(b, rounds), func(s *Summary) int { return s.Skipped })
}

// BenchmarkEventsFeed: the real events files plus sixteen 256 KB results.
func BenchmarkEventsFeed(b *testing.B) { benchFeed(b, 16) }

// BenchmarkEventsFeedSmall is the real events alone (each file's
// system.message carries ~28 KB of instructions).
func BenchmarkEventsFeedSmall(b *testing.B) { benchFeed(b, 0) }
