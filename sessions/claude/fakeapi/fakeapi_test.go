package fakeapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

func startServer(t *testing.T) *Server {
	t.Helper()
	return agenttest.FakeAPI(t, Start)
}

// refusingProxy starts the refusing proxy for the test's length: its URL,
// and what it refused so far ("METHOD host", in order).
func refusingProxy(t *testing.T) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	url, closeFn, err := startRefusingProxy(func(method, host string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, method+" "+host)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	return url, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// cliRequest builds a body shaped like Claude Code 2.1.197's: a
// system-reminder block before the prompt in the first user message and a
// role "system" message after it (see claude-code-measured.md).
func cliRequest(stream bool, prompt string, more ...map[string]any) map[string]any {
	msgs := []map[string]any{
		{"role": "user", "content": []map[string]any{
			{"type": "text", "text": "<system-reminder>\nToday's date is 2026-11-29.\n</system-reminder>\n"},
			{"type": "text", "text": prompt, "cache_control": map[string]string{"type": "ephemeral"}},
		}},
		{"role": "system", "content": "Available agent types for the Agent tool: …"},
	}
	msgs = append(msgs, more...)
	return map[string]any{
		"model":      "claude-opus-4-8",
		"max_tokens": 64000,
		"stream":     stream,
		"system": []map[string]any{
			{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197;"},
			{"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK."},
			{"type": "text", "text": "\nYou are an interactive agent.\n\n# Context management\nWhen the conversation grows long, some or all of the current context is summarized."},
		},
		"tools":    []map[string]any{{"name": "Bash", "input_schema": map[string]any{"type": "object"}}},
		"messages": msgs,
	}
}

func toolTurn(isError bool) []map[string]any {
	return []map[string]any{
		{"role": "assistant", "content": []map[string]any{
			{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]string{"command": ToolCommand}},
		}},
		{"role": "user", "content": []map[string]any{
			{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi", "is_error": isError},
		}},
		{"role": "system", "content": "listing"},
	}
}

func post(t *testing.T, ctx context.Context, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "test")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func postMessages(t *testing.T, s *Server, body any) *http.Response {
	t.Helper()
	return post(t, context.Background(), s.URL()+"/v1/messages?beta=true", body)
}

type sseEvent struct {
	Event string
	Data  map[string]any
}

// readSSE parses an event stream strictly: every frame must have an event
// line and one data line of JSON whose "type" equals the event name, as the
// real API sends them.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(r)
	var cur sseEvent
	var data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "":
			if cur.Event == "" || data == "" {
				t.Fatalf("incomplete SSE frame: event %q data %q", cur.Event, data)
			}
			if err := json.Unmarshal([]byte(data), &cur.Data); err != nil {
				t.Fatalf("SSE data is not JSON: %v: %s", err, data)
			}
			if cur.Data["type"] != cur.Event {
				t.Fatalf("SSE data type %v under event %q", cur.Data["type"], cur.Event)
			}
			out = append(out, cur)
			cur, data = sseEvent{}, ""
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func eventNames(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Event)
	}
	return out
}

// assembled rebuilds the message from a stream the way an SDK does: text
// deltas are concatenated, input_json_delta pieces joined and parsed.
type assembled struct {
	texts      []string
	toolInputs []map[string]any
	toolNames  []string
	stopReason string
	outTokens  float64
}

func assemble(t *testing.T, evs []sseEvent) assembled {
	t.Helper()
	var a assembled
	blocks := map[int]*strings.Builder{}
	kinds := map[int]string{}
	for _, e := range evs {
		switch e.Event {
		case "content_block_start":
			i := int(e.Data["index"].(float64))
			cb := e.Data["content_block"].(map[string]any)
			kinds[i] = cb["type"].(string)
			blocks[i] = &strings.Builder{}
			if kinds[i] == "tool_use" {
				a.toolNames = append(a.toolNames, cb["name"].(string))
				if !strings.HasPrefix(cb["id"].(string), "toolu_") {
					t.Errorf("tool_use id %v", cb["id"])
				}
			}
		case "content_block_delta":
			i := int(e.Data["index"].(float64))
			d := e.Data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				blocks[i].WriteString(d["text"].(string))
			case "input_json_delta":
				blocks[i].WriteString(d["partial_json"].(string))
			default:
				t.Errorf("delta type %v", d["type"])
			}
		case "content_block_stop":
			i := int(e.Data["index"].(float64))
			switch kinds[i] {
			case "text":
				a.texts = append(a.texts, blocks[i].String())
			case "tool_use":
				var in map[string]any
				if err := json.Unmarshal([]byte(blocks[i].String()), &in); err != nil {
					t.Fatalf("tool input %q: %v", blocks[i].String(), err)
				}
				a.toolInputs = append(a.toolInputs, in)
			}
		case "message_delta":
			a.stopReason = e.Data["delta"].(map[string]any)["stop_reason"].(string)
			a.outTokens = e.Data["usage"].(map[string]any)["output_tokens"].(float64)
		}
	}
	return a
}

