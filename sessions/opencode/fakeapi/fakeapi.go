// Package fakeapi is a fake OpenAI-compatible chat completions API for
// end-to-end tests that drive the real OpenCode CLI (its custom provider
// "@ai-sdk/openai-compatible" posts to {baseURL}/chat/completions with
// stream: true). It listens on 127.0.0.1 only and picks its behaviour from a
// [[scenario:NAME]] marker in the request's messages (the last one, so a
// later prompt of the same session selects its own), so a test selects a
// scenario by its prompt alone.
//
// OpenCode also asks the model for a session title (a request whose system
// prompt says "title generator"); those are answered at once and logged
// under the scenario "title", so they never use up a scenario's attempts.
// Everything but POST /v1/chat/completions is a 404, which makes an
// unexpected endpoint visible in the request log.
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

// TitleScenario is the scenario title requests are logged under.
const TitleScenario = "title"

// Entry records one handled request.
type Entry = fakeserver.Entry

// Reply is what one request gets.
type Reply = fakeserver.Reply

// ScenarioFunc decides the reply to attempt n (1-based) of a scenario;
// toolOutput is the tool result the request carries last, if any.
type ScenarioFunc = fakeserver.ScenarioFunc

// Server is a running fake.
type Server struct {
	*fakeserver.Server[ScenarioFunc]
}

// Start serves on a free port of 127.0.0.1.
func Start() (*Server, error) {
	s := &Server{}
	return fakeserver.Start(s, &s.Server, "opencode fakeapi", Builtin(), "POST /v1/chat/completions", s.completions, nil)
}

// URL is the provider's baseURL: the SDK appends /chat/completions.
func (s *Server) URL() string { return "http://" + s.Addr() + "/v1" }

// Requests returns the chat completion requests of one scenario.
func (s *Server) Requests(scenario string) []Entry {
	return s.Server.Requests("/v1/chat/completions", scenario)
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req fakeserver.ChatRequest
	scenario, ok := fakeserver.ReadRequest(w, r, &req)
	if !ok {
		return
	}
	if len(req.Messages) > 0 && req.Messages[0].Role == "system" && strings.Contains(req.Messages[0].Text(), "title generator") {
		scenario = TitleScenario
	}
	e := Entry{Scenario: scenario, ToolOutput: req.ToolOutput(), UserText: req.UserText(), Tools: len(req.Tools)}
	if rep, n, ok := fakeserver.Answer(s.Server, w, r, e); ok {
		s.stream(r, w, rep, n)
	}
}

// stream writes the chat.completion.chunk SSE stream the OpenAI SDK parses:
// deltas, a finish_reason, a usage chunk, [DONE].
func (s *Server) stream(r *http.Request, w http.ResponseWriter, rep Reply, n int) {
	sse := fakeserver.StartSSE(w, false)
	id := fmt.Sprintf("chatcmpl_%d_%d", time.Now().UnixNano(), n)
	created := time.Now().Unix()
	send := func(choices []any, extra map[string]any) {
		v := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": "m1", "choices": choices}
		for k, x := range extra {
			v[k] = x
		}
		sse.Send("", v)
	}
	choice := func(delta map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
	}
	if rep.Stall {
		send(choice(map[string]any{"role": "assistant", "content": "Working on it"}, nil), nil)
		s.Stall(r.Context().Done())
		return
	}
	if rep.Command != "" {
		args, _ := json.Marshal(map[string]string{"command": rep.Command, "description": "Runs the command"})
		rep.Tool, rep.ToolArgs = "bash", string(args)
	}
	if rep.Tool != "" {
		send(choice(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
			"index": 0, "id": fmt.Sprintf("call_%s", id), "type": "function",
			"function": map[string]any{"name": rep.Tool, "arguments": rep.ToolArgs},
		}}}, nil), nil)
		send(choice(map[string]any{}, "tool_calls"), nil)
	} else {
		send(choice(map[string]any{"role": "assistant", "content": ""}, nil), nil)
		for _, word := range strings.SplitAfter(rep.Text, " ") {
			send(choice(map[string]any{"content": word}, nil), nil)
		}
		send(choice(map[string]any{}, "stop"), nil)
	}
	send([]any{}, map[string]any{"usage": fakeserver.ChatUsage(rep)})
	sse.Done()
}

// The error bodies an OpenAI-compatible API sends. The overflow message is
// one OpenCode classifies as ContextOverflowError (its pattern "maximum
// context length is N tokens", measured on 1.18.33).
const (
	Body429      = `{"error":{"message":"Rate limit reached for requests","type":"rate_limit_exceeded","code":"rate_limit_exceeded"}}`
	Body401      = `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`
	Body529      = `{"error":{"message":"The server is overloaded, please try again later","type":"overloaded_error"}}`
	BodyOverflow = `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`
)

// TodosArgs is the todos scenario's task list: four items, one done, one
// under way, one cancelled (which leaves the list), one pending.
const TodosArgs = `{"todos":[` +
	`{"content":"Read the failing test","status":"completed","priority":"high"},` +
	`{"content":"Fix the parser","status":"in_progress","priority":"high"},` +
	`{"content":"Rewrite the lexer","status":"cancelled","priority":"low"},` +
	`{"content":"Run the suite","status":"pending","priority":"medium"}]}`

// RateLimitAttempts is how many times OpenCode 1.18.33 sends a request that
// keeps getting a retryable 429 before it gives up (the first try and five
// retries, measured).
const RateLimitAttempts = 6

// RetryAfterSeconds is the retry-after the 429 scenarios send: short, so
// OpenCode's own retries take seconds.
const RetryAfterSeconds = 1

// Builtin are the scenarios every server knows.
func Builtin() map[string]ScenarioFunc {
	text := func(int, string) Reply { return Reply{Text: "Hello from the fake model."} }
	failThen := fakeserver.FailThen
	always := fakeserver.Always
	rate := Reply{Status: 429, ErrorBody: Body429, Header: map[string]string{"retry-after": fmt.Sprint(RetryAfterSeconds)}}
	scenarios := map[string]ScenarioFunc{
		"text":        text,
		TitleScenario: func(int, string) Reply { return Reply{Text: "Fake title"} },
		"write": func(_ int, out string) Reply {
			if out != "" {
				return Reply{Text: "Created build/out.txt."}
			}
			return Reply{Command: "mkdir -p build && touch build/out.txt"}
		},
		// todos: the model keeps a task list (todowrite), then answers.
		"todos": func(_ int, out string) Reply {
			if out != "" {
				return Reply{Text: "Planned."}
			}
			return Reply{Tool: "todowrite", ToolArgs: TodosArgs}
		},
		"429": always(rate),
		// More 429s than OpenCode retries, then answers: the supervisor's
		// continue after the drain gets through.
		"429past_retries": failThen(RateLimitAttempts, rate),
		"401":             always(Reply{Status: 401, ErrorBody: Body401}),
		"529":             always(Reply{Status: 529, ErrorBody: Body529}),
		"overflow":        always(Reply{Status: 400, ErrorBody: BodyOverflow}),
		// One overflow: OpenCode compacts (a summary request without
		// tools, answered) and continues the turn.
		"overflow_once": failThen(1, Reply{Status: 400, ErrorBody: BodyOverflow}),
		"stall":         failThen(1, Reply{Stall: true}),
		"hang":          always(Reply{Stall: true}),
	}
	maps.Copy(scenarios, fakeserver.ToolScenarios())
	return scenarios
}
