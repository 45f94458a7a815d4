package geminiterm

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
)

// feedFile feeds every line of a testdata file, or its first n lines (n <
// 0: all).
func feedFile(t *testing.T, name string, n int) Summary {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	for i, l := range bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n")) {
		if n >= 0 && i >= n {
			break
		}
		s.Feed(l)
	}
	return s
}

// The files the real 0.61.0 TUI wrote against the fake API (see the
// package's chat.go for the scenarios), read whole and line by line: every
// prefix of a turn is what a tail sees mid-turn.
func TestRealChatFiles(t *testing.T) {
	for _, tc := range []struct {
		file string
		// lines read (-1: all)
		n        int
		phase    Phase
		state    sessions.State
		wait     sessions.WaitReason
		turns    int
		failure  sessions.FailureKind
		evidence string
	}{
		{"text-then-tool.jsonl", 2, NoPrompt, sessions.Idle, sessions.NoWait, 0, sessions.NoFailure, "no prompt yet"},
		{"text-then-tool.jsonl", 3, Prompted, sessions.Working, sessions.NoWait, 1, sessions.NoFailure, "turn in flight"},
		{"text-then-tool.jsonl", 5, Replied, sessions.WaitingOnUser, sessions.WaitReview, 1, sessions.NoFailure, "the model replied"},
		{"text-then-tool.jsonl", 7, Prompted, sessions.Working, sessions.NoWait, 2, sessions.NoFailure, "turn in flight"},
		{"text-then-tool.jsonl", 9, CallPending, sessions.Working, sessions.NoWait, 2, sessions.NoFailure, "has not completed"},
		{"text-then-tool.jsonl", 11, ToolDone, sessions.Working, sessions.NoWait, 2, sessions.NoFailure, "tools completed"},
		{"text-then-tool.jsonl", 12, Prompted, sessions.Working, sessions.NoWait, 2, sessions.NoFailure, "turn in flight"},
		{"text-then-tool.jsonl", -1, Replied, sessions.WaitingOnUser, sessions.WaitReview, 2, sessions.NoFailure, "the model replied"},
		{"error-401.jsonl", -1, Failed, sessions.Errored, sessions.NoWait, 1, sessions.Auth, "the turn failed (auth"},
		{"error-too-long.jsonl", -1, Failed, sessions.Errored, sessions.NoWait, 1, sessions.ContextOverflow, "the turn failed"},
		// The approval prompt is not written: the pending call says so.
		{"approval-prompt.jsonl", -1, CallPending, sessions.Working, sessions.NoWait, 1, sessions.NoFailure, "waiting for your approval"},
		{"killed-mid-tool.jsonl", -1, CallPending, sessions.Working, sessions.NoWait, 1, sessions.NoFailure, "has not completed"},
		// Esc on the approval prompt: the calls cancelled, then "Request
		// cancelled.", then the seed merged with the prompt (not a turn).
		{"esc-denied-tool.jsonl", -1, Cancelled, sessions.WaitingOnUser, sessions.WaitReview, 1, sessions.NoFailure, "you stopped the turn"},
		{"esc-stalled-stream.jsonl", -1, Cancelled, sessions.WaitingOnUser, sessions.WaitReview, 1, sessions.NoFailure, "you stopped the turn"},
		// The quota dialog writes nothing: a turn in flight (its silence
		// goes suspect and is escalated).
		{"quota-dialog.jsonl", -1, Prompted, sessions.Working, sessions.NoWait, 1, sessions.NoFailure, "turn in flight"},
	} {
		s := feedFile(t, tc.file, tc.n)
		st, rule := Infer(Evidence{Liveness: observe.Liveness{PID: 7, Alive: true, Known: true}, Chat: true, Summary: s})
		if s.Phase != tc.phase || st.State != tc.state || st.Wait != tc.wait || s.Turns != tc.turns ||
			st.Failure.Kind != tc.failure || !strings.Contains(st.Evidence, tc.evidence) {
			t.Errorf("%s[:%d]: phase %s, %s/%s turns %d failure %s (%s: %q); want %s, %s/%s turns %d failure %s, %q",
				tc.file, tc.n, s.Phase, st.State, st.Wait, s.Turns, st.Failure.Kind, rule, st.Evidence,
				tc.phase, tc.state, tc.wait, tc.turns, tc.failure, tc.evidence)
		}
		if s.SessionID == "" || st.InTurn != tc.phase.InTurn() {
			t.Errorf("%s[:%d]: session id %q, in turn %v", tc.file, tc.n, s.SessionID, st.InTurn)
		}
		if strings.Contains(st.Failure.Message, "[API Error") {
			t.Errorf("%s: the failure keeps the CLI's wrapper: %q", tc.file, st.Failure.Message)
		}
	}
	if s := feedFile(t, "text-then-tool.jsonl", -1); s.FirstPrompt != "hello [[scenario:text]]" {
		t.Errorf("first prompt %q", s.FirstPrompt)
	}
}

