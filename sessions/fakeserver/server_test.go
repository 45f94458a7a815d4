package fakeserver

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type scenario func(n int) string

// stalled is told when a request of the stall scenario holds its stream.
var stalled = make(chan struct{}, 1)

func start(t *testing.T) *Server[scenario] {
	t.Helper()
	s, err := Listen("test fake", map[string]scenario{
		DefaultScenario: func(n int) string { return "default" },
		"stall":         func(n int) string { return "stall" },
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ok", func(w http.ResponseWriter, r *http.Request) {
		body, _ := ReadBody(r)
		n, fn := s.Attempt(Scenario(body))
		if fn(n) == "stall" {
			stalled <- struct{}{}
			s.Stall(nil)
			return
		}
		s.Record(Entry{Method: r.Method, Path: r.URL.Path, Status: http.StatusOK})
		_, _ = io.WriteString(w, fn(n))
	})
	s.Serve(mux, nil)
	t.Cleanup(s.Close)
	return s
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