var wantFrames = []string{"message_start", "ping", "content_block_start", "content_block_delta",
	"content_block_stop", "message_delta", "message_stop"}

func TestStreamingText(t *testing.T) {
	s := startServer(t)
	resp := postMessages(t, s, cliRequest(true, "[[scenario:text]] hi"))
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !strings.HasPrefix(resp.Header.Get("request-id"), "req_") {
		t.Errorf("request-id %q", resp.Header.Get("request-id"))
	}
	evs := readSSE(t, resp.Body)
	if got := eventNames(evs); !slices.Equal(got, wantFrames) {
		t.Fatalf("frames %v, want %v", got, wantFrames)
	}
	msg := evs[0].Data["message"].(map[string]any)
	if msg["model"] != "claude-opus-4-8" || msg["role"] != "assistant" || msg["stop_reason"] != nil ||
		!strings.HasPrefix(msg["id"].(string), "msg_") {
		t.Errorf("message_start %v", msg)
	}
	if u := msg["usage"].(map[string]any); u["input_tokens"].(float64) < 1 {
		t.Errorf("usage %v", u)
	}
	a := assemble(t, evs)
	if !slices.Equal(a.texts, []string{DoneText}) || a.stopReason != "end_turn" || a.outTokens < 1 {
		t.Errorf("assembled %+v", a)
	}
	if log := s.Log(); len(log) != 1 || log[0].Scenario != "text" || log[0].Status != 200 || !log[0].Stream {
		t.Errorf("log %+v", log)
	}
}

func TestDefaultScenarioWithoutMarker(t *testing.T) {
	s := startServer(t)
	evs := readSSE(t, postMessages(t, s, cliRequest(true, "hello there")).Body)
	if a := assemble(t, evs); !slices.Equal(a.texts, []string{DoneText}) {
		t.Errorf("texts %v", a.texts)
	}
	if got := s.Log()[0].Scenario; got != "text" {
		t.Errorf("scenario %q", got)
	}
}

func TestMarkerInStringContentOfLaterMessage(t *testing.T) {
	s := startServer(t)
	body := cliRequest(true, "no marker here",
		map[string]any{"role": "assistant", "content": "ok"},
		map[string]any{"role": "user", "content": "now [[scenario:too_long]] please"})
	if resp := postMessages(t, s, body); resp.StatusCode != 400 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := s.Log()[0].Scenario; got != "too_long" {
		t.Errorf("scenario %q", got)
	}
}

func TestToolScenario(t *testing.T) {
	for _, tc := range []struct{ scenario, command, done string }{
		{"tool", ToolCommand, ToolDoneText},
		{"write", WriteCommand, WriteDoneText},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			s := startServer(t)
			prompt := "[[scenario:" + tc.scenario + "]] go"
			a := assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, prompt)).Body))
			if a.stopReason != "tool_use" || !slices.Equal(a.toolNames, []string{"Bash"}) || len(a.texts) != 0 {
				t.Fatalf("first reply %+v", a)
			}
			if a.toolInputs[0]["command"] != tc.command || a.toolInputs[0]["description"] != ToolDescription {
				t.Errorf("tool input %v", a.toolInputs[0])
			}
			// The CLI puts a role "system" message after the tool_result;
			// the scenario must still see the result.
			a = assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, prompt, toolTurn(false)...)).Body))
			if a.stopReason != "end_turn" || !slices.Equal(a.texts, []string{tc.done}) {
				t.Errorf("after tool_result %+v", a)
			}
			a = assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, prompt, toolTurn(true)...)).Body))
			if !slices.Equal(a.texts, []string{ToolFailedText}) {
				t.Errorf("after failed tool_result %+v", a)
			}
		})
	}
}

