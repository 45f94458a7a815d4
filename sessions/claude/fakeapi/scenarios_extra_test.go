package fakeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The scenarios the app's end-to-end tests (e2e_claude_test.go) add, at the
// HTTP level.

// compactionTurn is the CLI's compaction request: the summary instructions
// appended to the last user message.
func compactionTurn() map[string]any {
	return map[string]any{"role": "user", "content": []map[string]any{
		{"type": "text", "text": "Your task is to create a detailed summary of the conversation so far"},
	}}
}

func TestSlowToolScenario(t *testing.T) {
	s := startServer(t)
	prompt := "[[scenario:slowtool]] run it"
	a := assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, prompt)).Body))
	if !slices.Equal(a.toolNames, []string{"Bash"}) || a.toolInputs[0]["command"] != SlowToolCommand {
		t.Fatalf("first reply: tools %v inputs %v, want Bash %q", a.toolNames, a.toolInputs, SlowToolCommand)
	}
	a = assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, prompt, toolTurn(false)...)).Body))
	if !slices.Equal(a.texts, []string{ToolDoneText}) {
		t.Errorf("after the tool result: %v", a.texts)
	}
	// After a resume the CLI may put the dangling tool's result and the
	// nudge in one user message: the nudge wins.
	resumed := cliRequest(true, prompt,
		map[string]any{"role": "assistant", "content": []map[string]any{
			{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]string{"command": SlowToolCommand}}}},
		map[string]any{"role": "user", "content": []map[string]any{
			{"type": "tool_result", "tool_use_id": "toolu_1", "content": "interrupted", "is_error": true},
			{"type": "text", "text": "Your previous turn was interrupted before it finished. Please continue where you left off."}}})
	if a := assemble(t, readSSE(t, postMessages(t, s, resumed).Body)); !slices.Equal(a.texts, []string{DoneText}) {
		t.Errorf("after the nudge: %v", a.texts)
	}
}

func TestTooLongOnceScenario(t *testing.T) {
	s := startServer(t)
	prompt := "[[scenario:too_long_once]] hi"
	resp := postMessages(t, s, cliRequest(true, prompt))
	if e := decodeErr(t, resp); resp.StatusCode != 400 || e.Error.Message != PromptTooLongMessage {
		t.Fatalf("first request: %d %+v", resp.StatusCode, e.Error)
	}
	a := assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, prompt, compactionTurn())).Body))
	if len(a.texts) != 1 || !strings.Contains(a.texts[0], "<summary>") || !strings.Contains(a.texts[0], "[[scenario:too_long_once]]") {
		t.Errorf("compaction reply %q", a.texts)
	}
	for range 2 {
		if a := assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, prompt)).Body)); !slices.Equal(a.texts, []string{DoneText}) {
			t.Errorf("later request: %v", a.texts)
		}
	}
}

func TestTooLongSecondTurnScenario(t *testing.T) {
	s := startServer(t)
	prompt := "[[scenario:too_long_2nd_turn]] first"
	if a := assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, prompt)).Body)); !slices.Equal(a.texts, []string{DoneText}) {
		t.Errorf("first turn: %v", a.texts)
	}
	if resp := postMessages(t, s, cliRequest(true, prompt)); resp.StatusCode != 400 {
		t.Errorf("second turn: %d, want the prompt-too-long 400", resp.StatusCode)
	}
	a := assemble(t, readSSE(t, postMessages(t, s, cliRequest(true, prompt, compactionTurn())).Body))
	if len(a.texts) != 1 || !strings.Contains(a.texts[0], "[[scenario:too_long_2nd_turn]]") {
		t.Errorf("compaction reply %q", a.texts)
	}
	// After the compaction the history is the summary: a new conversation key.
	after := cliRequest(true, "This session is being continued from a previous conversation. Summary:\n[[scenario:too_long_2nd_turn]] "+SummaryText)
	if a := assemble(t, readSSE(t, postMessages(t, s, after).Body)); !slices.Equal(a.texts, []string{DoneText}) {
		t.Errorf("retried turn: %v", a.texts)
	}
}

func TestRateLimitThreeThenOK(t *testing.T) {
	s := startServer(t)
	var statuses []int
	for range 4 {
		statuses = append(statuses, postMessages(t, s, cliRequest(true, "[[scenario:429x3then_ok]] hi")).StatusCode)
	}
	if !slices.Equal(statuses, []int{429, 429, 429, 200}) {
		t.Errorf("statuses %v", statuses)
	}
}

