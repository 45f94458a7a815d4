package fakeapi

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRealClaudeCLI drives the real Claude Code CLI against the fake and
// pins the behaviour the supervisor relies on (see
// reference/claude-code-measured.md). It runs the scenarios one after the
// other: the CLI is heavy and the machine has two cores.
func TestRealClaudeCLI(t *testing.T) {
	bin := ClaudeBinary(t)
	api := startServer(t)
	proxyURL, refused := refusingProxy(t)
	t.Cleanup(func() {
		egress := refused()
		// Logged, not failed: the proxy already keeps such traffic on the
		// host, and a new CLI version adding a call should not break tests.
		t.Logf("requests the proxy refused (attempts to leave loopback): %d %v", len(egress), egress)
	})
	h := &e2e{bin: bin, api: api, proxyURL: proxyURL}

	t.Run("text", func(t *testing.T) {
		r := h.run(t, "[[scenario:text]] hi", nil, nil)
		want := []string{"system/init", "assistant(text)", "result(success is_error=false status=<nil> terminal=completed)"}
		if !slices.Equal(r.seq, want) {
			t.Errorf("events %v, want %v", r.seq, want)
		}
		if res := r.result(); res == nil || res["is_error"] != false || res.str("result") != DoneText || r.exitCode != 0 {
			t.Errorf("result %v, exit %d", res, r.exitCode)
		}
		if len(r.requests) != 1 || r.requests[0].Path != "/v1/messages" || !r.requests[0].Stream {
			t.Errorf("requests %+v, want one streaming messages call", r.requests)
		}
	})

	t.Run("tool", func(t *testing.T) {
		r := h.run(t, "[[scenario:tool]] run it", nil, nil)
		var toolUse, toolResult bool
		for _, e := range r.events {
			if e.str("type") == "assistant" && slices.Contains(e.contentTypes(), "tool_use") {
				toolUse = true
			}
			if e.str("type") == "user" && slices.Contains(e.contentTypes(), "tool_result") {
				c := e.message()["content"].([]any)[0].(map[string]any)
				toolResult = c["content"] == "hi" && c["is_error"] == false
			}
		}
		res := r.result()
		if !toolUse || !toolResult || res == nil || res["is_error"] != false || res.str("result") != ToolDoneText || r.exitCode != 0 {
			t.Errorf("tool_use %v, tool_result hi %v, result %v, exit %d", toolUse, toolResult, res, r.exitCode)
		}
		if !slices.Equal(r.statuses(), []int{200, 200}) {
			t.Errorf("statuses %v", r.statuses())
		}
	})

	t.Run("429then_ok", func(t *testing.T) {
		r := h.run(t, "[[scenario:429then_ok]] hi", nil, nil)
		if n := r.count("system/api_retry(429 rate_limit)"); n != 2 {
			t.Errorf("%d api_retry lines, want 2: %v", n, r.seq)
		}
		if res := r.result(); res == nil || res["is_error"] != false || res.str("result") != DoneText || r.exitCode != 0 {
			t.Errorf("result %v, exit %d", res, r.exitCode)
		}
		if !slices.Equal(r.statuses(), []int{429, 429, 200}) {
			t.Errorf("statuses %v", r.statuses())
		}
	})

	t.Run("too_long", func(t *testing.T) {
		r := h.run(t, "[[scenario:too_long]] hi", nil, nil)
		res := r.result()
		if res == nil || res["is_error"] != true || res.str("terminal_reason") != "prompt_too_long" ||
			res["api_error_status"] != 400.0 || r.exitCode != 1 {
			t.Errorf("result %v, exit %d", res, r.exitCode)
		}
	})

	t.Run("401", func(t *testing.T) {
		r := h.run(t, "[[scenario:401]] hi", nil, nil)
		res := r.result()
		if res == nil || res["is_error"] != true || res["api_error_status"] != 401.0 || r.exitCode != 1 {
			t.Errorf("result %v, exit %d", res, r.exitCode)
		}
	})

	// Every request cut, the non-streaming fallback too: the CLI's own
	// retries (2 under HermeticEnv) run out and it reports a connection
	// error with no HTTP status, the line the supervisor classifies as a
	// network failure (issue 15).
	t.Run("cut", func(t *testing.T) {
		r := h.run(t, "[[scenario:cut]] hi", nil, nil)
		// 2 retries of the streaming request; once a stream broke mid-way
		// the non-streaming fallback gets 2 of its own.
		if n := r.count("system/api_retry(<nil> unknown)"); n < 2 || n > 4 {
			t.Errorf("%d api_retry lines with no status, want 2 to 4: %v", n, r.seq)
		}
		res := r.result()
		text := res.str("result")
		if res == nil || res["is_error"] != true || res["api_error_status"] != nil || r.exitCode != 1 ||
			!strings.Contains(text, "ECONNRESET") ||
			!strings.Contains(text, "Unable to connect to API") && !strings.Contains(text, "Connection to the API was lost") {
			t.Errorf("result %v, exit %d", res, r.exitCode)
		}
		// A turn takes 3 to 6 requests: cut6then_ok outlasts one turn.
		if n := len(r.requests); n < 3 || n > CutThenOKCuts {
			t.Errorf("%d requests in one failed turn, want 3 to %d", n, CutThenOKCuts)
		}
		for _, e := range r.requests {
			if !e.Cut {
				t.Errorf("request %+v was not cut", e)
			}
		}
	})

	// The scenarios below go beyond the basic contract; they check the
	// fake's multi-request flows against the real CLI.

	t.Run("stall_interrupt_resume", func(t *testing.T) {
		results := 0
		r := h.run(t, "[[scenario:stall]] go", nil, func(e cliEvent, c *stdinCtl) {
			switch e.str("type") {
			case "system":
				if e.str("subtype") != "init" || results > 0 {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := api.Wait(ctx, func(l []Entry) bool {
					return len(l) > 0 && l[len(l)-1].Scenario == "stall"
				}); err != nil {
					t.Errorf("stalled request never arrived: %v", err)
				}
				c.send(t, map[string]any{"type": "control_request", "request_id": "int-1",
					"request": map[string]string{"subtype": "interrupt"}})
			case "result":
				results++
				if results == 1 {
					c.prompt(t, ResumeMarker+" continue")
				} else {
					c.close()
				}
			}
		})
		var results2 []cliEvent
		for _, e := range r.events {
			if e.str("type") == "result" {
				results2 = append(results2, e)
			}
		}
		if len(results2) != 2 || results2[0].str("subtype") != "error_during_execution" ||
			results2[0].str("terminal_reason") != "aborted_streaming" || results2[1]["is_error"] != false ||
			results2[1].str("result") != DoneText || r.exitCode != 0 {
			t.Errorf("results %v, exit %d", results2, r.exitCode)
		}
	})

	t.Run("write_permission_allowed", func(t *testing.T) {
		var dir string
		r := h.run(t, "[[scenario:write]] make it", []string{"--permission-prompt-tool", "stdio"}, func(e cliEvent, c *stdinCtl) {
			switch e.str("type") {
			case "system":
				if e.str("subtype") == "init" {
					dir = e.str("cwd")
				}
			case "control_request":
				req, _ := e["request"].(map[string]any)
				if req["subtype"] != "can_use_tool" {
					return
				}
				c.send(t, map[string]any{"type": "control_response", "response": map[string]any{
					"subtype": "success", "request_id": e.str("request_id"),
					"response": map[string]any{"behavior": "allow", "updatedInput": req["input"]}}})
			case "result":
				c.close()
			}
		})
		if r.count("control_request(can_use_tool)") != 1 {
			t.Errorf("no permission request: %v", r.seq)
		}
		if res := r.result(); res == nil || res.str("result") != WriteDoneText || res["is_error"] != false {
			t.Errorf("result %v", res)
		}
		if _, err := os.Stat(filepath.Join(dir, "build", "out.txt")); err != nil {
			t.Errorf("the allowed command did not run: %v", err)
		}
	})

	t.Run("compact", func(t *testing.T) {
		results := 0
		r := h.run(t, "[[scenario:compact]] first", nil, func(e cliEvent, c *stdinCtl) {
			if e.str("type") != "result" {
				return
			}
			results++
			switch results {
			case 1:
				c.prompt(t, "second")
			case 2:
				c.prompt(t, "/compact")
			case 3:
				c.prompt(t, "after compaction")
			default:
				c.close()
			}
		})
		if !slices.Contains(r.seq, "system/status(compact_result=success)") {
			t.Errorf("no successful compaction: %v", r.seq)
		}
		// The request after compaction must still be in the scenario: the
		// summary carried the marker.
		last := r.requests[len(r.requests)-1]
		if last.Scenario != "compact" || IsCompaction(last.Request) {
			t.Errorf("request after compaction: scenario %q, compaction %v", last.Scenario, IsCompaction(last.Request))
		}
		if res := r.result(); res == nil || res["is_error"] != false || res.str("result") != DoneText || r.exitCode != 0 {
			t.Errorf("result %v, exit %d", res, r.exitCode)
		}
	})

	for _, e := range api.Log() {
		if e.Path != "/v1/messages" {
			t.Errorf("unexpected request %s %s (%d)", e.Method, e.Path, e.Status)
		}
	}
}
