package fakeapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// e2e runs the real CLI against the fake API through a refusing proxy.
type e2e struct {
	bin      string
	api      *Server
	proxyURL string
}

// cliEvent is one decoded stdout line of the CLI.
type cliEvent map[string]any

func (e cliEvent) str(key string) string {
	s, _ := e[key].(string)
	return s
}

func (e cliEvent) message() map[string]any {
	m, _ := e["message"].(map[string]any)
	return m
}

// contentTypes lists the block types of the event's message content.
func (e cliEvent) contentTypes() []string {
	blocks, _ := e.message()["content"].([]any)
	var out []string
	for _, b := range blocks {
		if m, ok := b.(map[string]any); ok {
			if s, ok := m["type"].(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// label is a compact name of the event for sequence assertions, e.g.
// "system/api_retry(429 rate_limit)" or "result(success is_error=false status=<nil> terminal=completed)".
func (e cliEvent) label() string {
	switch t := e.str("type"); t {
	case "system":
		switch sub := e.str("subtype"); sub {
		case "api_retry":
			return fmt.Sprintf("system/api_retry(%v %s)", e["error_status"], e.str("error"))
		case "status":
			if r := e.str("compact_result"); r != "" {
				return "system/status(compact_result=" + r + ")"
			}
			return "system/status(" + e.str("status") + ")"
		default:
			return "system/" + sub
		}
	case "assistant", "user":
		return t + "(" + strings.Join(e.contentTypes(), ",") + ")"
	case "result":
		status := "<nil>"
		if v, ok := e["api_error_status"]; ok && v != nil {
			status = fmt.Sprint(v)
		}
		return fmt.Sprintf("result(%s is_error=%v status=%s terminal=%s)", e.str("subtype"), e["is_error"], status, e.str("terminal_reason"))
	case "control_request":
		req, _ := e["request"].(map[string]any)
		return fmt.Sprintf("control_request(%v)", req["subtype"])
	default:
		return t
	}
}

// stdinCtl writes stream-json lines to the CLI's stdin.
type stdinCtl struct {
	mu     sync.Mutex
	w      io.WriteCloser
	closed bool
}

func (c *stdinCtl) send(t *testing.T, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		t.Errorf("writing to the CLI: %v", err)
	}
}

func (c *stdinCtl) prompt(t *testing.T, text string) {
	t.Helper()
	c.send(t, map[string]any{"type": "user", "message": map[string]any{
		"role": "user", "content": []map[string]string{{"type": "text", "text": text}}}})
}

func (c *stdinCtl) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.w.Close()
	}
}

// runResult is what one CLI run printed and asked for.
type runResult struct {
	events   []cliEvent
	seq      []string
	exitCode int
	requests []Entry
}

// result is the last result line, or nil.
func (r *runResult) result() cliEvent {
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i].str("type") == "result" {
			return r.events[i]
		}
	}
	return nil
}

func (r *runResult) statuses() []int {
	var out []int
	for _, e := range r.requests {
		if e.Path == "/v1/messages" {
			out = append(out, e.Status)
		}
	}
	return out
}

func (r *runResult) count(label string) int {
	n := 0
	for _, s := range r.seq {
		if s == label {
			n++
		}
	}
	return n
}

// run runs the CLI once in a fresh HOME and working directory. With
// onEvent nil the prompt is a plain -p argument; otherwise stdin speaks
// stream-json, the prompt is the first user message, and onEvent sees every
// stdout event and steers the run (it must close stdin to end it).
func (h *e2e) run(t *testing.T, prompt string, extraArgs []string, onEvent func(cliEvent, *stdinCtl)) *runResult {
	t.Helper()
	home, cwd := t.TempDir(), t.TempDir()
	args := []string{"-p", "--output-format", "stream-json", "--verbose"}
	if onEvent != nil {
		args = append(args, "--input-format", "stream-json")
	}
	args = append(args, extraArgs...)
	if onEvent == nil {
		args = append(args, prompt)
	}
	cmd := exec.Command(h.bin, args...)
	cmd.Dir = cwd
	cmd.Env = HermeticEnv(home, h.api.URL(), h.proxyURL)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	before := len(h.api.Log())
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the CLI: %v", err)
	}
	ctl := &stdinCtl{w: stdin}
	if onEvent == nil {
		ctl.close()
	} else {
		ctl.prompt(t, prompt)
	}
	// A hung CLI must fail the test, not hang it.
	timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()

	r := &runResult{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var e cliEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Errorf("CLI printed a non-JSON line: %q", sc.Text())
			continue
		}
		r.events = append(r.events, e)
		r.seq = append(r.seq, e.label())
		if onEvent != nil {
			onEvent(e, ctl)
		}
	}
	ctl.close()
	err = cmd.Wait()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		r.exitCode = exitErr.ExitCode()
	default:
		t.Fatalf("waiting for the CLI: %v", err)
	}
	r.requests = h.api.Log()[before:]
	t.Logf("%s: %v (exit %d)", prompt, r.seq, r.exitCode)
	if t.Failed() {
		t.Logf("stderr: %s", stderr.String())
	}
	return r
}