func TestNonStreaming(t *testing.T) {
	s := startServer(t)
	var msg struct {
		ID         string `json:"id"`
		Type       string `json:"type"`
		Role       string `json:"role"`
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string         `json:"type"`
			Text  string         `json:"text"`
			Name  string         `json:"name"`
			Input map[string]any `json:"input"`
		} `json:"content"`
		Usage map[string]int `json:"usage"`
	}
	resp := postMessages(t, s, cliRequest(false, "[[scenario:tool]] go"))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || msg.Role != "assistant" || msg.StopReason != "tool_use" || len(msg.Content) != 1 ||
		msg.Content[0].Type != "tool_use" || msg.Content[0].Input["command"] != ToolCommand || msg.Usage["output_tokens"] < 1 {
		t.Errorf("tool body %+v", msg)
	}
	msg.Content = nil
	if err := json.NewDecoder(postMessages(t, s, cliRequest(false, "[[scenario:slow]] go")).Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != "end_turn" || len(msg.Content) != 1 || msg.Content[0].Text != "Step one. Step two. "+DoneText {
		t.Errorf("text body %+v", msg)
	}
}

type apiErr struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeErr(t *testing.T, resp *http.Response) apiErr {
	t.Helper()
	var e apiErr
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if e.Type != "error" {
		t.Errorf("error body type %q", e.Type)
	}
	return e
}

