package gemini

import (
	"bytes"
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

// The lines below are what `gemini --acp` 0.61.0 printed against the fake
// API (sessions/gemini/fakeapi), shortened only where a field is not read
// (the mode and model lists). Requests were: 1 initialize, 2 session/new,
// 3 session/prompt.
const (
	lineInit       = `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"authMethods":[{"id":"gemini-api-key","name":"Gemini API key"}],"agentInfo":{"name":"gemini-cli","title":"Gemini CLI","version":"0.61.0"},"agentCapabilities":{"loadSession":true}}}`
	lineNew        = `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"bf7a1e56-dc2b-4e0c-b9f8-6672aeca00a6","modes":{"currentModeId":"default"}}}`
	lineCommands   = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bf7a1e56-dc2b-4e0c-b9f8-6672aeca00a6","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"memory","description":"Manage memory."}]}}}`
	linePermission = `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"bf7a1e56-dc2b-4e0c-b9f8-6672aeca00a6","options":[{"optionId":"proceed_always","name":"Allow for this session","kind":"allow_always"},{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}],"toolCall":{"toolCallId":"run_shell_command__run_shell_command_1796076543323_0","status":"pending","title":"echo hi > out.txt; sleep 3","content":[{"type":"content","content":{"type":"text","text":"[current working directory /tmp/gm/work]"}}],"locations":[],"kind":"execute"}}}`
	lineToolDone   = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bf7a1e56-dc2b-4e0c-b9f8-6672aeca00a6","update":{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__run_shell_command_1796076543323_0","status":"completed","title":"echo hi > out.txt; sleep 3","content":[],"locations":[],"kind":"execute"}}}`
	lineToolCall   = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bf7a1e56-dc2b-4e0c-b9f8-6672aeca00a6","update":{"sessionUpdate":"tool_call","toolCallId":"run_shell_command__run_shell_command_1796076546978_0","status":"in_progress","title":"echo hi","content":[],"locations":[],"kind":"execute"}}}`
	lineChunk      = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bf7a1e56-dc2b-4e0c-b9f8-6672aeca00a6","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello world."}}}}`
	lineEndTurn    = `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":10,"output_tokens":3},"model_usage":[{"model":"gemini-2.5-flash","token_count":{"input_tokens":10,"output_tokens":3}}]}}}}`
	lineCancelled  = `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`
	line401        = `{"jsonrpc":"2.0","id":3,"error":{"code":401,"message":"{\"error\":{\"code\":401,\"message\":\"API key not valid. Please pass a valid API key.\",\"status\":\"UNAUTHENTICATED\"}}"}}`
	line400        = `{"jsonrpc":"2.0","id":3,"error":{"code":400,"message":"{\"error\":{\"code\":400,\"message\":\"The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).\",\"status\":\"INVALID_ARGUMENT\"}}"}}`
	line429        = `{"jsonrpc":"2.0","id":3,"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).\nSuggested retry after 1s."}}`
	// line429Hourly is a RetryInfo delay past the CLI's 300 s retry
	// ceiling: a TerminalQuotaError that keeps the delay in its words
	// (0.61.0, the fake's quota_hourly scenario).
	line429Hourly = `{"jsonrpc":"2.0","id":3,"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).\nSuggested retry after 3600s."}}`
	lineDaily     = `{"jsonrpc":"2.0","id":3,"error":{"code":429,"message":"You have exhausted your daily quota on this model."}}`
	line503       = `{"jsonrpc":"2.0","id":3,"error":{"code":503,"message":"The model is overloaded. Please try again later."}}`
	lineNotFound  = `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Session not found: bf7a1e56"}}`
)

// stream decodes lines with a decoder that sent the requests 1-3.
func stream(t *testing.T, now time.Time, lines ...string) []sessions.Event {
	t.Helper()
	d := NewDecoder(strings.NewReader(strings.Join(lines, "\n")+"\n"), 0)
	d.setClock(func() time.Time { return now })
	d.expect(1, methodInitialize)
	d.expect(2, methodSessionNew)
	d.expect(3, methodPrompt)
	var out []sessions.Event
	for _, l := range agenttest.Drain(t, d) {
		for _, e := range l.Events {
			if e.Kind != sessions.EvMetrics {
				out = append(out, e)
			}
		}
	}
	return out
}

