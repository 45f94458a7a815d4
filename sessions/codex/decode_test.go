package codex

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// The capture files are the real stdout of `codex app-server` 0.171.0
// against the fake Responses API (fakeapi), driven by the measuring tool in
// fakeapi/measure_test.go: request 1 is initialize, 2 thread/start, 3
// turn/start.

// primed is a decoder that knows the measuring tool's three requests.
func primed(r io.Reader, maxLine int) *Decoder {
	d := NewDecoder(r, maxLine)
	d.expect(1, methodInitialize)
	d.expect(2, methodThreadStart)
	d.expect(3, methodTurnStart)
	return d
}

func decodeAll(t testing.TB, d *Decoder) ([]sessions.Event, []Line) {
	t.Helper()
	var events []sessions.Event
	var lines []Line
	for _, l := range agenttest.Drain(t, d) {
		events = append(events, l.Events...)
		lines = append(lines, l)
	}
	return events, lines
}

// summary renders the fields of an event that matter for its kind.
func summary(e sessions.Event) string {
	s := e.Kind.String()
	switch e.Kind {
	case sessions.EvToolStarted, sessions.EvToolFinished:
		s += " " + e.Name
	case sessions.EvWaitingOnUser:
		s += fmt.Sprintf(" %s req=%s tool=%s", e.Reason, e.Permission.RequestID, e.Permission.Tool)
	case sessions.EvRetryScheduled:
		s += fmt.Sprintf(" %d/%d status=%d %s", e.Attempt, e.MaxAttempts, e.Status, e.Failure.Kind)
	case sessions.EvTurnFailed:
		s += " " + e.Failure.Kind.String()
		if !e.Failure.RetryAt.IsZero() {
			s += " until " + e.Failure.RetryAt.Format(time.RFC3339)
		}
	case sessions.EvCompactionFinished:
		s += fmt.Sprintf(" ok=%v", e.OK)
	}
	return s
}

// significant are the events that change a state: activity and metrics
// are left out, session_init keeps its place.
func significant(events []sessions.Event) []string {
	var out []string
	for _, e := range events {
		if e.Kind == sessions.EvActivity || e.Kind == sessions.EvMetrics {
			continue
		}
		out = append(out, summary(e))
	}
	return out
}

// replay drives sessions.Apply with a decoded stream the way the runtime
// does: a turn starts when the prompt is sent, right after the thread opens.
func replay(events []sessions.Event) sessions.Session {
	now := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
	s := sessions.Session{ID: "s1", Agent: "codex", Source: sessions.Managed, ProcessAlive: true, CreatedAt: now}
	for _, e := range events {
		now = now.Add(time.Second)
		s = sessions.Apply(s, e, now)
		if e.Kind == sessions.EvSessionInit {
			s = sessions.Apply(s, sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.ByUser}, now)
		}
	}
	return s
}