func TestErrorScenarios(t *testing.T) {
	cases := []struct {
		scenario   string
		status     int
		errType    string
		message    string
		retryAfter string
	}{
		{"429", 429, "rate_limit_error", "rate limit", "1"},
		{"too_long", 400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum", ""},
		{"401", 401, "authentication_error", "invalid x-api-key", ""},
		{"529", 529, "overloaded_error", "Overloaded", ""},
		{"no_such_scenario", 400, "invalid_request_error", "unknown scenario no_such_scenario", ""},
	}
	for _, tc := range cases {
		t.Run(tc.scenario, func(t *testing.T) {
			s := startServer(t)
			for range 3 { // the same answer on every attempt
				resp := postMessages(t, s, cliRequest(true, "[[scenario:"+tc.scenario+"]] x"))
				if resp.StatusCode != tc.status || resp.Header.Get("retry-after") != tc.retryAfter {
					t.Fatalf("status %d retry-after %q", resp.StatusCode, resp.Header.Get("retry-after"))
				}
				if e := decodeErr(t, resp); e.Error.Type != tc.errType || !strings.Contains(e.Error.Message, tc.message) {
					t.Errorf("error %+v", e.Error)
				}
			}
		})
	}
}

func TestRateLimitThenOK(t *testing.T) {
	s := startServer(t)
	prompt := "[[scenario:429then_ok]] hi"
	var statuses []int
	for range 3 {
		resp := postMessages(t, s, cliRequest(true, prompt))
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode == 429 {
			if resp.Header.Get("retry-after") != "1" || decodeErr(t, resp).Error.Type != "rate_limit_error" {
				t.Errorf("429 response %v", resp.Header)
			}
		} else if a := assemble(t, readSSE(t, resp.Body)); !slices.Equal(a.texts, []string{DoneText}) {
			t.Errorf("texts %v", a.texts)
		}
	}
	if !slices.Equal(statuses, []int{429, 429, 200}) {
		t.Errorf("statuses %v", statuses)
	}
	// Another conversation (different first prompt) has its own count. A
	// trailing newline does not start a new one: the CLI appends "\n" to a
	// prompt when it merges it with a later one.
	if resp := postMessages(t, s, cliRequest(true, prompt+"\n")); resp.StatusCode != 200 {
		t.Errorf("same conversation with newline: %d", resp.StatusCode)
	}
	if resp := postMessages(t, s, cliRequest(true, "[[scenario:429then_ok]] other")); resp.StatusCode != 429 {
		t.Errorf("new conversation: %d", resp.StatusCode)
	}
	var attempts []int
	for _, e := range s.Log() {
		attempts = append(attempts, e.Attempt)
	}
	if !slices.Equal(attempts, []int{1, 2, 3, 4, 1}) {
		t.Errorf("attempts %v", attempts)
	}
}

func TestStallUntilClientLeaves(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := post(t, ctx, s.URL()+"/v1/messages?beta=true", cliRequest(true, "[[scenario:stall]] go"))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "event: message_start\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := s.Wait(wctx, func(l []Entry) bool { return len(l) == 1 && l[0].Scenario == "stall" }); err != nil {
		t.Fatal(err)
	}
	// Nothing more arrives while stalled.
	more := make(chan string, 1)
	go func() {
		_, _ = br.ReadString('\n') // rest of the message_start frame
		_, _ = br.ReadString('\n')
		l, _ := br.ReadString('\n')
		more <- l
	}()
	select {
	case l := <-more:
		t.Fatalf("stalled stream sent %q", l)
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	<-more

	// The follow-up turn of the same conversation is answered.
	for _, follow := range []string{"[[resume]] continue", ContinuationNudge + ". Please continue."} {
		body := cliRequest(true, "[[scenario:stall]] go\n",
			map[string]any{"role": "user", "content": []map[string]any{
				{"type": "text", "text": "[Request interrupted by user]\n"},
				{"type": "text", "text": follow},
			}})
		if a := assemble(t, readSSE(t, postMessages(t, s, body).Body)); !slices.Equal(a.texts, []string{DoneText}) {
			t.Errorf("%q: texts %v", follow, a.texts)
		}
	}
}

func TestCloseReleasesStalledRequests(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for _, stream := range []bool{true, false} {
		go func() {
			b, _ := json.Marshal(cliRequest(stream, "[[scenario:stall]] go"))
			resp, err := http.Post(s.URL()+"/v1/messages", "application/json", bytes.NewReader(b))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Wait(ctx, func(l []Entry) bool { return len(l) == 2 }); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return while requests were stalled")
	}
	for range 2 {
		<-errs // either error is fine; what matters is that the clients returned
	}
	s.Close() // idempotent
}

func TestSlowStreamsDeltasWithPauses(t *testing.T) {
	s := startServer(t)
	s.SlowDelay = 100 * time.Millisecond
	resp := postMessages(t, s, cliRequest(true, "[[scenario:slow]] go"))
	start := time.Now()
	var deltaTimes []time.Duration
	var evs []sseEvent
	sc := bufio.NewScanner(resp.Body)
	var frame strings.Builder
	for sc.Scan() {
		frame.WriteString(sc.Text() + "\n")
		if sc.Text() == "" {
			evs = append(evs, readSSE(t, strings.NewReader(frame.String()))...)
			frame.Reset()
			if evs[len(evs)-1].Event == "content_block_delta" {
				deltaTimes = append(deltaTimes, time.Since(start))
			}
		}
	}
	a := assemble(t, evs)
	if len(deltaTimes) != 3 || a.texts[0] != "Step one. Step two. "+DoneText {
		t.Fatalf("deltas at %v, text %q", deltaTimes, a.texts)
	}
	for i := 1; i < len(deltaTimes); i++ {
		if gap := deltaTimes[i] - deltaTimes[i-1]; gap < 80*time.Millisecond {
			t.Errorf("gap %d is %v, want about SlowDelay", i, gap)
		}
	}
}

func TestCompact(t *testing.T) {
	s := startServer(t)
	prompt := "[[scenario:compact]] hi"
	a := assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, prompt)).Body))
	if !slices.Equal(a.texts, []string{DoneText}) {
		t.Errorf("ordinary turn %v (the system prompt's \"summarized\" must not count)", a.texts)
	}
	// CLI 2.1.197 appends the summary instructions as a text block to the
	// last user message.
	compactReq := cliRequest(true, prompt,
		map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": DoneText}}},
		map[string]any{"role": "user", "content": []map[string]any{
			{"type": "text", "text": "second\n"},
			{"type": "text", "text": "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a detailed summary of the conversation so far"},
		}})
	a = assemble(t, readSSE(t, postMessages(t, s, compactReq).Body))
	if len(a.texts) != 1 || !strings.Contains(a.texts[0], "<summary>") || !strings.Contains(a.texts[0], "[[scenario:compact]]") {
		t.Errorf("compaction reply %q: want a <summary> repeating the marker", a.texts)
	}
	// The CLI's post-compaction history is not itself a compaction request.
	after := cliRequest(true, "This session is being continued from a previous conversation that ran out "+
		"of context. The summary below covers the earlier portion of the conversation.\n\nSummary:\n[[scenario:compact]] "+SummaryText)
	if a := assemble(t, readSSE(t, postMessages(t, s, after).Body)); !slices.Equal(a.texts, []string{DoneText}) {
		t.Errorf("first turn after compaction %q", a.texts)
	}
	if e := s.Log(); e[len(e)-1].Scenario != "compact" {
		t.Errorf("scenario after compaction %q, want the marker from the summary to keep it", e[len(e)-1].Scenario)
	}
	// An older-style summariser system prompt is recognised too.
	old := cliRequest(true, prompt)
	old["system"] = "You are a helpful AI assistant tasked with summarizing conversations."
	if a := assemble(t, readSSE(t, postMessages(t, s, old).Body)); !strings.Contains(a.texts[0], SummaryText) {
		t.Errorf("system-prompt compaction reply %q", a.texts)
	}
}

