package fakeserver

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type scenario func(n int) string

// stalled is told when a request of the stall scenario holds its stream.
var stalled = make(chan struct{}, 1)

// fake is a fake's own server, as each fake API package has one.
type fake struct{ *Server[scenario] }

func start(t *testing.T) *fake {
	t.Helper()
	f := &fake{}
	_, err := Start(f, &f.Server, "test fake", map[string]scenario{
		DefaultScenario: func(n int) string { return "default" },
		"stall":         func(n int) string { return "stall" },
	}, "POST /ok", func(w http.ResponseWriter, r *http.Request) {
		body, _ := ReadBody(r)
		sc := Scenario(body)
		n, fn := f.Attempt(sc)
		if fn(n) == "stall" {
			stalled <- struct{}{}
			f.Stall(nil)
			return
		}
		f.Record(Entry{Method: r.Method, Path: r.URL.Path, Scenario: sc, Status: http.StatusOK})
		_, _ = io.WriteString(w, fn(n))
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func TestServerListensOnLoopbackOnly(t *testing.T) {
	s := start(t)
	host, _, err := net.SplitHostPort(s.Addr())
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr = %q (%v), want 127.0.0.1:PORT", s.Addr(), err)
	}
}

func TestServerRoutesScenariosAndLogs(t *testing.T) {
	s := start(t)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		reply                    string
	}{
		{"no marker is the default scenario", "POST", "/ok", "hi", 200, "default"},
		{"an unknown marker falls back to the default", "POST", "/ok", "[[scenario:nope]]", 200, "default"},
		{"an unrouted path is a logged 404", "GET", "/elsewhere", "", 404, "test fake: no route\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.Log())
			req, _ := http.NewRequest(tc.method, "http://"+s.Addr()+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tc.status || string(b) != tc.reply {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, b, tc.status, tc.reply)
			}
			log := s.Log()
			if len(log) != before+1 {
				t.Fatalf("log grew by %d, want 1", len(log)-before)
			}
			if e := log[len(log)-1]; e.Method != tc.method || e.Path != tc.path || e.Status != tc.status || e.At.IsZero() {
				t.Fatalf("logged %+v, want %s %s status %d stamped", e, tc.method, tc.path, tc.status)
			}
		})
	}
}

// Requests are the logged requests of one scenario, to one path or any.
func TestRequestsOfAScenario(t *testing.T) {
	s := start(t)
	for _, e := range []Entry{{Path: "/a", Scenario: "x"}, {Path: "/b", Scenario: "x"}, {Path: "/a", Scenario: "y"}} {
		s.Record(e)
	}
	for _, tc := range []struct {
		path, scenario string
		want           []string
	}{
		{"/a", "x", []string{"/a"}},
		{"", "x", []string{"/a", "/b"}},
		{"/b", "y", nil},
	} {
		var got []string
		for _, e := range s.Requests(tc.path, tc.scenario) {
			if e.Scenario != tc.scenario {
				t.Errorf("Requests(%q, %q) holds %+v", tc.path, tc.scenario, e)
			}
			got = append(got, e.Path)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Requests(%q, %q) = %q, want %q", tc.path, tc.scenario, got, tc.want)
		}
	}
}

func TestAttemptCountsPerScenario(t *testing.T) {
	s := start(t)
	for i, want := range []struct {
		scenario string
		n        int
	}{{"a", 1}, {"b", 1}, {"a", 2}} {
		if n, _ := s.Attempt(want.scenario); n != want.n {
			t.Fatalf("call %d: Attempt(%s) = %d, want %d", i, want.scenario, n, want.n)
		}
	}
}

func TestScenarioTakesTheLastMarker(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"plain", DefaultScenario},
		{"[[scenario:one]]", "one"},
		{"[[scenario:one]] then [[scenario:two_2]]", "two_2"},
	} {
		if got := Scenario([]byte(tc.body)); got != tc.want {
			t.Errorf("Scenario(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestCloseReleasesAStalledStream(t *testing.T) {
	s := start(t)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post("http://"+s.Addr()+"/ok", "text/plain", strings.NewReader("[[scenario:stall]]"))
		if err == nil {
			_ = resp.Body.Close()
		}
		errc <- err
	}()
	<-stalled
	// Close waits for the stalled handler: the request ends only because
	// Close released it (the stall otherwise lasts ten minutes).
	s.Close()
	<-errc
}

// TestRunTurnsAwayRequestsOnceClosing: a request served while Close runs
// (accepted just before it) is not counted among the handlers Close waits
// for; it gets the fake's closing answer, or a plain 503.
func TestRunTurnsAwayRequestsOnceClosing(t *testing.T) {
	teapot := func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "teapot", http.StatusTeapot) }
	for _, tc := range []struct {
		name       string
		closing    http.HandlerFunc
		closed     bool
		wantStatus int
		wantBody   string
	}{
		{"open", nil, false, http.StatusOK, "served"},
		{"closing, a plain 503", nil, true, http.StatusServiceUnavailable, "test fake: server closing"},
		{"closing, the fake's own answer", teapot, true, http.StatusTeapot, "teapot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewListener("test fake")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(l.Close)
			l.Run(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "served") }), tc.closing)
			if tc.closed {
				l.Close()
			}
			// The server's handler itself: after Close no connection
			// reaches it, so the race it guards is played out by hand.
			rec := httptest.NewRecorder()
			l.srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/ok", nil))
			if rec.Code != tc.wantStatus || strings.TrimSpace(rec.Body.String()) != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Body.String(), tc.wantStatus, tc.wantBody)
			}
		})
	}
}

