// Package fakeapi is a fake Gemini API (generativelanguage v1beta) for
// end-to-end tests that drive the real Gemini CLI. It listens on 127.0.0.1
// only and picks its behaviour from a [[scenario:NAME]] marker in the
// request (the last one in the conversation, so a later prompt of the same
// session selects its own), so a test selects a scenario by its prompt
// alone.
//
// It answers POST /v1beta/models/MODEL:streamGenerateContent?alt=sse with
// the SSE stream the CLI's SDK reads (`data: GenerateContentResponse`
// chunks), or with an HTTP error carrying the API's JSON error body
// (google.rpc.Status with its details). countTokens is answered with a
// small count; everything else (model lists, loadCodeAssist, the classifier
// generateContent of model "auto") is refused with 404 and logged, so an
// unexpected endpoint is visible in the request log.
package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
)

// Model is the model the hermetic settings select (an explicit model: the
// default "auto" first asks a classifier model through generateContent).
const Model = "gemini-2.5-flash"

// Entry records one handled request.
type Entry = fakeserver.Entry

// Reply is what one request gets.
type Reply struct {
	// Status, when not 200, is sent with ErrorBody (see ErrorBody()).
	Status    int
	ErrorBody string
	// Text is a model reply; Command, when set, is a run_shell_command
	// function call instead.
	Text    string
	Command string
	// Stall sends a first text chunk, then holds the stream open until the
	// server closes; Cut drops the connection mid-stream.
	Stall bool
	Cut   bool
	// PromptTokens is the usage the reply reports (0: 10).
	PromptTokens int
	// Usage, when set, is the usage the reply reports instead, in full.
	Usage *fakeserver.Usage
}

// ScenarioFunc decides the reply to attempt n (1-based) of a scenario;
// toolOutput is the function response the request ends with, if any.
type ScenarioFunc func(n int, toolOutput string) Reply

// Server is a running fake.
type Server struct {
	*fakeserver.Server[ScenarioFunc]
}

// Start serves on a free port of 127.0.0.1.
func Start() (*Server, error) {
	s := &Server{}
	return fakeserver.Start(s, &s.Server, "gemini fakeapi", Builtin(), "POST /v1beta/models/{call}", s.models, func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "gemini fakeapi: no route "+r.URL.Path)
	})
}

// URL is the GOOGLE_GEMINI_BASE_URL: the SDK appends /v1beta/models/….
func (s *Server) URL() string { return "http://" + s.Addr() }

// Requests returns the streamGenerateContent requests of one scenario.
func (s *Server) Requests(scenario string) []Entry { return s.Server.Requests("", scenario) }

// request is the part of a GenerateContentRequest the fake reads.
type request struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string `json:"text"`
			FunctionResponse *struct {
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
}

// lastUser returns the last user turn's text and the output of the function
// response it carries, if any.
func (r *request) lastUser() (text, toolOut string) {
	for i := len(r.Contents) - 1; i >= 0; i-- {
		c := r.Contents[i]
		if c.Role != "user" {
			continue
		}
		for _, p := range c.Parts {
			text += p.Text
			if p.FunctionResponse != nil {
				var out struct {
					Output string `json:"output"`
				}
				_ = json.Unmarshal(p.FunctionResponse.Response, &out)
				toolOut += out.Output
				if toolOut == "" {
					toolOut = "(empty)"
				}
			}
		}
		return text, toolOut
	}
	return "", ""
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	call := r.PathValue("call")
	_, method, _ := strings.Cut(call, ":")
	body, err := fakeserver.ReadBody(r)
	if err != nil {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "read")
		return
	}
	switch method {
	case "countTokens":
		s.Record(Entry{Method: r.Method, Path: r.URL.Path, Status: http.StatusOK})
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"totalTokens":10}`)
		return
	case "streamGenerateContent":
	default:
		s.Record(Entry{Method: r.Method, Path: r.URL.Path, Status: http.StatusNotFound})
		apiError(w, http.StatusNotFound, "NOT_FOUND", "gemini fakeapi: "+method+" is not served")
		return
	}
	scenario := fakeserver.Scenario(body)
	var req request
	_ = json.Unmarshal(body, &req)
	userText, toolOut := req.lastUser()
	n, fn := s.Attempt(scenario)
	rep := fn(n, toolOut)
	status := fakeserver.Status(rep.Status)
	s.Record(Entry{Method: r.Method, Path: r.URL.Path, Scenario: scenario, Attempt: n, Status: status, ToolOutput: toolOut, UserText: userText})
	if status != http.StatusOK {
		fakeserver.WriteError(w, status, rep.ErrorBody)
		return
	}
	s.stream(w, rep)
}

// chunk is one GenerateContentResponse of the stream.
func chunk(parts []map[string]any, finish string, u fakeserver.Usage) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	c := map[string]any{"candidates": []any{cand}, "modelVersion": Model}
	if finish != "" {
		cand["finishReason"] = finish
		// The API counts the cached tokens inside promptTokenCount.
		prompt := u.Input + u.CacheRead
		m := map[string]any{"promptTokenCount": prompt, "candidatesTokenCount": u.Output, "totalTokenCount": prompt + u.Output}
		if u.CacheRead > 0 {
			m["cachedContentTokenCount"] = u.CacheRead
		}
		c["usageMetadata"] = m
	}
	return c
}

func (s *Server) stream(w http.ResponseWriter, rep Reply) {
	sse := fakeserver.StartSSE(w, true)
	send := func(v map[string]any) { sse.Send("", v) }
	prompt := rep.PromptTokens
	if prompt <= 0 {
		prompt = 10
	}
	u := fakeserver.Usage{Input: prompt, Output: 5}
	if rep.Usage != nil {
		u = *rep.Usage
	}
	none := fakeserver.Usage{}
	switch {
	case rep.Stall || rep.Cut:
		send(chunk([]map[string]any{{"text": "Looking"}}, "", none))
		s.Break(w, rep.Stall, rep.Cut)
	case rep.Command != "":
		send(chunk([]map[string]any{{"functionCall": map[string]any{
			"name": "run_shell_command", "args": map[string]any{"command": rep.Command, "description": "run the command"}}}}, "STOP", u))
	default:
		text := rep.Text
		if text == "" {
			text = "Done."
		}
		// Two chunks, as the API streams: a delta, then the end with usage.
		half := len(text) / 2
		send(chunk([]map[string]any{{"text": text[:half]}}, "", none))
		send(chunk([]map[string]any{{"text": text[half:]}}, "STOP", u))
	}
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, ErrorBody(status, code, msg))
}

// ErrorBody is the API's error body: google.rpc.Status in an "error" key,
// with optional details (RetryInfo, QuotaFailure, ErrorInfo) as JSON.
func ErrorBody(status int, code, msg string, details ...string) string {
	m, _ := json.Marshal(msg)
	return fmt.Sprintf(`{"error":{"code":%d,"message":%s,"status":%q,"details":[%s]}}`, status, m, code, strings.Join(details, ","))
}

// RetryInfo is a google.rpc.RetryInfo detail with the given delay ("2s").
func RetryInfo(delay string) string {
	return fmt.Sprintf(`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":%q}`, delay)
}

