package fakeserver

import (
	"encoding/json"
	"net/http"
)

// Reply is what one request to an OpenAI-style fake gets (Codex's
// Responses API, Copilot's and OpenCode's chat completions); each fake
// sends the fields its wire can carry.
type Reply struct {
	// Status, when not 200, is sent with ErrorBody.
	Status    int
	ErrorBody string
	// Header is added to the response (retry-after on a 429; Codex reads
	// its rate-limit snapshot from x-codex-* headers).
	Header map[string]string
	// Text is an assistant message; Command, when set, is a call of the
	// agent's shell tool instead.
	Text    string
	Command string
	// Tool and ToolArgs, when Tool is set, are a call of another of the
	// agent's function tools with these JSON arguments (Codex's
	// update_plan, OpenCode's todowrite).
	Tool, ToolArgs string
	// Escalate asks for the command to run outside the sandbox, which
	// Codex submits to the user for approval under approval_policy
	// on-request (Codex only).
	Escalate bool
	// Stall holds the stream open after its first event until the server
	// closes or the client goes away; Cut drops the connection mid-stream.
	Stall bool
	Cut   bool
	// Usage, when set, is the token usage the reply reports instead of the
	// fake's default, so a test can check the counts the CLI passes on.
	Usage *Usage
}

// Usage is a reply's token counts by rate class. Input is the part neither
// read from nor written to the cache; each fake writes them in its API's
// shape (OpenAI's input_tokens include the cached ones).
type Usage struct {
	Input, Output, CacheWrite, CacheRead int
}

// ChatUsage is the usage object of an OpenAI chat completion for r: the
// reply's Usage, else 100 prompt and 20 completion tokens. prompt_tokens
// include the cached ones, as the API counts them.
func ChatUsage(r Reply) map[string]any {
	u := Usage{Input: 100, Output: 20}
	if r.Usage != nil {
		u = *r.Usage
	}
	in := u.Input + u.CacheRead
	m := map[string]any{"prompt_tokens": in, "completion_tokens": u.Output, "total_tokens": in + u.Output}
	if u.CacheRead > 0 {
		m["prompt_tokens_details"] = map[string]any{"cached_tokens": u.CacheRead}
	}
	return m
}

// UsageCall and UsageAnswer are the usage scenario's replies' counts: the
// tool call, then the answer after its output.
var (
	UsageCall   = Usage{Input: 1500, Output: 40, CacheRead: 2048}
	UsageAnswer = Usage{Input: 300, Output: 25, CacheRead: 3584}
)

// ScenarioFunc decides the reply to attempt n (1-based) of a scenario;
// toolOutput is the tool result the request carries last, if any.
type ScenarioFunc func(n int, toolOutput string) Reply

// Always answers every attempt with r.
func Always(r Reply) ScenarioFunc { return func(int, string) Reply { return r } }

// FailThen answers the first k attempts with fail, then a text.
func FailThen(k int, fail Reply) ScenarioFunc {
	return func(n int, _ string) Reply {
		if n <= k {
			return fail
		}
		return Reply{Text: "Hello after the failures."}
	}
}

// ToolScenarios are the command scenarios every tool-running fake serves
// alike: "tool" runs a short command and reports its output; "slowtool"
// runs a minute-long command once, and any later request (its output, or
// a nudge after the agent was killed) is answered.
func ToolScenarios() map[string]ScenarioFunc {
	return map[string]ScenarioFunc{
		"tool": func(_ int, out string) Reply {
			if out != "" {
				return Reply{Text: "The command printed hi."}
			}
			return Reply{Command: "sleep 1; echo hi"}
		},
		// usage: the tool scenario with known counts on both replies.
		"usage": func(_ int, out string) Reply {
			if out != "" {
				u := UsageAnswer
				return Reply{Text: "The command printed hi.", Usage: &u}
			}
			u := UsageCall
			return Reply{Command: "sleep 1; echo hi", Usage: &u}
		},
		"slowtool": func(n int, _ string) Reply {
			if n > 1 {
				return Reply{Text: "The slow command finished."}
			}
			return Reply{Command: "sleep 60; echo done"}
		},
	}
}

// Answer is how an OpenAI-style fake's model route answers a request it
// has read into e (its Scenario, ToolOutput, UserText, Tools): the
// scenario's attempt is counted and asked for its reply, the request is
// logged with its method, path, attempt and status, and the reply's
// headers are set. A reply that is not a 200 is sent as its error body;
// stream says the fake now streams rep, attempt n, in its own wire format.
func Answer(s *Server[ScenarioFunc], w http.ResponseWriter, r *http.Request, e Entry) (rep Reply, n int, stream bool) {
	n, fn := s.Attempt(e.Scenario)
	rep = fn(n, e.ToolOutput)
	e.Method, e.Path, e.Attempt, e.Status = r.Method, r.URL.Path, n, Status(rep.Status)
	s.Record(e)
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if e.Status != http.StatusOK {
		WriteError(w, e.Status, rep.ErrorBody)
		return rep, n, false
	}
	return rep, n, true
}

// ReadRequest reads a model request of an OpenAI-style fake: its body into
// req (the part of it the fake reads; a body that is not JSON leaves req
// as it is) and the scenario its marker names. When the body cannot be
// read the request is answered 400 and ok is false.
func ReadRequest[T any](w http.ResponseWriter, r *http.Request, req *T) (scenario string, ok bool) {
	body, err := ReadBody(r)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return "", false
	}
	_ = json.Unmarshal(body, req)
	return Scenario(body), true
}