func TestDecodeStream(t *testing.T) {
	now := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		lines []string
		want  []sessions.EventKind
		// last checks the final event.
		failure sessions.FailureKind
		retryAt time.Time
	}{
		{"plain reply", []string{lineInit, lineNew, lineCommands, lineChunk, lineEndTurn},
			[]sessions.EventKind{sessions.EvSessionInit, sessions.EvActivity, sessions.EvTurnCompleted}, sessions.NoFailure, time.Time{}},
		{"permission then tool", []string{lineNew, linePermission, lineToolDone, lineToolCall, lineChunk, lineEndTurn},
			[]sessions.EventKind{sessions.EvSessionInit, sessions.EvToolStarted, sessions.EvWaitingOnUser, sessions.EvToolFinished,
				sessions.EvToolStarted, sessions.EvActivity, sessions.EvTurnCompleted}, sessions.NoFailure, time.Time{}},
		{"cancelled", []string{lineNew, lineChunk, lineCancelled},
			[]sessions.EventKind{sessions.EvSessionInit, sessions.EvActivity, sessions.EvTurnAborted}, sessions.NoFailure, time.Time{}},
		{"auth", []string{lineNew, line401},
			[]sessions.EventKind{sessions.EvSessionInit, sessions.EvTurnFailed}, sessions.Auth, time.Time{}},
		{"overflow", []string{lineNew, line400},
			[]sessions.EventKind{sessions.EvSessionInit, sessions.EvTurnFailed}, sessions.ContextOverflow, time.Time{}},
		{"rate limit with the CLI's suggested delay", []string{lineNew, line429},
			[]sessions.EventKind{sessions.EvSessionInit, sessions.EvTurnFailed}, sessions.RateLimit, now.Add(time.Second)},
		{"rate limit past the CLI's retries: its delay is the reset", []string{lineNew, line429Hourly},
			[]sessions.EventKind{sessions.EvSessionInit, sessions.EvTurnFailed}, sessions.RateLimit, now.Add(time.Hour)},
		{"daily quota, no reset given", []string{lineNew, lineDaily},
			[]sessions.EventKind{sessions.EvSessionInit, sessions.EvTurnFailed}, sessions.RateLimit, time.Time{}},
		{"overloaded", []string{lineNew, line503},
			[]sessions.EventKind{sessions.EvSessionInit, sessions.EvTurnFailed}, sessions.Overloaded, time.Time{}},
		{"session gone", []string{lineNew, lineNotFound},
			[]sessions.EventKind{sessions.EvSessionInit, sessions.EvTurnFailed}, sessions.OtherFailure, time.Time{}},
		{"session cannot be loaded", []string{`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"details":"No previous sessions found for this project."}}}`},
			[]sessions.EventKind{sessions.EvTurnFailed}, sessions.OtherFailure, time.Time{}},
		{"context window check", []string{lineNew, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"max_tokens"}}`},
			[]sessions.EventKind{sessions.EvSessionInit, sessions.EvTurnFailed}, sessions.ContextOverflow, time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs := stream(t, now, c.lines...)
			var got []sessions.EventKind
			for _, e := range evs {
				got = append(got, e.Kind)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("kinds %v, want %v", got, c.want)
			}
			lastEv := evs[len(evs)-1]
			if lastEv.Failure.Kind != c.failure || !lastEv.Failure.RetryAt.Equal(c.retryAt) {
				t.Errorf("failure %+v, want %v retry at %v", lastEv.Failure, c.failure, c.retryAt)
			}
			if strings.Contains(lastEv.Failure.Message, "{") {
				t.Errorf("message %q still carries the API's JSON body", lastEv.Failure.Message)
			}
		})
	}
}

// TestDecodePermissionAnswer: the answer picks the CLI's own option ids.
func TestDecodePermissionAnswer(t *testing.T) {
	d := NewDecoder(strings.NewReader(linePermission+"\n"), 0)
	l, err := d.Next()
	if err != nil || len(l.Events) != 2 {
		t.Fatalf("events %+v err %v", l.Events, err)
	}
	p := l.Events[1].Permission
	if p == nil || p.RequestID != "0" || p.Tool != "command" {
		t.Fatalf("permission %+v", p)
	}
	req, ok := d.answer(p.RequestID)
	if !ok || req.allow != "proceed_once" || req.reject != "cancel" || string(req.raw) != "0" {
		t.Errorf("pending %+v ok %v", req, ok)
	}
	if got := string(PermissionResponse(req.raw, req.allow)); got != `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"optionId":"proceed_once","outcome":"selected"}}}`+"\n" {
		t.Errorf("answer %s", got)
	}
	if _, ok := d.answer(p.RequestID); ok {
		t.Error("a request was answered twice")
	}
}

// TestDecodeLoadReplay: the history session/load replays before it answers
// is not the new turn's progress; updates after it are.
func TestDecodeLoadReplay(t *testing.T) {
	replay := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"old","status":"in_progress","kind":"execute"}}}`
	chunk := strings.ReplaceAll(lineChunk, "bf7a1e56-dc2b-4e0c-b9f8-6672aeca00a6", "s1")
	d := NewDecoder(strings.NewReader(strings.Join([]string{replay, chunk, `{"jsonrpc":"2.0","id":2,"result":{"modes":{}}}`, chunk}, "\n")), 0)
	d.expectLoad(2, "s1")
	var got []sessions.EventKind
	for _, l := range agenttest.Drain(t, d) {
		for _, e := range l.Events {
			got = append(got, e.Kind)
			if e.Kind == sessions.EvSessionInit && e.AgentSessionID != "s1" {
				t.Errorf("loaded %q, want s1", e.AgentSessionID)
			}
		}
	}
	want := []sessions.EventKind{sessions.EvMetrics, sessions.EvMetrics, sessions.EvSessionInit, sessions.EvActivity}
	if !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
}

