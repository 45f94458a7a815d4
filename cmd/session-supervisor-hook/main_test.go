package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/testdir"
)

const event = `{"session_id":"s1","transcript_path":"/t/s1.jsonl","cwd":"/w","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false}`

var (
	buildOnce sync.Once
	hookBin   string
	buildErr  error
)

// TestMain removes the program built builds when the tests end (after
// m.Run, not deferred: os.Exit runs no deferred call).
func TestMain(m *testing.M) {
	code := m.Run()
	if hookBin != "" {
		if err := os.RemoveAll(filepath.Dir(hookBin)); err != nil {
			fmt.Fprintln(os.Stderr, "removing the built hook:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// built is this program, built the way `make build` builds it (cgo off),
// once per test binary; TestMain removes it.
func built(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hookbin")
		if err != nil {
			buildErr = err
			return
		}
		hookBin = filepath.Join(dir, "session-supervisor-hook")
		cmd := exec.Command("go", "build", "-o", hookBin, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the hook: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return hookBin
}

// listen is the app's end: it collects what each connection sent.
func listen(t testing.TB) (string, <-chan []byte) {
	t.Helper()
	path, l := appSocket(t)
	got := make(chan []byte, 1024)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				got <- b
			}()
		}
	}()
	return path, got
}

func run(t testing.TB, bin string, args []string, stdin string) (code int, out string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), buf.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, buf.String()
}

// The hook forwards the event when the app listens, and in every other
// case still exits 0 at once, printing nothing.
func TestHookAlwaysExitsZeroSilently(t *testing.T) {
	bin := built(t)
	socket, got := listen(t)
	dead := filepath.Join(t.TempDir(), "gone.sock")
	notSocket := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notSocket, nil, 0o600)
	cases := []struct {
		name    string
		args    []string
		stdin   string
		forward bool
	}{
		{"app listening", []string{"--socket", socket}, event, true},
		{"app down: no socket", []string{"--socket", dead}, event, false},
		{"not a socket", []string{"--socket", notSocket}, event, false},
		{"no arguments", nil, event, false},
		{"empty stdin", []string{"--socket", dead}, "", false},
		{"a huge event", []string{"--socket", dead}, strings.Repeat("x", 3<<20), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, out := run(t, bin, tc.args, tc.stdin)
			if code != 0 || out != "" {
				t.Fatalf("exit %d, output %q", code, out)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("took %s", d)
			}
			if tc.forward {
				select {
				case b := <-got:
					if string(b) != tc.stdin {
						t.Fatalf("forwarded %q", b)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("nothing forwarded")
				}
			}
		})
	}
}

// An app that accepts but never reads cannot hold the hook past its
// deadline.
func TestHookGivesUpOnAStuckApp(t *testing.T) {
	path, _ := appSocket(t)
	start := time.Now()
	// Larger than any socket buffer: the write blocks until the deadline.
	forward([]string{"--socket", path}, strings.NewReader(strings.Repeat("x", maxEvent)))
	if d := time.Since(start); d > deadline+time.Second {
		t.Fatalf("held for %s", d)
	}
}

// Latency: what one event costs the CLI with each form of hook, p50 and
// p99 over b.N runs (go test -run '^$' -bench Hook ./cmd/session-supervisor-hook).
func report(b *testing.B, samples []time.Duration) {
	slices.Sort(samples)
	pct := func(p float64) float64 {
		return float64(samples[int(float64(len(samples)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

func benchExec(b *testing.B, name string, args ...string) {
	samples := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		cmd := exec.Command(name, args...)
		cmd.Stdin = strings.NewReader(event)
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start))
	}
	report(b, samples)
}

// The hook spawned directly, the app listening.
func BenchmarkHookExecAppUp(b *testing.B) {
	bin := built(b)
	socket, got := listen(b)
	go func() {
		for range got {
		}
	}()
	benchExec(b, bin, "--socket", socket)
}

// The hook spawned directly, the app down.
func BenchmarkHookExecAppDown(b *testing.B) {
	benchExec(b, built(b), "--socket", filepath.Join(b.TempDir(), "none.sock"))
}

// The hook as the CLI runs a command hook: through a shell.
func BenchmarkHookExecViaShell(b *testing.B) {
	bin := built(b)
	socket, got := listen(b)
	go func() {
		for range got {
		}
	}()
	benchExec(b, "bash", "-c", fmt.Sprintf("'%s' --socket '%s'", bin, socket))
}

// For comparison, the other candidate: an HTTP hook, a POST to a loopback
// listener (no spawn; a new connection each time).
func BenchmarkHookHTTPLoopback(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) })}
	go srv.Serve(l)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	url := "http://" + l.Addr().String() + "/hook"
	samples := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		resp, err := client.Post(url, "application/json", strings.NewReader(event))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		samples = append(samples, time.Since(start))
	}
	report(b, samples)
}

// The hook stays connected after its event until the app closes (the app
// checks, from the process tree, that the sender runs under the session it
// names, which it can do only while the sender lives): after the event's
// end the app can still write to it.
func TestHookWaitsForTheAppToRead(t *testing.T) {
	bin := built(t)
	path, l := appSocket(t)
	verdict := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			verdict <- err
			return
		}
		defer c.Close()
		if _, err := io.ReadAll(c); err != nil { // to the hook's end of input
			verdict <- err
			return
		}
		_, err = c.Write([]byte("ok")) // fails if the hook has gone
		verdict <- err
	}()
	if code, out := run(t, bin, []string{"--socket", path}, event); code != 0 || out != "" {
		t.Fatalf("exit %d, output %q", code, out)
	}
	select {
	case err := <-verdict:
		if err != nil {
			t.Errorf("the hook was gone when the app had read its event: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the app never saw the end of the event")
	}
}

// appSocket is a socket the test plays the app on, in a short directory
// removed with the test.
func appSocket(t testing.TB) (string, net.Listener) {
	t.Helper()
	dir := testdir.Short(t, "hk")
	path := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return path, l
}