func TestCapturesDecode(t *testing.T) {
	tests := []struct {
		file    string
		want    []string
		state   sessions.State
		failure sessions.FailureKind
	}{
		{"text.jsonl", []string{"session_init", "turn_completed"}, sessions.WaitingOnUser, sessions.NoFailure},
		// approval_policy on-request, a command asking to leave the
		// sandbox: Codex asks; the measuring tool accepted (request id 0),
		// which this decoder, not having sent it, reads as withdrawn.
		{"write.jsonl", []string{"session_init", "tool_started command", "waiting_on_user permission req=0 tool=command",
			"user_answered", "tool_finished command", "turn_completed"}, sessions.WaitingOnUser, sessions.NoFailure},
		{"tool.jsonl", []string{"session_init", "tool_started command", "tool_finished command", "turn_completed"},
			sessions.WaitingOnUser, sessions.NoFailure},
		{"401.jsonl", []string{"session_init", "retry_scheduled 1/2 status=401 auth", "retry_scheduled 2/2 status=401 auth", "turn_failed auth"},
			sessions.Errored, sessions.Auth},
		// A 429 is not retried by the CLI (request_max_retries 0): one
		// failure with the status in codexErrorInfo.
		{"429.jsonl", []string{"session_init", "turn_failed rate_limit"}, sessions.Errored, sessions.RateLimit},
		{"500.jsonl", []string{"session_init", "retry_scheduled 1/2 status=0 network", "retry_scheduled 2/2 status=0 network", "turn_failed network"},
			sessions.Errored, sessions.Network},
		// codexErrorInfo "other": the text says the stream dropped.
		{"cut.jsonl", []string{"session_init", "retry_scheduled 1/2 status=0 network", "retry_scheduled 2/2 status=0 network", "turn_failed network"},
			sessions.Errored, sessions.Network},
		{"too_long.jsonl", []string{"session_init", "turn_failed context_overflow"}, sessions.Errored, sessions.ContextOverflow},
		// A usage limit (429 usage_limit_reached with the x-codex-primary-*
		// headers): the exhausted window's reset is the retry time.
		{"usage_limit.jsonl", []string{"session_init", "turn_failed rate_limit until 2026-11-30T20:23:56Z"}, sessions.Errored, sessions.RateLimit},
		// The CLI's idle timeout retried the stalled stream; the retry
		// answered.
		{"stall.jsonl", []string{"session_init", "retry_scheduled 1/2 status=0 network", "turn_completed"},
			sessions.WaitingOnUser, sessions.NoFailure},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			d := primed(f, 0)
			events, _ := decodeAll(t, d)
			got := significant(events)
			if !slices.Equal(got, tt.want) {
				t.Errorf("events\n got %q\nwant %q", got, tt.want)
			}
			if st := d.Stats(); st.Skipped() != 0 {
				t.Errorf("skipped lines in a real capture: %+v", st)
			}
			if events[0].Kind != sessions.EvMetrics || !strings.Contains(events[0].Detail, "initialize") {
				t.Errorf("first event %+v, want the initialize answer as metrics", events[0])
			}
			s := replay(events)
			if s.State != tt.state || s.Failure.Kind != tt.failure {
				t.Errorf("replayed to %s with %+v, want %s %s", s.State, s.Failure, tt.state, tt.failure)
			}
			if s.AgentSessionID == "" {
				t.Error("no agent session id: the thread/start answer was not read")
			}
		})
	}
}

// line builds one JSON-RPC line for the synthetic tests.
func notif(method, params string) string {
	return fmt.Sprintf(`{"method":%q,"params":%s}`, method, params)
}