func TestRefusingProxyRefusesEverything(t *testing.T) {
	var seen []string
	url, closeFn, err := StartRefusingProxy("test fake", func(method, host string) { seen = append(seen, method+" "+host) })
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("proxy at %s, want loopback", url)
	}
	resp, err := http.Get(url + "/x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(string(b), "test fake: test proxy refuses GET ") || len(seen) != 1 {
		t.Fatalf("got %d %q seen %v, want 403 refusal seen once", resp.StatusCode, b, seen)
	}
}

func TestModuleRootHoldsGoMod(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("ModuleRoot = %q: %v", root, err)
	}
}

func TestProxyEnv(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"no proxy", "", nil},
		{"every spelling, loopback exempt", "http://127.0.0.1:9", []string{
			"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9",
			"http_proxy=http://127.0.0.1:9", "ALL_PROXY=http://127.0.0.1:9", "all_proxy=http://127.0.0.1:9",
			"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProxyEnv(tc.url); !slices.Equal(got, tc.want) {
				t.Fatalf("ProxyEnv(%q) = %q, want %q", tc.url, got, tc.want)
			}
		})
	}
}

// Env is PATH (inherited, else a default), HOME, TMPDIR, the caller's
// variables and the proxy, in that order, and nothing else of the
// environment (not the test's own TMPDIR).
func TestEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "real")
	t.Setenv("TMPDIR", "/elsewhere")
	for _, tc := range []struct {
		name, path, proxy string
		want              []string
	}{
		{"inherited PATH", "/opt/bin", "", []string{"PATH=/opt/bin", "HOME=/h", "TMPDIR=/h", "A=1"}},
		{"default PATH", "", "", []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/h", "TMPDIR=/h", "A=1"}},
		{"with the proxy", "/opt/bin", "http://127.0.0.1:9",
			append([]string{"PATH=/opt/bin", "HOME=/h", "TMPDIR=/h", "A=1"}, ProxyEnv("http://127.0.0.1:9")...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.path)
			if got := Env("/h", tc.proxy, "A=1"); !slices.Equal(got, tc.want) {
				t.Fatalf("Env = %q, want %q", got, tc.want)
			}
		})
	}
}

// A CLI started the way the adapters start one (the test's environment,
// then Env's, the last value of a variable winning) makes its temporary
// files under the test's home, not in the test's TMPDIR.
func TestEnvTempFilesGoUnderHome(t *testing.T) {
	home, outer := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", outer)
	cmd := exec.Command("sh", "-c", "mktemp")
	cmd.Env = append(os.Environ(), Env(home, "")...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); filepath.Dir(got) != home {
		t.Errorf("mktemp made %s, want a file in %s", got, home)
	}
	if left, _ := os.ReadDir(outer); len(left) != 0 {
		t.Errorf("the test's TMPDIR holds %v", left)
	}
}

