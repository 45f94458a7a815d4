// Package fakeapi is a fake Anthropic Messages API for end-to-end tests that
// drive the real Claude Code CLI. It listens on loopback only and picks its
// behaviour from a [[scenario:NAME]] marker in the conversation, so a test
// selects a scenario just by putting the marker in its prompt: no side
// channel, and every retry or follow-up request of that session carries the
// same marker.
//
// It speaks the wire format the CLI expects: streaming SSE for
// POST /v1/messages (the CLI adds ?beta=true), a JSON body when "stream" is
// false (the CLI's fallback after a broken stream), and
// POST /v1/messages/count_tokens. Everything else is a 404, which makes an
// unexpected endpoint visible in the request log instead of silently served.
package fakeapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
)

// DefaultSlowDelay is the pause between deltas of the slow scenario.
const DefaultSlowDelay = 2 * time.Second

// Entry records one handled HTTP request.
type Entry struct {
	Method string
	Path   string
	// Scenario and Attempt are set for /v1/messages requests.
	Scenario string
	Attempt  int
	// Stream is the request's "stream" flag.
	Stream bool
	// Status is the HTTP status sent. A stalled request is logged with 200
	// as soon as its stream starts, so tests can wait for the stall. A cut
	// non-streaming request sent none and is logged with 0.
	Status int
	// Cut reports that the connection was reset instead of answered in full
	// (Reply.Cut).
	Cut bool
	// Request is the decoded messages body (nil for other endpoints).
	Request *MessagesRequest
	// At is when the response status was decided.
	At time.Time
}

// Server is a running fake API. Create it with Start and stop it with Close
// (the listener's: it releases stalled streams and waits for every handler
// to return, so no goroutine outlives the test). Its log is its own, not
// fakeserver.Server's: an entry carries the decoded Messages request.
type Server struct {
	*fakeserver.Listener

	// SlowDelay is the pause between deltas of the slow scenario. Set it
	// before the first request that needs it.
	SlowDelay time.Duration

	mu        sync.Mutex
	scenarios map[string]ScenarioFunc
	attempts  map[string]int
	log       []Entry
	changed   chan struct{} // closed and replaced on every log append
}

// Start listens on 127.0.0.1 on a free port and serves in the background.
// Binding to loopback (never all interfaces) keeps test traffic on the host.
func Start() (*Server, error) {
	l, err := fakeserver.NewListener("fakeapi")
	if err != nil {
		return nil, err
	}
	s := &Server{
		Listener:  l,
		SlowDelay: DefaultSlowDelay,
		scenarios: builtinScenarios(),
		attempts:  map[string]int{},
		changed:   make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.messages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.record(Entry{Method: r.Method, Path: r.URL.Path, Status: http.StatusNotFound})
		writeError(w, http.StatusNotFound, "not_found_error", "fakeapi: no route for "+r.Method+" "+r.URL.Path)
	})
	s.Run(mux, func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusServiceUnavailable, "api_error", "fakeapi: server closing")
	})
	return s, nil
}

// URL is the base URL for ANTHROPIC_BASE_URL: scheme and host, no path,
// because the CLI appends /v1/messages itself.
func (s *Server) URL() string { return "http://" + s.Addr() }

// Handle registers or replaces the scenario NAME on this server.
func (s *Server) Handle(name string, fn ScenarioFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scenarios[name] = fn
}

// Requests is the number of HTTP requests handled so far (any endpoint).
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

// Log returns a copy of the handled requests in arrival order of their
// responses.
func (s *Server) Log() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.log...)
}

