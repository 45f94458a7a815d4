// Package fakeapi is a fake OpenAI chat completions API for end-to-end
// tests that drive the real Copilot CLI through its BYOK provider
// (COPILOT_PROVIDER_BASE_URL; Copilot appends /chat/completions and streams
// with SSE, measured on 1.0.102). It listens on 127.0.0.1 only and picks its
// behaviour from a [[scenario:NAME]] marker in the request (the last one in
// the body, so a later prompt of the same session selects its own), so a
// test selects a scenario by its prompt alone.
//
// It also stands in for Copilot's own API (CopilotAPIEnv): the account
// (GET /copilot_internal/user, whose endpoints point back at the fake),
// the model catalog (GET /models) and POST /chat/completions, where the
// CLI reads its plan's rate limits from the answer.
//
// Everything else is a 404, which makes an unexpected endpoint visible in
// the request log (the CLI's telemetry and optional lookups, with its own
// API, fail there harmlessly).
package fakeapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
)

// Entry records one handled request.
type Entry = fakeserver.Entry

// Reply is what one request gets.
type Reply = fakeserver.Reply

// ScenarioFunc decides the reply to attempt n (1-based) of a scenario;
// toolOutput is the request's tool result, if its last message is one.
type ScenarioFunc = fakeserver.ScenarioFunc

// Server is a running fake.
type Server struct {
	*fakeserver.Server[ScenarioFunc]
}

// CompletionsPath is the one route the fake serves.
const CompletionsPath = "/v1/chat/completions"

// Start serves on a free port of 127.0.0.1.
func Start() (*Server, error) {
	fs, err := fakeserver.Listen("copilot fakeapi", Builtin())
	if err != nil {
		return nil, err
	}
	s := &Server{Server: fs}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+CompletionsPath, s.completions)
	mux.HandleFunc("POST "+OwnCompletionsPath, s.completions)
	mux.HandleFunc("GET /copilot_internal/user", s.user)
	mux.HandleFunc("GET /models", s.models)
	s.Serve(mux, nil)
	return s, nil
}

// OwnCompletionsPath is the completions route of Copilot's own API (the
// CLI appends it to the account's endpoints.api, no /v1).
const OwnCompletionsPath = "/chat/completions"

// user is the signed-in account as Copilot's API describes it: a Pro plan
// whose endpoints are the fake's.
func (s *Server) user(w http.ResponseWriter, _ *http.Request) {
	base := "http://" + s.Addr()
	writeJSON(w, map[string]any{"login": "fake", "copilot_plan": "individual_pro", "chat_enabled": true,
		"access_type_sku": "plus_monthly_subscriber_quota",
		"endpoints":       map[string]string{"api": base, "proxy": base, "telemetry": base}})
}

// models is the catalog: the one model the fake answers as.
func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": Model, "name": "GPT-4.1", "object": "model", "vendor": "OpenAI", "version": Model, "model_picker_enabled": true,
		"supported_endpoints": []string{OwnCompletionsPath}, "billing": map[string]any{"is_premium": false, "multiplier": 0},
		"capabilities": map[string]any{"family": Model, "type": "chat", "object": "model_capabilities", "tokenizer": "o200k_base",
			"limits":   map[string]int{"max_context_window_tokens": 128000, "max_output_tokens": 16384, "max_prompt_tokens": 128000},
			"supports": map[string]bool{"streaming": true, "tool_calls": true, "parallel_tool_calls": true}},
	}}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// URL is the provider base URL: Copilot appends /chat/completions.
func (s *Server) URL() string { return "http://" + s.Addr() + "/v1" }

// Requests returns the completions requests of one scenario.
func (s *Server) Requests(scenario string) []Entry {
	return s.Server.Requests(CompletionsPath, scenario)
}

// datetimeRE is the timestamp Copilot puts before every prompt.
var datetimeRE = regexp.MustCompile(`^\s*<current_datetime>[^<]*</current_datetime>\s*`)

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req fakeserver.ChatRequest
	scenario, ok := fakeserver.ReadRequest(w, r, &req)
	if !ok {
		return
	}
	userText := strings.TrimSpace(datetimeRE.ReplaceAllString(req.UserText(), ""))
	if rep, n, ok := fakeserver.Answer(s.Server, w, r, Entry{Scenario: scenario, ToolOutput: req.ToolOutput(), UserText: userText}); ok {
		s.stream(w, rep, n)
	}
}

