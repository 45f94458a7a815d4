// Package fakeapi is a fake OpenAI Responses API for end-to-end tests that
// drive the real Codex CLI. It listens on 127.0.0.1 only and picks its
// behaviour from a [[scenario:NAME]] marker in the request (the last one in
// the body, so a later prompt of the same thread selects its own), so a test
// selects a scenario by its prompt alone.
//
// It answers POST /v1/responses with the SSE stream Codex expects
// (response.created, output items, response.completed) or an HTTP error.
// Everything else is a 404, which makes an unexpected endpoint visible in the
// request log.
package fakeapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
)

// Entry records one handled request.
type Entry = fakeserver.Entry

// Reply is what one request gets.
type Reply = fakeserver.Reply

// ScenarioFunc decides the reply to attempt n (1-based) of a scenario; last
// is the request's last input item type and toolOutput its output, if any.
type ScenarioFunc = fakeserver.ScenarioFunc

// Server is a running fake.
type Server struct {
	*fakeserver.Server[ScenarioFunc]
}

// Start serves on a free port of 127.0.0.1.
func Start() (*Server, error) {
	s := &Server{}
	return fakeserver.Start(s, &s.Server, "codex fakeapi", Builtin(), "POST /v1/responses", s.responses, nil)
}

// URL is the provider base_url: Codex appends /responses.
func (s *Server) URL() string { return "http://" + s.Addr() + "/v1" }

// Requests returns the /v1/responses requests of one scenario.
func (s *Server) Requests(scenario string) []Entry {
	return s.Server.Requests("/v1/responses", scenario)
}

// TitleScenario files the interactive TUI's thread-title requests (their
// last user message starts with titlePrompt), whatever prompt they quote.
const TitleScenario = "title"

// titlePrompt opens the instruction the 0.171.0 TUI sends, beside a turn's
// first request, to name the thread.
const titlePrompt = "Generate a concise, single-line task title"

// request is the part of a Responses request the fake reads.
type request struct {
	Input []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Output  json.RawMessage `json:"output"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"input"`
}

// lastUserText is the text of the last user message.
func (r *request) lastUserText() string {
	for i := len(r.Input) - 1; i >= 0; i-- {
		in := r.Input[i]
		if in.Type == "message" && in.Role == "user" {
			var text string
			for _, c := range in.Content {
				text += c.Text
			}
			return text
		}
	}
	return ""
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var req request
	scenario, ok := fakeserver.ReadRequest(w, r, &req)
	if !ok {
		return
	}
	if strings.HasPrefix(req.lastUserText(), titlePrompt) {
		// The TUI's side request for a thread title quotes the prompt, and
		// with it the marker: filed under the prompt's scenario it would
		// race the turn's own request for the scenario's first attempt.
		scenario = TitleScenario
	}
	last := len(req.Input) - 1
	toolOut := fakeserver.ToolResult(last >= 0 && req.Input[last].Type == "function_call_output", func() string {
		var str string
		if json.Unmarshal(req.Input[last].Output, &str) == nil {
			return str
		}
		return string(req.Input[last].Output)
	})
	if rep, n, ok := fakeserver.Answer(s.Server, w, r, Entry{Scenario: scenario, ToolOutput: toolOut, UserText: req.lastUserText()}); ok {
		s.stream(w, rep, n)
	}
}

func (s *Server) stream(w http.ResponseWriter, rep Reply, n int) {
	sse := fakeserver.StartSSE(w, false)
	respID := fmt.Sprintf("resp_%d_%d", time.Now().UnixNano(), n)
	send := func(v map[string]any) { sse.Send(v["type"].(string), v) }
	send(map[string]any{"type": "response.created", "response": map[string]any{"id": respID}})
	if s.Break(w, rep.Stall, rep.Cut) {
		return
	}
	var item map[string]any
	if rep.Tool != "" {
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n), "status": "completed",
			"name": rep.Tool, "arguments": rep.ToolArgs, "call_id": fmt.Sprintf("call_%s_%d", respID, n)}
		send(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	} else if rep.Command != "" {
		a := map[string]string{"cmd": rep.Command}
		if rep.Escalate {
			a["sandbox_permissions"] = "require_escalated"
			a["justification"] = "The command writes to the workspace."
		}
		args, _ := json.Marshal(a)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n), "status": "completed",
			"name": "exec_command", "arguments": string(args), "call_id": fmt.Sprintf("call_%s_%d", respID, n)}
		send(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	} else {
		msgID := fmt.Sprintf("msg_%s", respID)
		added := map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "in_progress", "content": []any{}}
		send(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": added})
		send(map[string]any{"type": "response.output_text.delta", "item_id": msgID, "output_index": 0, "content_index": 0, "delta": rep.Text})
		item = map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}}}
	}
	send(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	u := fakeserver.Usage{Input: 100, Output: 20}
	if rep.Usage != nil {
		u = *rep.Usage
	}
	// The Responses API counts the cached tokens inside input_tokens.
	in := u.Input + u.CacheRead
	send(map[string]any{"type": "response.completed", "response": map[string]any{
		"id": respID,
		"usage": map[string]any{"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": u.CacheRead},
			"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + u.Output},
	}})
}

