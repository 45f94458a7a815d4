package copilot

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

// decodeFile runs a captured stream (Copilot CLI 1.0.102 against the fake
// API, testdata/) through a Decoder and returns the event kinds in order
// (activity collapsed, metrics dropped) and the events themselves.
func decodeFile(t *testing.T, name string) ([]sessions.EventKind, []sessions.Event, Counters) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(bytes.NewReader(b), 0)
	var kinds []sessions.EventKind
	var evs []sessions.Event
	for _, line := range agenttest.Drain(t, d) {
		for _, ev := range line.Events {
			evs = append(evs, ev)
			if ev.Kind == sessions.EvMetrics || ev.Kind == sessions.EvActivity && len(kinds) > 0 && kinds[len(kinds)-1] == sessions.EvActivity {
				continue
			}
			kinds = append(kinds, ev.Kind)
		}
	}
	return kinds, evs, d.Stats()
}

func TestDecodeCapturedStreams(t *testing.T) {
	A, TS, TF, RS, TC, TFail, AB := sessions.EvActivity, sessions.EvToolStarted, sessions.EvToolFinished,
		sessions.EvRetryScheduled, sessions.EvTurnCompleted, sessions.EvTurnFailed, sessions.EvTurnAborted
	tests := []struct {
		file    string
		want    []sessions.EventKind
		failure sessions.FailureKind
	}{
		{"text.jsonl", []sessions.EventKind{A, TC}, sessions.NoFailure},
		{"resumed.jsonl", []sessions.EventKind{A, TC}, sessions.NoFailure},
		{"tool.jsonl", []sessions.EventKind{A, TS, A, TF, A, TC}, sessions.NoFailure},
		// Without --allow-all-tools the tool is denied, and the turn goes on.
		{"tool_noallow.jsonl", []sessions.EventKind{A, TS, TF, A, TC}, sessions.NoFailure},
		// Copilot's own retries hold the turn in the agent's retry: the model
		// calls between them are not activity.
		{"429.jsonl", []sessions.EventKind{A, RS, RS, RS, RS, RS, TFail}, sessions.RateLimit},
		{"401.jsonl", []sessions.EventKind{A, RS, RS, TFail}, sessions.Auth},
		{"ovf.jsonl", []sessions.EventKind{A, TFail}, sessions.ContextOverflow},
		{"stall.jsonl", []sessions.EventKind{AB}, sessions.NoFailure},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, evs, st := decodeFile(t, tt.file)
			if !slices.Equal(got, tt.want) {
				t.Errorf("kinds %v, want %v", got, tt.want)
			}
			if st.Skipped() != 0 {
				t.Errorf("%d lines skipped (%+v): the decoder does not know a type 1.0.102 prints", st.Skipped(), st)
			}
			var f sessions.Failure
			for _, ev := range evs {
				if ev.Kind == sessions.EvTurnFailed {
					f = ev.Failure
				}
			}
			if f.Kind != tt.failure {
				t.Errorf("failure %+v, want %v", f, tt.failure)
			}
			if f.Kind != sessions.NoFailure && (f.Message == "" || strings.Contains(f.Message, "sk-")) {
				t.Errorf("failure message %q", f.Message)
			}
		})
	}
}

func TestDecodeToolNamesAndRetryStatus(t *testing.T) {
	_, evs, _ := decodeFile(t, "tool.jsonl")
	var started sessions.Event
	for _, ev := range evs {
		if ev.Kind == sessions.EvToolStarted {
			started = ev
		}
	}
	if started.CallID != "call_1" || started.Name != "command" {
		t.Errorf("tool started %+v, want call_1 named command", started)
	}
	_, evs, _ = decodeFile(t, "429.jsonl")
	var last sessions.Event
	for _, ev := range evs {
		if ev.Kind == sessions.EvRetryScheduled {
			last = ev
		}
	}
	if last.Status != 429 || last.Attempt != 5 {
		t.Errorf("last retry %+v, want attempt 5 after status 429", last)
	}
}

func TestDecodeLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		kinds   []sessions.EventKind
		skip    agentkit.SkipReason
		err     error
		failure sessions.FailureKind
	}{
		{"blank", "   ", nil, agentkit.SkipEmpty, nil, 0},
		{"not json", "Error: boom", nil, agentkit.SkipMalformed, ErrMalformed, 0},
		{"broken json", `{"type":`, nil, agentkit.SkipMalformed, ErrMalformed, 0},
		{"no type", `{"data":{}}`, nil, agentkit.SkipMalformed, ErrMalformed, 0},
		{"unknown", `{"type":"future.thing","data":{}}`, nil, agentkit.SkipUnknown, ErrUnknown, 0},
		{"wrong field type still decodes", `{"type":"tool.execution_start","data":{"toolCallId":7,"toolName":"view"}}`,
			[]sessions.EventKind{sessions.EvToolStarted}, agentkit.SkipNone, nil, 0},
		{"usage is metrics", `{"type":"assistant.usage","data":{"inputTokens":5}}`, []sessions.EventKind{sessions.EvMetrics}, agentkit.SkipNone, nil, 0},
		{"lifecycle is quiet", `{"type":"session.skills_loaded","data":{}}`, nil, agentkit.SkipNone, nil, 0},
		{"subagent", `{"type":"subagent.started","data":{"toolCallId":"t","agentName":"explore"}}`, []sessions.EventKind{sessions.EvTaskStarted}, agentkit.SkipNone, nil, 0},
		{"compaction", `{"type":"session.compaction_complete","data":{"success":false}}`, []sessions.EventKind{sessions.EvCompactionFinished}, agentkit.SkipNone, nil, 0},
		{"result ok", `{"type":"result","sessionId":"s","exitCode":0}`, []sessions.EventKind{sessions.EvTurnCompleted}, agentkit.SkipNone, nil, 0},
		{"result failed alone", `{"type":"result","sessionId":"s","exitCode":1}`, []sessions.EventKind{sessions.EvTurnFailed}, agentkit.SkipNone, nil, sessions.OtherFailure},
		{"quota", `{"type":"session.error","data":{"errorType":"quota","errorCode":"quota_exceeded","message":"You have exceeded your monthly quota","statusCode":402}}`,
			[]sessions.EventKind{sessions.EvTurnFailed}, agentkit.SkipNone, nil, sessions.Billing},
		{"weekly rate limit", `{"type":"session.error","data":{"errorType":"rate_limit","errorCode":"user_weekly_rate_limited","message":"You have reached your weekly rate limit"}}`,
			[]sessions.EventKind{sessions.EvTurnFailed}, agentkit.SkipNone, nil, sessions.RateLimit},
		{"login", `{"type":"session.error","data":{"errorType":"query","message":"Please use /login to sign in to use Copilot"}}`,
			[]sessions.EventKind{sessions.EvTurnFailed}, agentkit.SkipNone, nil, sessions.Auth},
		{"overloaded", `{"type":"session.error","data":{"errorType":"model_call","message":"503 the model is overloaded","statusCode":503}}`,
			[]sessions.EventKind{sessions.EvTurnFailed}, agentkit.SkipNone, nil, sessions.Overloaded},
		{"server error", `{"type":"session.error","data":{"errorType":"model_call","message":"Failed after 5 retries: 500 internal","statusCode":500}}`,
			[]sessions.EventKind{sessions.EvTurnFailed}, agentkit.SkipNone, nil, sessions.Network},
		{"anthropic overflow", `{"type":"session.error","data":{"errorType":"query","message":"prompt is too long: 210000 tokens > 200000 maximum","statusCode":400}}`,
			[]sessions.EventKind{sessions.EvTurnFailed}, agentkit.SkipNone, nil, sessions.ContextOverflow},
		{"provider type says overflow", `{"type":"session.error","data":{"errorType":"query","providerErrorType":"context_length_exceeded","message":"400 Bad Request","statusCode":400}}`,
			[]sessions.EventKind{sessions.EvTurnFailed}, agentkit.SkipNone, nil, sessions.ContextOverflow},
		{"timeout", `{"type":"session.error","data":{"errorType":"timeout","message":"The request timed out"}}`,
			[]sessions.EventKind{sessions.EvTurnFailed}, agentkit.SkipNone, nil, sessions.Network},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, info, err := DecodeLine([]byte(tt.line))
			var kinds []sessions.EventKind
			for _, e := range evs {
				kinds = append(kinds, e.Kind)
			}
			if !slices.Equal(kinds, tt.kinds) || info.Skip != tt.skip || !errors.Is(err, tt.err) && (err != nil || tt.err != nil) {
				t.Errorf("kinds %v skip %v err %v, want %v %v %v", kinds, info.Skip, err, tt.kinds, tt.skip, tt.err)
			}
			if len(evs) == 1 && evs[0].Failure.Kind != tt.failure {
				t.Errorf("failure %+v, want %v", evs[0].Failure, tt.failure)
			}
		})
	}
}

// TestDecodeErrorThenResultIsOneEnd: session.error ends the turn; the
// result line after it (exitCode 1) must not end it a second time.
func TestDecodeErrorThenResultIsOneEnd(t *testing.T) {
	in := `{"type":"session.error","data":{"errorType":"rate_limit","message":"429","statusCode":429}}
{"type":"result","exitCode":1}
`
	d := NewDecoder(strings.NewReader(in), 0)
	var n int
	for _, line := range agenttest.Drain(t, d) {
		n += len(line.Events)
	}
	if n != 1 {
		t.Errorf("%d events, want the failure alone", n)
	}
}

func TestDecoderOversizeAndLastLine(t *testing.T) {
	long := `{"type":"assistant.message","data":{"content":"` + strings.Repeat("x", 300) + `"}}`
	in := long + "\n" + `{"type":"result","exitCode":0}`
	d := NewDecoder(strings.NewReader(in), 100)
	l1, err := d.Next()
	if err != nil || l1.Info.Skip != agentkit.SkipOversize || l1.Info.Size != len(long) {
		t.Fatalf("first line %+v %v, want an oversize skip of %d bytes", l1.Info, err, len(long))
	}
	l2, err := d.Next()
	if err != nil || len(l2.Events) != 1 || l2.Events[0].Kind != sessions.EvTurnCompleted {
		t.Fatalf("last line without newline: %+v %v", l2, err)
	}
	if st := d.Stats(); st.Oversize != 1 || st.Lines != 2 {
		t.Errorf("stats %+v", st)
	}
}

func FuzzDecodeLine(f *testing.F) {
	for _, name := range []string{"text.jsonl", "tool.jsonl", "429.jsonl", "ovf.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			f.Add(line)
		}
	}
	agenttest.FuzzDecodeLine(f, DecodeLine, func(i LineInfo) agentkit.SkipReason { return i.Skip }, ErrMalformed, ErrUnknown,
		func(t *testing.T, line []byte, evs []sessions.Event) {
			for _, ev := range evs {
				if ev.Kind == sessions.EvTurnFailed && ev.Failure.Kind == sessions.NoFailure {
					t.Fatalf("a failed turn without a failure kind")
				}
			}
			// The stream decoder must agree with DecodeLine on a lone line.
			d := NewDecoder(bytes.NewReader(line), 0)
			l, derr := d.Next()
			if derr == nil && len(l.Events) != len(evs) {
				t.Fatalf("stream decoded %d events, DecodeLine %d", len(l.Events), len(evs))
			}
		})
}