// Records the measured files do not hold: a call written while it runs or
// awaits approval (the status set the protocol names), a rewind, a
// re-append of an older message, a torn or foreign line.
func TestSummaryEdgeCases(t *testing.T) {
	prompt := `{"id":"p1","type":"user","content":[{"text":"do it"}]}`
	reply := `{"id":"g1","type":"gemini","content":"Done."}`
	for _, tc := range []struct {
		name  string
		lines []string
		phase Phase
		tool  string
		turns int
	}{
		{"executing call", []string{prompt, `{"id":"g1","type":"gemini","content":"","toolCalls":[{"name":"run_shell_command","status":"executing"}]}`}, ToolOpen, "run_shell_command", 1},
		{"awaiting approval", []string{prompt, `{"id":"g1","type":"gemini","content":"","toolCalls":[{"name":"write_file","status":"awaiting_approval"},{"name":"ls","status":"success"}]}`}, Approval, "write_file", 1},
		{"rewound", []string{prompt, reply, `{"$rewindTo":"p1"}`}, Rewound, "", 1},
		{"an older message re-appended is no news", []string{prompt, reply, `{"id":"p2","type":"user","content":[{"text":"again"}]}`, `{"id":"g1","type":"gemini","content":"Done.","tokens":{"total":3}}`}, Prompted, "", 2},
		{"the same message re-appended with its calls", []string{prompt, `{"id":"g1","type":"gemini","content":""}`, `{"id":"g1","type":"gemini","content":"","toolCalls":[{"name":"ls","status":"error"}]}`}, ToolDone, "", 1},
		{"torn last line and garbage are skipped", []string{prompt, reply, `{"id":"g2","type":"gem`, `not json`, ``}, Replied, "", 1},
		{"a repeated prompt id is one turn", []string{prompt, prompt}, Prompted, "", 1},
		{"an info after an error keeps the failure", []string{prompt, `{"id":"e1","type":"error","content":"[API Error: boom]"}`, `{"id":"i1","type":"info","content":"Request cancelled."}`}, Failed, "", 1},
		{"a warning is no state", []string{prompt, reply, `{"id":"w1","type":"warning","content":"slow"}`}, Replied, "", 1},
	} {
		var s Summary
		for _, l := range tc.lines {
			s.Feed([]byte(l))
		}
		if s.Phase != tc.phase || s.Tool != tc.tool || s.Turns != tc.turns {
			t.Errorf("%s: phase %s tool %q turns %d; want %s %q %d", tc.name, s.Phase, s.Tool, s.Turns, tc.phase, tc.tool, tc.turns)
		}
	}
}