func TestUnifiedRateLimitScenario(t *testing.T) {
	s := startServer(t)
	start := time.Now()
	resp := postMessages(t, s, cliRequest(true, "[[scenario:429unified]] hi"))
	if resp.StatusCode != 429 || resp.Header.Get("anthropic-ratelimit-unified-status") != "rejected" ||
		resp.Header.Get("anthropic-ratelimit-unified-representative-claim") != "five_hour" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	reset, err := strconv.ParseInt(resp.Header.Get("anthropic-ratelimit-unified-reset"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Unix(reset, 0).Sub(start); d <= UnifiedRateLimitWindow-2*time.Second || d > UnifiedRateLimitWindow {
		t.Errorf("reset %s after the first request, want about %s", d, UnifiedRateLimitWindow)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("retry-after")); err != nil || ra < 1 || time.Duration(ra)*time.Second > UnifiedRateLimitWindow+time.Second {
		t.Errorf("retry-after %q", resp.Header.Get("retry-after"))
	}

	// The window ends at the whole second of the reset, per conversation.
	s.Handle("unified_short", unifiedRateLimit(1500*time.Millisecond))
	first := postMessages(t, s, cliRequest(true, "[[scenario:unified_short]] hi"))
	reset, err = strconv.ParseInt(first.Header.Get("anthropic-ratelimit-unified-reset"), 10, 64)
	if first.StatusCode != 429 || err != nil {
		t.Fatalf("status %d reset %q", first.StatusCode, first.Header.Get("anthropic-ratelimit-unified-reset"))
	}
	if resp := postMessages(t, s, cliRequest(true, "[[scenario:unified_short]] other")); resp.StatusCode != 429 {
		t.Errorf("another conversation: %d, want its own window", resp.StatusCode)
	}
	time.Sleep(time.Until(time.Unix(reset, 0)))
	resp = postMessages(t, s, cliRequest(true, "[[scenario:unified_short]] hi"))
	if resp.StatusCode != 200 || resp.Header.Get("anthropic-ratelimit-unified-status") != "" {
		t.Fatalf("after the reset: %d %v", resp.StatusCode, resp.Header)
	}
	if a := assemble(t, readSSE(t, resp.Body)); !slices.Equal(a.texts, []string{DoneText}) {
		t.Errorf("after the reset: %v", a.texts)
	}
}

func TestReplyHeadersOnSuccess(t *testing.T) {
	s := startServer(t)
	s.Handle("hdr", func(*Call) Reply {
		r := TextReply(DoneText)
		r.Headers = map[string]string{"anthropic-ratelimit-unified-status": "allowed_warning"}
		return r
	})
	resp := postMessages(t, s, cliRequest(false, "[[scenario:hdr]] hi"))
	if resp.StatusCode != 200 || resp.Header.Get("anthropic-ratelimit-unified-status") != "allowed_warning" {
		t.Errorf("status %d headers %v", resp.StatusCode, resp.Header)
	}
}

// cutRequest sends one messages request of scenario and reports how it
// ended: the error reading the response (nil if it was whole) and the SSE
// bytes received before it.
func cutRequest(t *testing.T, s *Server, scenario string, stream bool) (body string, err error) {
	t.Helper()
	b, _ := json.Marshal(cliRequest(stream, "[[scenario:"+scenario+"]] hi"))
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages?beta=true", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	// A fresh connection per request, so a reset one is never reused.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return string(got), err
}

// A cut is a TCP reset in the middle of a stream, or before any answer to a
// non-streaming request: what the CLI reports as ECONNRESET.
func TestCutScenarios(t *testing.T) {
	s := startServer(t)
	body, err := cutRequest(t, s, "cut", true)
	if !errors.Is(err, syscall.ECONNRESET) || !strings.Contains(body, "message_start") || !strings.Contains(body, "cut off mid") ||
		strings.Contains(body, "message_stop") {
		t.Errorf("cut stream: err %v, body %q; want a reset after the first words", err, body)
	}
	if _, err := cutRequest(t, s, "cut", false); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("cut non-streaming request: err %v, want a reset", err)
	}

	// cut6then_ok: streams and fallbacks alike count, then an answer.
	for i, stream := range []bool{true, false, true, false, true, false} {
		if _, err := cutRequest(t, s, "cut6then_ok", stream); err == nil {
			t.Errorf("request %d (stream %v) was answered, want cut", i+1, stream)
		}
	}
	if body, err := cutRequest(t, s, "cut6then_ok", true); err != nil || !strings.Contains(body, "message_stop") || !strings.Contains(body, DoneText) {
		t.Errorf("request %d: err %v, body %q; want the whole answer", CutThenOKCuts+1, err, body)
	}
	var log []string
	for _, e := range s.Log() {
		log = append(log, fmt.Sprintf("%s/%d stream=%v status=%d cut=%v", e.Scenario, e.Attempt, e.Stream, e.Status, e.Cut))
	}
	want := []string{
		"cut/1 stream=true status=200 cut=true", "cut/2 stream=false status=0 cut=true",
		"cut6then_ok/1 stream=true status=200 cut=true", "cut6then_ok/2 stream=false status=0 cut=true",
		"cut6then_ok/3 stream=true status=200 cut=true", "cut6then_ok/4 stream=false status=0 cut=true",
		"cut6then_ok/5 stream=true status=200 cut=true", "cut6then_ok/6 stream=false status=0 cut=true",
		"cut6then_ok/7 stream=true status=200 cut=false",
	}
	if !slices.Equal(log, want) {
		t.Errorf("log\n %s\nwant\n %s", strings.Join(log, "\n "), strings.Join(want, "\n "))
	}
}