// The error bodies the real API sends, in the shape Codex parses.
const (
	body429      = `{"error":{"type":"rate_limit_exceeded","code":"rate_limit_exceeded","message":"Rate limit reached for requests"}}`
	body401      = `{"error":{"type":"invalid_request_error","code":"invalid_api_key","message":"Incorrect API key provided"}}`
	body500      = `{"error":{"type":"server_error","message":"The server had an error while processing your request."}}`
	bodyTooLong  = `{"error":{"type":"invalid_request_error","code":"context_length_exceeded","param":"input","message":"Your input exceeds the context window of this model. Please adjust your input and try again."}}`
	bodyUsageCap = `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_in_seconds":%d}}`
)

// PlanArgs are the plan scenario's update_plan arguments.
const PlanArgs = `{"explanation":"three steps","plan":[{"step":"Write the code","status":"completed"},{"step":"Test it","status":"in_progress"},{"step":"Ship it","status":"pending"}]}`

// PlanWindowHeader is the plan scenario's rate-limit headers: the primary
// (five-hour) window 42% used, resetting in two hours, the secondary
// (weekly) one 12% used.
func PlanWindowHeader() map[string]string {
	return map[string]string{
		"x-codex-primary-used-percent":     "42",
		"x-codex-primary-window-minutes":   "300",
		"x-codex-primary-reset-at":         fmt.Sprint(time.Now().Add(2 * time.Hour).Unix()),
		"x-codex-secondary-used-percent":   "12",
		"x-codex-secondary-window-minutes": "10080",
		"x-codex-secondary-reset-at":       fmt.Sprint(time.Now().Add(100 * time.Hour).Unix()),
	}
}

// UsageLimitResetSeconds is when the usage_limit scenario says the limit lifts.
const UsageLimitResetSeconds = 60

// Builtin are the scenarios every server knows.
func Builtin() map[string]ScenarioFunc {
	text := func(int, string) Reply { return Reply{Text: "Hello from the fake OpenAI model."} }
	failThen := fakeserver.FailThen
	always := fakeserver.Always
	scenarios := map[string]ScenarioFunc{
		"text":        text,
		TitleScenario: func(int, string) Reply { return Reply{Text: "Run the task"} },
		"write": func(_ int, out string) Reply {
			if out != "" {
				return Reply{Text: "Created build/out.txt."}
			}
			return Reply{Command: "mkdir -p build && touch build/out.txt", Escalate: true}
		},
		"429":           always(Reply{Status: 429, ErrorBody: body429}),
		"429then_ok":    failThen(1, Reply{Status: 429, ErrorBody: body429}),
		"429x3then_ok":  failThen(3, Reply{Status: 429, ErrorBody: body429}),
		"401":           always(Reply{Status: 401, ErrorBody: body401}),
		"500":           always(Reply{Status: 500, ErrorBody: body500}),
		"too_long":      always(Reply{Status: 400, ErrorBody: bodyTooLong}),
		"too_long_once": failThen(1, Reply{Status: 400, ErrorBody: bodyTooLong}),
		"usage_limit": func(n int, _ string) Reply {
			if n > 1 {
				return Reply{Text: "Hello after the usage limit."}
			}
			reset := time.Now().Add(UsageLimitResetSeconds * time.Second).Unix()
			return Reply{Status: 429, ErrorBody: fmt.Sprintf(bodyUsageCap, UsageLimitResetSeconds),
				Header: map[string]string{
					"x-codex-primary-used-percent":   "100",
					"x-codex-primary-window-minutes": "300",
					"x-codex-primary-reset-at":       fmt.Sprint(reset),
				}}
		},
		// plan updates the plan with update_plan (one step done, one in
		// progress, one pending: PlanArgs) and answers; its responses carry
		// the x-codex-* rate-limit headers of a plan's two windows
		// (PlanWindowHeader), which Codex reports as the account's.
		"plan": func(_ int, out string) Reply {
			if out != "" {
				return Reply{Text: "Planned.", Header: PlanWindowHeader()}
			}
			return Reply{Tool: "update_plan", ToolArgs: PlanArgs, Header: PlanWindowHeader()}
		},
		"stall": failThen(1, Reply{Stall: true}),
		"cut":   always(Reply{Cut: true}),
		// A network outage longer than Codex's own retries (it tries three
		// times per turn with stream_max_retries 2), then over.
		"cut3then_ok": failThen(3, Reply{Cut: true}),
	}
	maps.Copy(scenarios, fakeserver.ToolScenarios())
	return scenarios
}