// Wait blocks until cond holds for the request log or ctx ends. It lets a
// test wait for, say, a stalled request to arrive before interrupting.
func (s *Server) Wait(ctx context.Context, cond func([]Entry) bool) error {
	for {
		s.mu.Lock()
		ok := cond(s.log)
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Server) record(e Entry) {
	e.At = time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, e)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	body, err := fakeserver.ReadBody(r)
	if err != nil {
		s.record(Entry{Method: r.Method, Path: r.URL.Path, Status: http.StatusBadRequest})
		writeError(w, http.StatusBadRequest, "invalid_request_error", "fakeapi: reading body: "+err.Error())
		return
	}
	s.record(Entry{Method: r.Method, Path: r.URL.Path, Status: http.StatusOK})
	w.Header().Set("Content-Type", "application/json")
	// A rough 4-bytes-per-token estimate: callers only need a plausible,
	// size-dependent number.
	_ = json.NewEncoder(w).Encode(map[string]int{"input_tokens": estimateTokens(len(body))})
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	body, err := fakeserver.ReadBody(r)
	var req MessagesRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		s.record(Entry{Method: r.Method, Path: r.URL.Path, Status: http.StatusBadRequest})
		writeError(w, http.StatusBadRequest, "invalid_request_error", "fakeapi: bad request body: "+err.Error())
		return
	}
	name, key := scenarioOf(&req)
	s.mu.Lock()
	fn := s.scenarios[name]
	s.attempts[key]++
	call := &Call{Scenario: name, Key: key, Attempt: s.attempts[key], Stream: req.Stream, Req: &req, SlowDelay: s.SlowDelay}
	s.mu.Unlock()

	var reply Reply
	if fn == nil {
		// A typo in a marker should fail loudly, not fall back to text.
		reply = ErrorReply(http.StatusBadRequest, "invalid_request_error", "fakeapi: unknown scenario "+name)
	} else {
		reply = fn(call)
	}
	status := fakeserver.Status(reply.Status)
	logged := status
	if reply.Cut && !req.Stream {
		logged = 0 // reset before any response
	}
	s.record(Entry{Method: r.Method, Path: r.URL.Path, Scenario: name, Attempt: call.Attempt,
		Stream: req.Stream, Status: logged, Cut: reply.Cut, Request: &req})

	w.Header().Set("request-id", "req_fake_"+randomID())
	for k, v := range reply.Headers {
		w.Header().Set(k, v)
	}
	if status != http.StatusOK {
		if reply.RetryAfter != "" {
			w.Header().Set("retry-after", reply.RetryAfter)
		}
		writeError(w, status, reply.ErrorType, reply.ErrorMessage)
		return
	}
	model := req.Model
	if reply.Model != "" {
		model = reply.Model
	}
	if model == "" {
		model = "claude-fake"
	}
	inTokens := estimateTokens(len(body))
	if req.Stream {
		s.stream(r.Context(), w, reply, model, inTokens)
		return
	}
	if reply.Cut {
		fakeserver.Cut(w)
		return
	}
	if reply.Stall || reply.Pause > 0 {
		d := reply.Pause
		if reply.Stall {
			d = -1
		}
		if !s.sleep(r.Context(), d) {
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(finalMessage(reply, model, inTokens))
}

// sleep waits d (forever if d < 0) and reports false if the client left or
// the server is closing first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	var timer <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
		return true
	case <-ctx.Done():
		return false
	case <-s.Done():
		return false
	}
}