// What the chat fakes read of a request: the tool result it ends with
// ("(empty)" for one that printed nothing, "" for none) and the last user
// message's text, whether content is a string or a list of parts.
func TestChatRequest(t *testing.T) {
	for _, tc := range []struct {
		name, body    string
		toolOut, user string
		tools         int
	}{
		{name: "plain prompt", body: `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`,
			user: "hi"},
		{name: "parts", body: `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"tools":[{},{}]}`,
			user: "ab", tools: 2},
		{name: "tool result last", body: `{"messages":[{"role":"user","content":"run"},{"role":"assistant","content":""},{"role":"tool","content":"hi\n"}]}`,
			toolOut: "hi\n", user: "run"},
		{name: "empty tool result", body: `{"messages":[{"role":"user","content":"run"},{"role":"tool","content":""}]}`,
			toolOut: "(empty)", user: "run"},
		{name: "tool result not last", body: `{"messages":[{"role":"tool","content":"old"},{"role":"user","content":"next"}]}`,
			user: "next"},
		{name: "no messages", body: `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req ChatRequest
			if err := json.Unmarshal([]byte(tc.body), &req); err != nil {
				t.Fatal(err)
			}
			if got := req.ToolOutput(); got != tc.toolOut {
				t.Errorf("ToolOutput = %q, want %q", got, tc.toolOut)
			}
			if got := req.UserText(); got != tc.user {
				t.Errorf("UserText = %q, want %q", got, tc.user)
			}
			if len(req.Tools) != tc.tools {
				t.Errorf("%d tools, want %d", len(req.Tools), tc.tools)
			}
		})
	}
}

// Answer counts the scenario's attempt, logs the request with its status
// and sets the reply's headers; an error reply is written with its body
// and not streamed.
func TestAnswer(t *testing.T) {
	s, err := Listen("test fake", map[string]ScenarioFunc{
		DefaultScenario: Always(Reply{Text: "hi"}),
		"fail":          FailThen(1, Reply{Status: 429, ErrorBody: `{"error":"slow down"}`, Header: map[string]string{"retry-after": "1"}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for _, tc := range []struct {
		scenario   string
		wantStream bool
		wantN      int
		wantCode   int
		wantBody   string
		wantRetry  string
	}{
		{scenario: "fail", wantN: 1, wantCode: 429, wantBody: `{"error":"slow down"}`, wantRetry: "1"},
		{scenario: "fail", wantN: 2, wantStream: true, wantCode: 200},
		{scenario: "unknown", wantN: 1, wantStream: true, wantCode: 200},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		rep, n, stream := Answer(s, w, r, Entry{Scenario: tc.scenario, ToolOutput: "out", UserText: "u"})
		if stream != tc.wantStream || n != tc.wantN || w.Code != tc.wantCode || w.Body.String() != tc.wantBody ||
			w.Header().Get("retry-after") != tc.wantRetry {
			t.Errorf("%s: stream %v, attempt %d, %d %q retry-after %q; want %v, %d, %d %q %q", tc.scenario,
				stream, n, w.Code, w.Body, w.Header().Get("retry-after"), tc.wantStream, tc.wantN, tc.wantCode, tc.wantBody, tc.wantRetry)
		}
		if tc.wantStream && rep.Text == "" {
			t.Errorf("%s: streamed reply %+v has no text", tc.scenario, rep)
		}
	}
	log := s.Log()
	if len(log) != 3 {
		t.Fatalf("%d requests logged, want 3", len(log))
	}
	want := Entry{Method: "POST", Path: "/v1/chat/completions", Scenario: "fail", Attempt: 1, Status: 429, ToolOutput: "out", UserText: "u"}
	if got := log[0]; got.At.IsZero() || func() Entry { got.At = want.At; return got }() != want {
		t.Errorf("logged %+v, want %+v", log[0], want)
	}
}

// The event stream a fake writes: 200, uncached, each event its name when
// it has one and its JSON data, ended by a blank line in the fake's line
// ending, and the OpenAI end of stream.
func TestSSE(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crlf  bool
		event string
		want  string
	}{
		{name: "data only", want: "data: {\"a\":1}\n\ndata: [DONE]\n\n"},
		{name: "named event", event: "response.created", want: "event: response.created\ndata: {\"a\":1}\n\ndata: [DONE]\n\n"},
		{name: "crlf", crlf: true, want: "data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			e := StartSSE(w, tc.crlf)
			e.Send(tc.event, map[string]int{"a": 1})
			e.Done()
			if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream" || w.Header().Get("Cache-Control") != "no-cache" {
				t.Errorf("status %d, headers %v; want 200, an uncached event stream", w.Code, w.Header())
			}
			if got := w.Body.String(); got != tc.want {
				t.Errorf("stream %q, want %q", got, tc.want)
			}
			if !w.Flushed {
				t.Error("events were not flushed")
			}
		})
	}
}

// Break does nothing for a reply that neither stalls nor cuts; a cut is a
// break (the recorder cannot be hijacked, so nothing is dropped); a stall
// holds until the server closes.
func TestBreak(t *testing.T) {
	s, err := Listen("test fake", map[string]ScenarioFunc{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Break(httptest.NewRecorder(), false, false) {
		t.Error("Break reported a break for a plain reply")
	}
	if !s.Break(httptest.NewRecorder(), false, true) {
		t.Error("a cut was not reported as a break")
	}
	done := make(chan bool)
	go func() { done <- s.Break(httptest.NewRecorder(), true, false) }()
	s.Close()
	if !<-done {
		t.Error("a stall was not reported as a break")
	}
}
