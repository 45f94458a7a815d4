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

// Listener is a fake's HTTP server on a free port of 127.0.0.1 (never
// another address): the handlers in flight, and a Close that releases the
// stalled streams and waits for every handler, so no goroutine outlives the
// test. Server embeds it; a fake that keeps a log of its own (Claude's, whose
// entries carry the decoded request) embeds it alone.
type Listener struct {
	name string
	ln   net.Listener
	srv  *http.Server
	done chan struct{} // closed by Close to release stalled handlers
	wg   sync.WaitGroup

	mu     sync.Mutex // guards closed and the wg.Add that depends on it
	closed bool
}

// NewListener takes a free port of 127.0.0.1 for a fake called name (the
// prefix of its errors, e.g. "codex fakeapi"). Nothing is served until Run.
func NewListener(name string) (*Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s: listen: %w", name, err)
	}
	return &Listener{name: name, ln: ln, done: make(chan struct{})}, nil
}

// Run serves h in the background. A request that arrives once Close has
// begun is answered by closing, or when it is nil by a plain 503 "NAME:
// server closing". There is no WriteTimeout: a stalled stream stays open
// until the client gives up or Close releases it.
func (l *Listener) Run(h http.Handler, closing http.HandlerFunc) {
	if closing == nil {
		closing = func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, l.name+": server closing", http.StatusServiceUnavailable)
		}
	}
	l.srv = &http.Server{Handler: l.track(h, closing), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = l.srv.Serve(l.ln) }()
}

// Addr is the host:port the fake listens on.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Done is closed once Close begins: a stalled stream ends there.
func (l *Listener) Done() <-chan struct{} { return l.done }

// Close stops the server, releases stalled streams and waits for every
// handler to return.
func (l *Listener) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	close(l.done)
	if l.srv != nil {
		_ = l.srv.Close()
	} else {
		_ = l.ln.Close()
	}
	l.wg.Wait()
}

// Stall holds a stream open until the server closes, cancel is closed (nil:
// never) or ten minutes pass.
func (l *Listener) Stall(cancel <-chan struct{}) {
	select {
	case <-l.done:
	case <-cancel:
	case <-time.After(10 * time.Minute):
	}
}

// track counts the handlers in flight so Close can wait for them. The Add
// happens under mu and only while open, so it never races with the Wait in
// Close: a request accepted just before Close is turned away by closing.
func (l *Listener) track(h http.Handler, closing http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			closing(w, r)
			return
		}
		l.wg.Add(1)
		l.mu.Unlock()
		defer l.wg.Done()
		h.ServeHTTP(w, r)
	})
}

// Server is a running fake whose scenarios are functions F. A fake's own
// Server embeds it, so Close, Handle and Log are the fake's.
type Server[F any] struct {
	*Listener

	mu        sync.Mutex
	scenarios map[string]F
	attempts  map[string]int
	log       []Entry
}

// Listen takes a free port of 127.0.0.1 for a fake called name (the prefix
// of its errors and of the 404 body, e.g. "codex fakeapi") that knows
// scenarios. Nothing is served until Serve, so the fake can route to itself
// first.
func Listen[F any](name string, scenarios map[string]F) (*Server[F], error) {
	l, err := NewListener(name)
	if err != nil {
		return nil, err
	}
	return &Server[F]{Listener: l, scenarios: scenarios, attempts: map[string]int{}}, nil
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
	s.Run(mux, nil)
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

// Cut drops the connection under w at once with a TCP reset (SO_LINGER 0),
// not a clean close, so the client sees ECONNRESET: the signature of a
// network that went away under a request. What was written before goes out
// first.
func Cut(w http.ResponseWriter) {
	c, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return // not hijackable (HTTP/2): the handler's return ends it
	}
	_ = buf.Flush()
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