// stream writes the reply as the API's SSE sequence: message_start, ping,
// per block content_block_start / _delta… / _stop, message_delta (stop
// reason and output usage), message_stop. Every event is flushed at once so
// the client sees the same timing the scenario asked for.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, reply Reply, model string, inTokens int) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(event string, data any) bool {
		b, err := json.Marshal(data)
		if err != nil {
			panic(err) // only our own fixed types are marshalled
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	start := wireMessage{
		ID: "msg_fake_" + randomID(), Type: "message", Role: "assistant", Model: model,
		Content: []wireBlock{},
		Usage:   usage{InputTokens: inTokens, OutputTokens: 1},
	}
	if u := reply.Usage; u != nil {
		// As the API does: the input and cache counts at the start, the
		// output count in message_delta.
		start.Usage = usage{InputTokens: u.Input, OutputTokens: 1, CacheCreationInputTokens: u.CacheWrite, CacheReadInputTokens: u.CacheRead}
	}
	if !send("message_start", map[string]any{"type": "message_start", "message": start}) {
		return
	}
	if reply.Stall {
		s.sleep(ctx, -1)
		return
	}
	if reply.Cut {
		// The start of a text block, then the connection drops: what a
		// client sees when Wi-Fi goes or a proxy resets the stream.
		empty := ""
		if send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": wireBlock{Type: "text", Text: &empty}}) {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]string{"type": "text_delta", "text": "This reply is cut off mid"}})
		}
		fakeserver.Cut(w)
		return
	}
	if !send("ping", map[string]string{"type": "ping"}) {
		return
	}
	first := true
	pause := func() bool {
		if first || reply.Pause <= 0 {
			first = false
			return true
		}
		return s.sleep(ctx, reply.Pause)
	}
	out := 0
	for i, b := range wireBlocks(reply.Content) {
		startBlock := b
		var deltas []map[string]string
		switch b.Type {
		case "text":
			empty := ""
			startBlock.Text = &empty
			chunks := reply.Content[i].Chunks
			if chunks == nil {
				chunks = []string{*b.Text}
			}
			for _, c := range chunks {
				deltas = append(deltas, map[string]string{"type": "text_delta", "text": c})
				out += estimateTokens(len(c))
			}
		case "tool_use":
			startBlock.Input = json.RawMessage(`{}`)
			// The real API opens with an empty partial_json and then sends
			// the arguments in pieces; split in two so the client's
			// accumulation is exercised.
			js := string(b.Input)
			half := len(js) / 2
			for _, p := range []string{"", js[:half], js[half:]} {
				deltas = append(deltas, map[string]string{"type": "input_json_delta", "partial_json": p})
			}
			out += estimateTokens(len(js))
		}
		if !send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": startBlock}) {
			return
		}
		for _, d := range deltas {
			if !pause() {
				return
			}
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}) {
				return
			}
		}
		if !send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}) {
			return
		}
	}
	if !send("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stopReason(reply), "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": outputTokens(reply, max(out, 1))},
	}) {
		return
	}
	send("message_stop", map[string]string{"type": "message_stop"})
}

// finalMessage is the non-streaming response body.
func finalMessage(reply Reply, model string, inTokens int) wireMessage {
	blocks := wireBlocks(reply.Content)
	out := 0
	for _, b := range blocks {
		if b.Text != nil {
			out += estimateTokens(len(*b.Text))
		}
		out += estimateTokens(len(b.Input))
	}
	sr := stopReason(reply)
	return wireMessage{
		ID: "msg_fake_" + randomID(), Type: "message", Role: "assistant", Model: model,
		Content: blocks, StopReason: &sr,
		Usage: replyUsage(reply, inTokens, max(out, 1)),
	}
}

// replyUsage is the reply's usage: the scenario's when it set one, else the
// estimate.
func replyUsage(reply Reply, in, out int) usage {
	if u := reply.Usage; u != nil {
		return usage{InputTokens: u.Input, OutputTokens: u.Output, CacheCreationInputTokens: u.CacheWrite, CacheReadInputTokens: u.CacheRead}
	}
	return usage{InputTokens: in, OutputTokens: out}
}

// outputTokens is the reply's output count: the scenario's, else estimated.
func outputTokens(reply Reply, estimate int) int {
	if reply.Usage != nil {
		return reply.Usage.Output
	}
	return estimate
}

func wireBlocks(bs []Block) []wireBlock {
	out := make([]wireBlock, 0, len(bs))
	for _, b := range bs {
		switch b.Type {
		case "tool_use":
			in, err := json.Marshal(b.Input)
			if err != nil || b.Input == nil {
				in = []byte(`{}`)
			}
			id := b.ID
			if id == "" {
				id = "toolu_fake_" + randomID()
			}
			out = append(out, wireBlock{Type: "tool_use", ID: id, Name: b.Name, Input: in})
		default:
			t := b.text()
			out = append(out, wireBlock{Type: "text", Text: &t})
		}
	}
	return out
}

func stopReason(r Reply) string {
	if r.StopReason != "" {
		return r.StopReason
	}
	for _, b := range r.Content {
		if b.Type == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}

func writeError(w http.ResponseWriter, status int, errType, message string) {
	if errType == "" {
		errType = "api_error"
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(apiError{Type: "error", Error: apiErrorBody{Type: errType, Message: message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func estimateTokens(n int) int { return max(n/4, 1) }

// randomID returns 16 hex characters. Random rather than a counter so ids
// stay unique when one CLI session talks to several fake servers (resume).
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24 (it aborts instead)
	return hex.EncodeToString(b[:])
}
