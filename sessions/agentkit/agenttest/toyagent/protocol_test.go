package toyagent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// TestDecodeLine: every stdout line type and what it means, and the lines
// that mean nothing.
func TestDecodeLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       sessions.Event // Kind EvUnknown: no event
		skip       agentkit.SkipReason
		err        error
	}{
		{"session", `{"type":"session","session_id":"toy_1"}`,
			sessions.Event{Kind: sessions.EvSessionInit, AgentSessionID: "toy_1", Detail: "session open"}, agentkit.SkipNone, nil},
		{"turn start", `{"type":"turn_start","session_id":"toy_1"}`,
			sessions.Event{Kind: sessions.EvSessionInit, AgentSessionID: "toy_1", Detail: "turn started"}, agentkit.SkipNone, nil},
		{"text", `{"type":"text","text":"hi"}`, sessions.Event{Kind: sessions.EvActivity, Detail: "replying"}, agentkit.SkipNone, nil},
		{"tool start", `{"type":"tool_start","id":"c1","name":"bash","text":"ls"}`,
			sessions.Event{Kind: sessions.EvToolStarted, CallID: "c1", Name: "bash"}, agentkit.SkipNone, nil},
		{"tool end", `{"type":"tool_end","id":"c1","name":"bash"}`,
			sessions.Event{Kind: sessions.EvToolFinished, CallID: "c1", Name: "bash"}, agentkit.SkipNone, nil},
		{"turn end", `{"type":"turn_end"}`, sessions.Event{Kind: sessions.EvTurnCompleted}, agentkit.SkipNone, nil},
		{"turn cancelled", `{"type":"turn_end","cancelled":true}`,
			sessions.Event{Kind: sessions.EvTurnAborted, Detail: "cancelled"}, agentkit.SkipNone, nil},
		{"rate limited", `{"type":"error","status":429,"text":"API error 429: slow down"}`,
			sessions.Event{Kind: sessions.EvTurnFailed, Status: 429, Failure: sessions.Failure{Kind: sessions.RateLimit, Message: "API error 429: slow down"}},
			agentkit.SkipNone, nil},
		{"no answer", `{"type":"error","text":"connection refused"}`,
			sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.Network, Message: "connection refused"}},
			agentkit.SkipNone, nil},
		{"an error without text", `{"type":"error","status":500}`,
			sessions.Event{Kind: sessions.EvTurnFailed, Status: 500, Failure: sessions.Failure{Kind: sessions.Network, Message: "the model API failed"}},
			agentkit.SkipNone, nil},
		{"blank", "  ", sessions.Event{}, agentkit.SkipEmpty, nil},
		{"not JSON", "hello", sessions.Event{}, agentkit.SkipMalformed, ErrMalformed},
		{"cut short", `{"type":"te`, sessions.Event{}, agentkit.SkipMalformed, ErrMalformed},
		{"unknown type", `{"type":"thinking"}`, sessions.Event{}, agentkit.SkipUnknown, ErrUnknown},
		{"a prompt echoed back", `{"type":"prompt","text":"hi"}`, sessions.Event{}, agentkit.SkipUnknown, ErrUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, skip, err := DecodeLine([]byte(tc.line))
			var want []sessions.Event
			if tc.want.Kind != sessions.EvUnknown {
				want = []sessions.Event{tc.want}
			}
			if !slices.Equal(evs, want) || skip != tc.skip || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Errorf("DecodeLine(%s) = %+v, %q, %v; want %+v, %q, %v", tc.line, evs, skip, err, want, tc.skip, tc.err)
			}
		})
	}
}

// TestLineRoundTrip: what the request side writes is one line the CLI
// reads back as the same message.
func TestLineRoundTrip(t *testing.T) {
	for _, m := range []Message{{Type: TypePrompt, Text: "two\nlines \"quoted\""}, {Type: TypeInterrupt}} {
		b := Line(m)
		if n := len(b); n == 0 || b[n-1] != '\n' || slices.Contains(b[:n-1], '\n') {
			t.Fatalf("Line(%+v) = %q, want one line ending in a newline", m, b)
		}
		var got Message
		if _, skip, _, err := agentkit.UnmarshalLine(b, &got, ErrMalformed); err != nil || skip != agentkit.SkipNone || got != m {
			t.Errorf("Line(%+v) reads back as %+v (%q, %v)", m, got, skip, err)
		}
	}
}

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		resume string
		want   []string
		fails  bool
	}{
		{"", []string{"--stream"}, false},
		{"toy_0123abcd", []string{"--stream", "--resume", "toy_0123abcd"}, false},
		{"--stream", nil, true},
		{"toy_../x", nil, true},
		{"ses_1", nil, true},
	} {
		got, err := Args(tc.resume)
		if !slices.Equal(got, tc.want) || (err != nil) != tc.fails {
			t.Errorf("Args(%q) = %q, %v; want %q (an error: %v)", tc.resume, got, err, tc.want, tc.fails)
		}
	}
}

// FuzzDecodeLine: whatever a line holds, the decoder keeps its promises.
func FuzzDecodeLine(f *testing.F) {
	agenttest.SeedLines(f, `{"type":"session","session_id":"toy_1"}`, `{"type":"tool_start","id":"c","name":"bash"}`,
		`{"type":"turn_end","cancelled":true}`, `{"type":"error","status":"429"}`, `{"type":7}`, `[]`, ``)
	agenttest.FuzzDecodeLine(f, DecodeLine, func(s agentkit.SkipReason) agentkit.SkipReason { return s }, ErrMalformed, ErrUnknown, nil)
}

// TestAdapterUnder300Lines keeps what docs/development.md claims: the whole
// adapter (its non-test files: decoder, request side, arguments, process,
// orphan reaping) is under 300 lines.
func TestAdapterUnder300Lines(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += bytes.Count(b, []byte("\n"))
	}
	if total == 0 || total >= 300 {
		t.Errorf("the adapter's non-test files hold %d lines; the worked example of adding an agent promises under 300", total)
	}
}
