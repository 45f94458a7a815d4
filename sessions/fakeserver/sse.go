package fakeserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// SSE is the server-sent event stream a fake writes a reply on; each event
// is flushed at once, so the CLI reads it while the fake waits (a stall)
// or cuts the connection.
type SSE struct {
	w   http.ResponseWriter
	fl  http.Flusher
	end string
}

// StartSSE answers 200 with an uncached event stream on w. Events end in a
// blank line: "\r\n\r\n" when crlf (Gemini's SDK is sent that), else
// "\n\n".
func StartSSE(w http.ResponseWriter, crlf bool) *SSE {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	e := &SSE{w: w, fl: fl, end: "\n\n"}
	if crlf {
		e.end = "\r\n\r\n"
	}
	return e
}

// Send writes one event: its name when event is not "" (the Responses
// API's "event: response.created"), and v as its JSON data.
func (e *SSE) Send(event string, v any) {
	b, _ := json.Marshal(v)
	if event != "" {
		fmt.Fprintf(e.w, "event: %s\n", event)
	}
	fmt.Fprintf(e.w, "data: %s%s", b, e.end)
	e.flush()
}

// Done ends an OpenAI chat completions stream: data: [DONE].
func (e *SSE) Done() {
	_, _ = io.WriteString(e.w, "data: [DONE]"+e.end)
	e.flush()
}

func (e *SSE) flush() {
	if e.fl != nil {
		e.fl.Flush()
	}
}

// Break carries out a reply's Stall (the stream held open until the
// server closes) or Cut (the connection dropped under the CLI); it reports
// whether it did either, the stream then being over.
func (s *Server[F]) Break(w http.ResponseWriter, stall, cut bool) bool {
	switch {
	case stall:
		s.Stall(nil)
	case cut:
		Cut(w)
	default:
		return false
	}
	return true
}
