//go:build unix

package opencode

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// The test binary doubles as a scripted `opencode serve` when
// FAKE_OPENCODE_MODE is set, for what the real CLI cannot be made to do on
// demand: "exit" fails before it listens, "drop" ends its event stream and
// keeps running, "slow" never answers a prompt.
func TestMain(m *testing.M) { agenttest.Main(m, "FAKE_OPENCODE_MODE", fakeServe) }

func fakeServe(mode string) {
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "boom: no config")
		os.Exit(3)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(4)
	}
	password := os.Getenv("OPENCODE_SERVER_PASSWORD")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /event", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"type\":\"server.connected\",\"properties\":{}}\n\n")
		w.(http.Flusher).Flush()
		if mode == "drop" {
			time.Sleep(300 * time.Millisecond)
			return // the stream ends; the server goes on
		}
		<-r.Context().Done()
	})
	mux.HandleFunc("POST /session", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"id":"ses_fake1"}`)
	})
	mux.HandleFunc("POST /session/{id}/prompt_async", func(w http.ResponseWriter, r *http.Request) {
		if mode == "slow" {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != serverUser || p != password || password == "" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
	fmt.Printf("opencode server listening on http://%s\n", ln.Addr())
	_ = http.Serve(ln, auth)
}

func startFake(t *testing.T, mode string, o ProcessOptions) *Process {
	t.Helper()
	o.Command = agenttest.Self(t)
	o.Env = append(o.Env, "FAKE_OPENCODE_MODE="+mode)
	o.Cwd = t.TempDir()
	return agenttest.Started(t, Start, o)
}

// drain reads the events until the channel closes (or fails after a minute).
func drain(t *testing.T, p *Process) []sessions.Event {
	t.Helper()
	return agenttest.Collect(t, p, time.Minute, nil)
}

// TestProcessLifecycle: how the process ends, for each way a server can
// go wrong.
func TestProcessLifecycle(t *testing.T) {
	t.Run("exits before listening", func(t *testing.T) {
		p := startFake(t, "exit", ProcessOptions{})
		if evs := drain(t, p); len(evs) != 0 {
			t.Errorf("events %s, want none", kinds(evs))
		}
		code, sig, err := p.Wait()
		if code != 3 || sig != "" || err != nil {
			t.Errorf("wait: %d %q %v, want exit 3", code, sig, err)
		}
		if !strings.Contains(p.StderrTail(), "boom") {
			t.Errorf("stderr %q", p.StderrTail())
		}
		if err := p.SendPrompt("hi"); err == nil || !strings.Contains(err.Error(), "exited before") {
			t.Errorf("prompt: %v, want the start failure", err)
		}
	})
	t.Run("event stream dropped", func(t *testing.T) {
		// A server the app can no longer hear is stopped, so its exit is
		// what the supervisor sees (and a resume starts clean).
		p := startFake(t, "drop", ProcessOptions{})
		evs := drain(t, p)
		if len(evs) != 1 || evs[0].Kind != sessions.EvSessionInit || evs[0].AgentSessionID != "ses_fake1" {
			t.Errorf("events %+v, want the session's init", evs)
		}
		if _, sig, err := p.Wait(); sig != syscall.SIGTERM.String() || err != nil {
			t.Errorf("wait: signal %q err %v, want stopped by SIGTERM", sig, err)
		}
	})
	t.Run("prompt not answered", func(t *testing.T) {
		p := startFake(t, "slow", ProcessOptions{WriteTimeout: 300 * time.Millisecond})
		if ev := <-p.Events(); ev.Kind != sessions.EvSessionInit {
			t.Fatalf("first event %+v, want the session's init", ev)
		}
		start := time.Now()
		err := p.SendPrompt("hi")
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("prompt: %v, want a deadline error (the runtime's input_blocked)", err)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("the prompt waited %s", d)
		}
	})
}