func (s *Server) stream(w http.ResponseWriter, rep Reply, n int) {
	sse := fakeserver.StartSSE(w, false)
	id := fmt.Sprintf("chatcmpl_%d_%d", time.Now().UnixNano(), n)
	send := func(delta map[string]any, finish any, usage any) {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			chunk["usage"] = usage
		}
		sse.Send("", chunk)
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if s.Break(w, rep.Stall, rep.Cut) {
		return
	}
	finish := "stop"
	if rep.Command != "" {
		args, _ := json.Marshal(map[string]string{"command": rep.Command, "description": "Run the command"})
		send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_%s", id), "type": "function",
			"function": map[string]any{"name": "bash", "arguments": string(args)}}}}, nil, nil)
		finish = "tool_calls"
	} else {
		send(map[string]any{"content": rep.Text}, nil, nil)
	}
	send(map[string]any{}, finish, fakeserver.ChatUsage(rep))
	sse.Done()
}

// Model is the model name the fake reports and the tests configure.
const Model = "gpt-4.1"

// The error bodies an OpenAI-compatible API sends.
const (
	body429     = `{"error":{"type":"rate_limit_exceeded","code":"rate_limit_exceeded","message":"Rate limit reached for requests"}}`
	body401     = `{"error":{"type":"invalid_request_error","code":"invalid_api_key","message":"Incorrect API key provided"}}`
	body500     = `{"error":{"type":"server_error","message":"The server had an error while processing your request."}}`
	bodyTooLong = `{"error":{"type":"invalid_request_error","code":"context_length_exceeded","param":"messages","message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 200000 tokens."}}`
)

// WeeklyLimitRetryAfter is the retry-after of the weekly_limit scenario's
// 429: Copilot words it to the unit ("reset in 2 hours").
const WeeklyLimitRetryAfter = 2 * time.Hour

// bodyWeekly is Copilot's own API refusing a turn for the account's
// weekly rate limit (its error code, as the 1.0.102 CLI reads it).
const bodyWeekly = `{"error":{"code":"user_weekly_rate_limited","message":"Sorry, you have been rate-limited. Please wait before trying again.","type":"rate_limit"}}`

// RetryAfter429 is the retry-after the 429 scenarios send, in seconds: Copilot
// waits it between its own retries.
const RetryAfter429 = 1

// Builtin are the scenarios every server knows.
func Builtin() map[string]ScenarioFunc {
	failThen := fakeserver.FailThen
	always := fakeserver.Always
	rate := Reply{Status: 429, ErrorBody: body429, Header: map[string]string{"retry-after": fmt.Sprint(RetryAfter429)}}
	scenarios := map[string]ScenarioFunc{
		"text": always(Reply{Text: "Hello from the fake OpenAI model."}),
		// write asks for a command that creates made.txt in the working
		// directory, then answers.
		"write": func(_ int, out string) Reply {
			if out != "" {
				return Reply{Text: "Done."}
			}
			return Reply{Command: "touch made.txt"}
		},
		"429": always(rate),
		// 429 past Copilot's own retries (it tries six times: measured on
		// 1.0.102), then answered.
		"429x6then_ok": failThen(6, rate),
		"401":          always(Reply{Status: 401, ErrorBody: body401}),
		// weekly_limit is the account's weekly rate limit (Copilot's own
		// API only: CopilotAPIEnv), which the CLI does not retry.
		"weekly_limit": always(Reply{Status: 429, ErrorBody: bodyWeekly,
			Header: map[string]string{"retry-after": fmt.Sprint(int(WeeklyLimitRetryAfter.Seconds()))}}),
		"500":           always(Reply{Status: 500, ErrorBody: body500}),
		"too_long":      always(Reply{Status: 400, ErrorBody: bodyTooLong}),
		"too_long_once": failThen(1, Reply{Status: 400, ErrorBody: bodyTooLong}),
		// too_long_second overflows on the session's second turn only,
		// when there is a first one for Copilot's /compact to summarize.
		"too_long_second": func(n int, _ string) Reply {
			if n == 2 {
				return Reply{Status: 400, ErrorBody: bodyTooLong}
			}
			return Reply{Text: "Hello from the fake OpenAI model."}
		},
		"stall": failThen(1, Reply{Stall: true}),
		"cut":   always(Reply{Cut: true}),
	}
	maps.Copy(scenarios, fakeserver.ToolScenarios())
	return scenarios
}
