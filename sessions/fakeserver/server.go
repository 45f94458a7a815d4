// Package fakeserver is the scaffolding every fake model API of the
// end-to-end tests shares: a server on a free port of 127.0.0.1 (never
// another address), a catch-all 404 that logs the unexpected request, the
// request log, the named scenarios and their attempt counts, a Close that
// releases stalled streams, the refusing proxy and the lookup of a real CLI's
// binary. Each fake keeps its own wire format (routes, SSE framing, error
// bodies, scenarios) in its package; this one knows none of them.
package fakeserver

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sync"
	"time"
)

// DefaultScenario is the scenario a request without a marker gets, and the
// one an unknown marker falls back to.
const DefaultScenario = "text"

// Entry records one handled request.
type Entry struct {
	Method, Path string
	// Scenario and Attempt (1-based, per scenario) are set for the fake's
	// model route.
	Scenario string
	Attempt  int
	Status   int
	// ToolOutput is the output of the tool call the request ends with (the
	// CLI sending back what a command printed), if any.
	ToolOutput string
	// UserText is the text of the request's last user message.
	UserText string
	// Tools is how many tools the request offered, for the fakes that
	// count them (OpenCode's compaction summary request offers none).
	Tools int
	At    time.Time
}

// Server is a running fake whose scenarios are functions F. A fake's own
// Server embeds it, so Close, Handle and Log are the fake's.
type Server[F any] struct {
	name string
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	scenarios map[string]F
	attempts  map[string]int
	log       []Entry
	closed    bool
}

// Listen takes a free port of 127.0.0.1 for a fake called name (the prefix
// of its errors and of the 404 body, e.g. "codex fakeapi") that knows
// scenarios. Nothing is served until Serve, so the fake can route to itself
// first.
func Listen[F any](name string, scenarios map[string]F) (*Server[F], error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s: listen: %w", name, err)
	}
	return &Server[F]{name: name, ln: ln, done: make(chan struct{}), scenarios: scenarios, attempts: map[string]int{}}, nil
}

// Serve serves mux with a catch-all for every other route: the request is
// logged as a 404 and answered by notFound, or when it is nil by a plain
// 404 "NAME: no route", which makes an unexpected endpoint visible in the
// log.
func (s *Server[F]) Serve(mux *http.ServeMux, notFound http.HandlerFunc) {
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.Record(Entry{Method: r.Method, Path: r.URL.Path, Status: http.StatusNotFound})
		if notFound != nil {
			notFound(w, r)
			return
		}
		http.Error(w, s.name+": no route", http.StatusNotFound)
	})
	s.srv = &http.Server{Handler: s.track(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(s.ln) }()
}

// Addr is the host:port the fake listens on.
func (s *Server[F]) Addr() string { return s.ln.Addr().String() }

// Close stops the server, releasing stalled streams.
func (s *Server[F]) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	if s.srv != nil {
		_ = s.srv.Close()
	} else {
		_ = s.ln.Close()
	}
	s.wg.Wait()
}

// Handle registers or replaces a scenario.
func (s *Server[F]) Handle(name string, fn F) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scenarios[name] = fn
}

// Log is a copy of the handled requests.
func (s *Server[F]) Log() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.log...)
}

// Record adds one handled request to the log, stamped now.
func (s *Server[F]) Record(e Entry) {
	e.At = time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, e)
}

// Attempt counts one more request of scenario and returns its number
// (1-based, per scenario) and the scenario's function, the default
// scenario's when the name is unknown.
func (s *Server[F]) Attempt(scenario string) (int, F) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts[scenario]++
	fn, ok := s.scenarios[scenario]
	if !ok {
		fn = s.scenarios[DefaultScenario]
	}
	return s.attempts[scenario], fn
}

// Stall holds a stream open until the server closes, cancel is closed (nil:
// never) or ten minutes pass.
func (s *Server[F]) Stall(cancel <-chan struct{}) {
	select {
	case <-s.done:
	case <-cancel:
	case <-time.After(10 * time.Minute):
	}
}

func (s *Server[F]) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.wg.Add(1)
		defer s.wg.Done()
		h.ServeHTTP(w, r)
	})
}

var markerRE = regexp.MustCompile(`\[\[scenario:([A-Za-z0-9_]+)\]\]`)

// Scenario is the name in the last [[scenario:NAME]] marker of a request
// body (a later prompt of the same session selects its own), else
// DefaultScenario.
func Scenario(body []byte) string {
	if m := markerRE.FindAllSubmatch(body, -1); len(m) > 0 {
		return string(m[len(m)-1][1])
	}
	return DefaultScenario
}

// ReadBody reads a request body up to 64 MiB.
func ReadBody(r *http.Request) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r.Body, 64<<20))
}

// Status is a reply's status: 0 means 200.
func Status(status int) int {
	if status == 0 {
		return http.StatusOK
	}
	return status
}

// WriteError sends an error reply: status with a JSON body.
func WriteError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// Cut drops the connection under w at once (a reset, not a clean close),
// as a network failure mid-stream does.
func Cut(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	c, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// Start is Listen and Serve for a fake with one model route: it takes a
// free port of 127.0.0.1 for the fake's own server srv (whose embedded
// *Server[F] is *fs), serves pattern (a ServeMux pattern, "POST
// /v1/responses") with handler and every other route as Serve says, and
// returns srv, or nil and the error.
func Start[S, F any](srv *S, fs **Server[F], name string, scenarios map[string]F, pattern string, handler, notFound http.HandlerFunc) (*S, error) {
	s, err := Listen(name, scenarios)
	if err != nil {
		return nil, err
	}
	*fs = s
	mux := http.NewServeMux()
	mux.HandleFunc(pattern, handler)
	s.Serve(mux, notFound)
	return srv, nil
}

// Requests returns the logged requests of one scenario to path ("": any).
func (s *Server[F]) Requests(path, scenario string) []Entry {
	var out []Entry
	for _, e := range s.Log() {
		if (path == "" || e.Path == path) && e.Scenario == scenario {
			out = append(out, e)
		}
	}
	return out
}