// TestDecodeSkips: malformed, unknown and oversize lines are counted, never
// fatal, and an unknown request is refused so the CLI does not wait.
func TestDecodeSkips(t *testing.T) {
	in := strings.Join([]string{
		"not json",
		`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"brand_new"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{}}`,
		strings.Repeat("x", 400),
		lineChunk,
	}, "\n")
	d := NewDecoder(strings.NewReader(in), 250)
	var skips []agentkit.SkipReason
	var reply []byte
	for _, l := range agenttest.Drain(t, d) {
		skips = append(skips, l.Info.Skip)
		if l.Reply != nil {
			reply = l.Reply
		}
	}
	want := []agentkit.SkipReason{agentkit.SkipMalformed, agentkit.SkipUnknown, agentkit.SkipNone, agentkit.SkipOversize, agentkit.SkipNone}
	if len(skips) != len(want) {
		t.Fatalf("skips %v, want %v", skips, want)
	}
	for i := range want {
		if skips[i] != want[i] {
			t.Errorf("line %d: %v, want %v", i+1, skips[i], want[i])
		}
	}
	if !bytes.Contains(reply, []byte(`"id":7`)) || !bytes.Contains(reply, []byte("-32601")) {
		t.Errorf("reply %s, want a method-not-found error for id 7", reply)
	}
	if c := d.Stats(); c.Skipped() != 3 || c.Lines != 5 {
		t.Errorf("stats %+v", c)
	}
}

func TestApprovalMode(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "default": "default", "yolo": "yolo", "auto_edit": "auto_edit", "plan": "plan",
		"acceptEdits": "auto_edit", "bypassPermissions": "yolo", "dontAsk": "yolo", "never": "yolo",
		"on-request": "default", "weird": "",
	} {
		if got := ApprovalMode(in); got != want {
			t.Errorf("ApprovalMode(%q) = %q, want %q", in, got, want)
		}
	}
	if got := strings.Join(Args("yolo"), " "); got != "--acp --approval-mode yolo" {
		t.Errorf("args %q", got)
	}
	if got := strings.Join(Args(""), " "); got != "--acp" {
		t.Errorf("args %q", got)
	}
}

func FuzzDecodeLine(f *testing.F) {
	for _, l := range []string{lineInit, lineNew, lineCommands, linePermission, lineToolDone, lineToolCall, lineChunk,
		lineEndTurn, lineCancelled, line401, line400, line429, lineDaily, line503, lineNotFound, "", "{", "[]"} {
		f.Add([]byte(l))
	}
	agenttest.FuzzDecodeLine(f, DecodeLine, func(i LineInfo) agentkit.SkipReason { return i.Skip }, ErrMalformed, ErrUnknown,
		func(t *testing.T, line []byte, _ []sessions.Event) {
			// A stream of the same line twice must not panic either.
			d := NewDecoder(bytes.NewReader(append(append(append([]byte{}, line...), '\n'), line...)), 1<<10)
			d.expect(3, methodPrompt)
			for {
				if _, err := d.Next(); err != nil {
					break
				}
			}
		})
}

// TestLoadDelay: a session/load waits for the next minute only when the
// session's newest chat file is from the current one (the CLI's defect
// described at loadDelay).
func TestLoadDelay(t *testing.T) {
	now := time.Date(2026, 11, 30, 22, 31, 40, 0, time.UTC)
	const id = "49b83a5c-d08d-4475-a5c1-6b08133b4130"
	cases := []struct {
		name  string
		files []string
		want  time.Duration
	}{
		{"no chat file", nil, 0},
		{"created in an earlier minute", []string{"session-2026-11-30T22-30-49b83a5c.jsonl"}, 0},
		{"created this minute", []string{"session-2026-11-30T22-30-49b83a5c.jsonl", "session-2026-11-30T22-31-49b83a5c.jsonl"}, 21 * time.Second},
		{"another session this minute", []string{"session-2026-11-30T22-31-0937f38a.jsonl"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			chats := filepath.Join(home, ".gemini", "tmp", "work", "chats")
			if err := os.MkdirAll(chats, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, f := range c.files {
				if err := os.WriteFile(filepath.Join(chats, f), []byte("{}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if got := loadDelay(home, id, now); got != c.want {
				t.Errorf("loadDelay = %s, want %s", got, c.want)
			}
		})
	}
	if got := chatsHome([]string{"HOME=/a", "X=1", "HOME=/b"}); got != "/b" {
		t.Errorf("chatsHome = %q, want the last HOME", got)
	}
}