func TestDecodeSynthetic(t *testing.T) {
	const th = `"threadId":"T"`
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{
		{"thread id from thread/start", []string{`{"id":2,"result":{"thread":{"id":"T"}}}`}, []string{"session_init"}},
		{"a refused turn/start fails the turn", []string{`{"id":3,"error":{"code":-32600,"message":"no thread"}}`},
			[]string{"turn_failed other"}},
		{"command approval waits on the user", []string{`{"id":7,"method":"item/commandExecution/requestApproval","params":{` + th + `,"turnId":"u","itemId":"c1","command":"rm -rf x"}}`},
			[]string{"waiting_on_user permission req=7 tool=command"}},
		{"file change approval", []string{`{"id":"s8","method":"item/fileChange/requestApproval","params":{` + th + `,"itemId":"f1"}}`},
			[]string{"waiting_on_user permission req=s8 tool=file change"}},
		{"request_user_input is a question", []string{`{"id":9,"method":"item/tool/requestUserInput","params":{` + th + `,"itemId":"q","questions":[]}}`},
			[]string{"waiting_on_user question req=9 tool=request_user_input"}},
		{"withdrawn request is answered", []string{
			`{"id":9,"method":"item/commandExecution/requestApproval","params":{` + th + `}}`,
			notif("serverRequest/resolved", `{`+th+`,"requestId":9}`)},
			[]string{"waiting_on_user permission req=9 tool=command", "user_answered"}},
		{"compaction item", []string{
			notif("item/started", `{`+th+`,"item":{"type":"contextCompaction","id":"c"}}`),
			notif("item/completed", `{`+th+`,"item":{"type":"contextCompaction","id":"c"}}`)},
			[]string{"compaction_started", "compaction_finished ok=true"}},
		{"file change and mcp tools", []string{
			notif("item/started", `{`+th+`,"item":{"type":"fileChange","id":"f"}}`),
			notif("item/completed", `{`+th+`,"item":{"type":"fileChange","id":"f","status":"completed"}}`),
			notif("item/started", `{`+th+`,"item":{"type":"mcpToolCall","id":"m","server":"gh","tool":"search"}}`)},
			[]string{"tool_started file change", "tool_finished file change", "tool_started mcp gh/search"}},
		{"interrupted turn is aborted", []string{notif("turn/completed", `{`+th+`,"turn":{"id":"u","status":"interrupted"}}`)},
			[]string{"turn_aborted"}},
		{"usage limit takes the exhausted window's reset", []string{
			notif("account/rateLimits/updated", `{"rateLimits":{"primary":{"usedPercent":100,"resetsAt":1796070000},"secondary":{"usedPercent":40,"resetsAt":1796990000}}}`),
			notif("turn/completed", `{`+th+`,"turn":{"id":"u","status":"failed","error":{"message":"You've hit your usage limit.","codexErrorInfo":"usageLimitExceeded"}}}`)},
			[]string{"turn_failed rate_limit until 2026-11-30T20:20:00Z"}},
		{"overloaded", []string{notif("turn/completed", `{`+th+`,"turn":{"id":"u","status":"failed","error":{"message":"busy","codexErrorInfo":"serverOverloaded"}}}`)},
			[]string{"turn_failed overloaded"}},
		{"unauthorized", []string{notif("turn/completed", `{`+th+`,"turn":{"id":"u","status":"failed","error":{"message":"no","codexErrorInfo":"unauthorized"}}}`)},
			[]string{"turn_failed auth"}},
		{"failed turn without error uses the last error notification", []string{
			notif("error", `{`+th+`,"willRetry":false,"error":{"message":"x","codexErrorInfo":"contextWindowExceeded"}}`),
			notif("turn/completed", `{`+th+`,"turn":{"id":"u","status":"failed","error":null}}`)},
			[]string{"turn_failed context_overflow"}},
		{"http failure without a status is the network", []string{notif("turn/completed", `{`+th+`,"turn":{"id":"u","status":"failed","error":{"message":"x","codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":null}}}}}`)},
			[]string{"turn_failed network"}},
		{"subagent's thread does not end our turn", []string{
			`{"id":2,"result":{"thread":{"id":"T"}}}`,
			notif("turn/completed", `{"threadId":"SUB","turn":{"id":"x","status":"failed"}}`)},
			[]string{"session_init"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := primed(strings.NewReader(strings.Join(tt.lines, "\n")+"\n"), 0)
			events, lines := decodeAll(t, d)
			for _, l := range lines {
				if l.Info.Skip != agentkit.SkipNone {
					t.Errorf("line %d skipped: %s", l.Info.Number, l.Info.Detail)
				}
			}
			got := significant(events)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestUnservedRequestIsRefused: a server request the app does not serve is
// answered with a JSON-RPC error at once, so Codex never waits on it.
func TestUnservedRequestIsRefused(t *testing.T) {
	d := NewDecoder(strings.NewReader(`{"id":"a1","method":"account/chatgptAuthTokens/refresh","params":{}}`+"\n"), 0)
	l, err := d.Next()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"a1","error":{"code":-32601,"message":"not supported by this client"}}` + "\n"; string(l.Reply) != want {
		t.Errorf("reply %s, want %s", l.Reply, want)
	}
}

func TestBadLinesAreSkippedAndCounted(t *testing.T) {
	stream := strings.Join([]string{
		"not json",
		`{"method":"some/future/notification","params":{}}`,
		`{"id":99,"result":{}}`, // an answer to nothing we asked
		`{"method":"turn/completed","params":` + strings.Repeat(" ", 300) + `{}}`,
		`{"method":"item/agentMessage/delta","params":{"delta":"x"}}`,
		`{"method":`,
	}, "\n")
	d := NewDecoder(strings.NewReader(stream), 200)
	events, _ := decodeAll(t, d)
	st := d.Stats()
	if st.Malformed != 2 || st.Unknown != 2 || st.Oversize != 1 || st.Lines != 6 {
		t.Errorf("stats %+v, want 2 malformed, 2 unknown, 1 oversize of 6 lines", st)
	}
	if len(events) != 1 || events[0].Kind != sessions.EvActivity {
		t.Errorf("events %+v, want the one delta as activity", events)
	}
}

func TestApprovalResponses(t *testing.T) {
	tests := []struct {
		method string
		allow  bool
		want   string
	}{
		{"item/commandExecution/requestApproval", true, `{"id":7,"result":{"decision":"accept"}}`},
		{"item/commandExecution/requestApproval", false, `{"id":7,"result":{"decision":"decline"}}`},
		{"item/fileChange/requestApproval", true, `{"id":7,"result":{"decision":"accept"}}`},
		{"execCommandApproval", false, `{"id":7,"result":{"decision":"denied"}}`},
		{"item/permissions/requestApproval", true, `{"id":7,"error":{"code":-32000,"message":"declined by the user"}}`},
	}
	for _, tt := range tests {
		if got := strings.TrimSpace(string(ApprovalResponse(agentkit.RawRPCID("7"), tt.method, tt.allow))); got != tt.want {
			t.Errorf("%s allow=%v: %s, want %s", tt.method, tt.allow, got, tt.want)
		}
	}
	if got := string(agentkit.RawRPCID("s8")); got != `"s8"` {
		t.Errorf("RawRPCID(s8) = %s", got)
	}
}

// seedLines adds every captured line plus edge cases to a fuzz corpus.
func seedLines(f *testing.F) {
	agenttest.SeedLines(f,
		"", "{", "null", `{"id":null}`, `{"id":[],"method":1}`, `{"method":"error","params":{"willRetry":true,"error":{"codexErrorInfo":{"a":1,"b":2}}}}`,
		`{"method":"turn/completed","params":{"turn":{"status":"failed","error":{"codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":-1}}}}}}`,
		`{"method":"account/rateLimits/updated","params":{"rateLimits":{"primary":{"usedPercent":1e308,"resetsAt":-1}}}}`,
		`{"id":1,"method":"item/tool/requestUserInput","params":null}`,
	)
}

func FuzzDecodeLine(f *testing.F) {
	seedLines(f)
	agenttest.FuzzDecodeLine(f, DecodeLine, func(i LineInfo) agentkit.SkipReason { return i.Skip }, ErrMalformed, ErrUnknown,
		func(t *testing.T, _ []byte, events []sessions.Event) {
			for _, e := range events {
				if e.Kind == sessions.EvWaitingOnUser && (e.Reason == sessions.NoWait || e.Permission == nil) {
					t.Fatalf("waiting without a reason or request: %+v", e)
				}
			}
		})
}

// FuzzDecoder feeds arbitrary bytes as a whole stream through a small line
// limit: the decoder must neither panic nor lose count.
func FuzzDecoder(f *testing.F) {
	seedLines(f)
	f.Fuzz(func(t *testing.T, stream []byte) {
		agenttest.CheckStream(t, stream, func(r io.Reader, maxLine int) agenttest.Decoder[Line, Counters] { return primed(r, maxLine) },
			func(l Line) (agentkit.SkipReason, int) { return l.Info.Skip, l.Info.Size })
	})
}