// HourlyRetryDelay is the quota_hourly scenario's RetryInfo delay.
const HourlyRetryDelay = "3600s"

// The error bodies the built-in scenarios send, as the API words them.
var (
	// Body429 is a per-minute rate limit: the CLI retries it (a
	// RetryableQuotaError honouring the RetryInfo delay).
	Body429 = ErrorBody(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", RetryInfo("1s"))
	// BodyDailyQuota is a daily quota: the CLI gives up at once
	// (TerminalQuotaError, "You have exhausted your daily quota").
	BodyDailyQuota = ErrorBody(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details.",
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}`,
		RetryInfo("30s"))
	// BodyHourlyQuota is a limit that lifts in an hour (RetryInfo past
	// the CLI's 300 s retry ceiling, no daily quota id): the CLI gives up
	// at once but keeps the delay in its message ("Suggested retry after
	// 3600s.", a TerminalQuotaError).
	BodyHourlyQuota = ErrorBody(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).",
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count","quotaId":"GenerateContentPaidTierInputTokensPerModelPerHour"}]}`,
		RetryInfo(HourlyRetryDelay))
	BodyTooLong = ErrorBody(400, "INVALID_ARGUMENT", "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).")
	Body401     = ErrorBody(401, "UNAUTHENTICATED", "API key not valid. Please pass a valid API key.")
	Body403     = ErrorBody(403, "PERMISSION_DENIED", "Permission denied: Consumer 'api_key:fake' has been suspended.")
	Body503     = ErrorBody(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
)

// Builtin is the scenarios every server starts with.
func Builtin() map[string]ScenarioFunc {
	text := func(int, string) Reply { return Reply{Text: "Hello from the fake Gemini."} }
	// tool runs a command, then answers once its output came back.
	tool := func(cmd string) ScenarioFunc {
		return func(_ int, out string) Reply {
			if out != "" {
				return Reply{Text: "The command printed: " + strings.TrimSpace(out)}
			}
			return Reply{Command: cmd}
		}
	}
	fail := func(status int, body string) ScenarioFunc {
		return func(int, string) Reply { return Reply{Status: status, ErrorBody: body} }
	}
	// failThenOK fails the first k attempts, then answers.
	failThenOK := func(k, status int, body string) ScenarioFunc {
		return func(n int, _ string) Reply {
			if n <= k {
				return Reply{Status: status, ErrorBody: body}
			}
			return Reply{Text: "Recovered."}
		}
	}
	return map[string]ScenarioFunc{
		"text": text,
		"tool": tool("echo hi"),
		// usage: the tool scenario with known counts on both replies.
		"usage": func(n int, out string) Reply {
			r := tool("echo hi")(n, out)
			u := fakeserver.UsageCall
			if r.Command == "" {
				u = fakeserver.UsageAnswer
			}
			r.Usage = &u
			return r
		},
		"write": tool("mkdir -p build && echo done > build/out.txt"),
		// slowtool's command outlives a test's patience; a later attempt
		// (the nudge after the CLI was killed) answers.
		"slowtool": func(n int, out string) Reply {
			if n == 1 {
				return Reply{Command: "sleep 60"}
			}
			return Reply{Text: "Finished after the restart."}
		},
		"429": fail(429, Body429),
		// Two attempts is the CLI's whole budget under the hermetic
		// settings (general.maxAttempts 2): the third is the supervisor's.
		"429then_ok":    failThenOK(2, 429, Body429),
		"quota":         fail(429, BodyDailyQuota),
		"quota_hourly":  fail(429, BodyHourlyQuota),
		"too_long":      fail(400, BodyTooLong),
		"too_long_once": failThenOK(1, 400, BodyTooLong),
		"401":           fail(401, Body401),
		"403":           fail(403, Body403),
		"503":           fail(503, Body503),
		// stall goes silent after a first chunk; the nudge (a later
		// attempt) answers.
		"stall": func(n int, _ string) Reply {
			if n == 1 {
				return Reply{Stall: true}
			}
			return Reply{Text: "Finished after the nudge."}
		},
		"hang": func(int, string) Reply { return Reply{Stall: true} },
	}
}