// An error record's text is classified with the managed adapter's rules:
// the API body inside the CLI's "[API Error: …]", its status and RetryInfo.
func TestFailureOf(t *testing.T) {
	at := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		msg   string
		kind  sessions.FailureKind
		retry time.Duration
	}{
		{`[API Error: {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}}]`, sessions.RateLimit, 30 * time.Second},
		{`[API Error: {"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}]`, sessions.Overloaded, 0},
		{`[API Error: {"error":{"code":401,"message":"API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED"}}]`, sessions.Auth, 0},
		{`[API Error: {"error":{"code":400,"message":"The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}]`, sessions.ContextOverflow, 0},
		{`[API Error: fetch failed: ECONNREFUSED]`, sessions.Network, 0},
	} {
		f := FailureOf(Failure{Message: tc.msg, At: at})
		var retry time.Duration
		if !f.RetryAt.IsZero() {
			retry = f.RetryAt.Sub(at)
		}
		if f.Kind != tc.kind || retry != tc.retry || strings.Contains(f.Message, "API Error") {
			t.Errorf("%s: %s retry %s %q; want %s retry %s", tc.msg, f.Kind, retry, f.Message, tc.kind, tc.retry)
		}
	}
}

func TestPhaseString(t *testing.T) {
	if Cancelled.String() != "cancelled" || Phase(99).String() != "phase(?)" {
		t.Errorf("%s %s", Cancelled, Phase(99))
	}
}

// A pending tool call (the real approval-prompt and killed-mid-tool files)
// is told apart by what runs under the CLI: a child process is the tool
// running; none for seconds is the approval prompt the file does not show;
// unknown, or too soon to tell, says both.
func TestPendingCallByChildren(t *testing.T) {
	for _, tc := range []struct {
		file     string
		children int
		known    bool
		after    time.Duration
		state    sessions.State
		wait     sessions.WaitReason
		evidence string
	}{
		{"approval-prompt.jsonl", 0, true, 5 * time.Second, sessions.WaitingOnUser, sessions.WaitPermission, "waits for your approval"},
		{"approval-prompt.jsonl", 0, true, time.Second, sessions.Working, sessions.NoWait, "running, or waiting for your approval"},
		{"approval-prompt.jsonl", 0, false, time.Minute, sessions.Working, sessions.NoWait, "running, or waiting for your approval"},
		{"killed-mid-tool.jsonl", 1, true, time.Minute, sessions.Working, sessions.NoWait, "running a tool"},
	} {
		s := feedFile(t, tc.file, -1)
		if s.PendingSince.IsZero() {
			t.Fatalf("%s: no pending time", tc.file)
		}
		st, _ := Infer(Evidence{Liveness: observe.Liveness{PID: 7, Alive: true, Known: true}, Chat: true, Summary: s, Children: tc.children, ChildrenKnown: tc.known, Now: s.PendingSince.Add(tc.after)})
		if st.State != tc.state || st.Wait != tc.wait || !st.InTurn || !strings.Contains(st.Evidence, tc.evidence) {
			t.Errorf("%s with %d children (%v) after %s: %s/%s %q", tc.file, tc.children, tc.known, tc.after, st.State, st.Wait, st.Evidence)
		}
	}
}

// FuzzFeed: any bytes, fed as lines in any order, never panic the summary
// or the rule stack, and the phase stays a known one.
func FuzzFeed(f *testing.F) {
	for _, l := range observetest.TestdataLines(f) {
		f.Add(l)
	}
	f.Add([]byte{}) // a blank line
	f.Add([]byte(`{"$rewindTo":null}`))
	f.Add([]byte(`{"id":"x","type":"user","content":"not parts"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var s Summary
		for _, l := range bytes.Split(line, []byte("\n")) {
			s.Feed(l)
		}
		s.Feed(line)
		if s.Phase.String() == "phase(?)" {
			t.Fatalf("phase %d", s.Phase)
		}
		Infer(Evidence{Liveness: observe.Liveness{Alive: true, Known: true}, Chat: true, Summary: s, ChildrenKnown: true, Now: time.Now()})
	})
}

// BenchmarkFeed is the cost of one chat line (the real CLI's, a turn with a
// tool call and its output).
func BenchmarkFeed(b *testing.B) {
	data, err := os.ReadFile("testdata/text-then-tool.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var s Summary
		for _, l := range lines {
			s.Feed(l)
		}
	}
	b.ReportMetric(float64(len(lines)), "lines/op")
}