func TestHandleCustomScenario(t *testing.T) {
	s := startServer(t)
	s.Handle("echo", func(c *Call) Reply {
		return Reply{Content: []Block{
			TextBlock(fmt.Sprintf("attempt %d of %s", c.Attempt, c.Scenario)),
			ToolUseBlock("Read", map[string]string{"file_path": "/x"}),
		}, StopReason: "max_tokens"}
	})
	s.Handle("text", func(*Call) Reply { return TextReply("overridden") })
	a := assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, "[[scenario:echo]]")).Body))
	if !slices.Equal(a.texts, []string{"attempt 1 of echo"}) || !slices.Equal(a.toolNames, []string{"Read"}) || a.stopReason != "max_tokens" {
		t.Errorf("custom %+v", a)
	}
	if a := assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, "plain")).Body)); a.texts[0] != "overridden" {
		t.Errorf("override %v", a.texts)
	}
}

func TestCountTokensAndUnknownRoutes(t *testing.T) {
	s := startServer(t)
	resp := post(t, context.Background(), s.URL()+"/v1/messages/count_tokens?beta=true", cliRequest(false, "hi"))
	var ct map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&ct); err != nil || resp.StatusCode != 200 || ct["input_tokens"] < 1 || len(ct) != 1 {
		t.Errorf("count_tokens %d %v %v", resp.StatusCode, ct, err)
	}
	if resp := post(t, context.Background(), s.URL()+"/v1/complete", map[string]any{}); resp.StatusCode != 404 {
		t.Errorf("POST /v1/complete: %d", resp.StatusCode)
	}
	get, err := http.Get(s.URL() + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if get.StatusCode != 404 && get.StatusCode != 405 {
		t.Errorf("GET /v1/messages: %d", get.StatusCode)
	}
	if resp := post(t, context.Background(), s.URL()+"/v1/messages", "not an object"); resp.StatusCode != 400 {
		t.Errorf("bad body: %d", resp.StatusCode)
	}
	if n := s.Requests(); n != 4 {
		t.Errorf("Requests() = %d, want 4 (%+v)", n, s.Log())
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %q", s.URL())
	}
}

func TestHermeticEnv(t *testing.T) {
	env := HermeticEnv("/h", "http://127.0.0.1:1", "http://127.0.0.1:2")
	for _, want := range []string{"HOME=/h", "ANTHROPIC_BASE_URL=http://127.0.0.1:1", "ANTHROPIC_API_KEY=test",
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_MAX_RETRIES=2",
		"HTTPS_PROXY=http://127.0.0.1:2", "HTTP_PROXY=http://127.0.0.1:2", "NO_PROXY=127.0.0.1,localhost"} {
		if !slices.Contains(env, want) {
			t.Errorf("missing %s in %v", want, env)
		}
	}
	for _, kv := range HermeticEnv("/h", "u", "") {
		if strings.Contains(strings.ToLower(kv), "proxy") {
			t.Errorf("proxy variable without a proxy: %s", kv)
		}
	}
}

func TestRefusingProxy(t *testing.T) {
	url, refused := refusingProxy(t)
	// A raw CONNECT, so nothing in the test resolves or dials the target.
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT status %d", resp.StatusCode)
	}
	if seen := refused(); !slices.Equal(seen, []string{"CONNECT api.anthropic.com:443"}) {
		t.Errorf("seen %v", seen)
	}
	if _, c, err := StartRefusingProxy(); err != nil {
		t.Fatal(err)
	} else {
		c()
	}
}
