//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/claudeterm"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// The real binary finds a Claude Code session started in a terminal by
// itself: it is in `ls --json` with "source":"observed" within a second of
// its session file appearing, and follows its turn as the transcript grows.
func TestTerminalSessionAppearsInLs(t *testing.T) {
	t.Parallel()
	h := newAppE2E(t, `{"turns": [[]]}`)
	cfg := testdir.Short(t, "cc")
	h.env = append(h.env, "CLAUDE_CONFIG_DIR="+cfg)
	h.start()

	cli := exec.Command("sleep", "120") // stands for the interactive CLI's process
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Process.Kill(); cli.Wait() })
	f := claudeterm.SessionFile{PID: cli.Process.Pid, SessionID: "sid-e2e", Cwd: h.work, StartedAt: time.Now().UnixMilli(),
		Kind: "interactive", Entrypoint: "cli", Status: "idle", Version: "2.1.328", Name: "from the terminal"}
	write := func(path string, b []byte) {
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	register := func() {
		b, _ := json.Marshal(f)
		write(filepath.Join(cfg, "sessions", fmt.Sprintf("%d.json", f.PID)), b)
	}
	observed := func(limit time.Duration, what string, ok func(map[string]any) bool) (map[string]any, time.Duration) {
		start := time.Now()
		for {
			var list []map[string]any
			if err := json.Unmarshal([]byte(h.mustCLI("ls", "--json")), &list); err != nil {
				t.Fatal(err)
			}
			for _, s := range list {
				if s["source"] == "observed" && ok(s) {
					return s, time.Since(start)
				}
			}
			if time.Since(start) > limit {
				t.Fatalf("no observed session %s within %s: %v", what, limit, list)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	appeared := time.Now()
	register()
	s, _ := observed(time.Second, "listed", func(s map[string]any) bool { return s["pid"] == float64(f.PID) })
	t.Logf("listed %s after the session file appeared", time.Since(appeared).Round(time.Millisecond))
	if s["name"] != "from the terminal" || s["agent"] != "claude" || s["state"] != sessions.Idle.String() {
		t.Fatalf("listed %v", s)
	}

	tr := filepath.Join(cfg, "projects", claudeterm.Mangle(h.work), "sid-e2e.jsonl")
	write(tr, []byte(`{"type":"user","message":{"role":"user","content":"run the tests"}}`+"\n"))
	f.Status = "busy"
	register()
	observed(time.Second, "working", func(s map[string]any) bool { return s["state"] == "working" && s["in_turn"] == true })
	fh, _ := os.OpenFile(tr, os.O_APPEND|os.O_WRONLY, 0)
	fh.WriteString(`{"type":"assistant","message":{"role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"done"}]}}` + "\n")
	fh.Close()
	f.Status = "idle"
	register()
	observed(time.Second, "in review", func(s map[string]any) bool {
		return s["state"] == "waiting_on_user" && s["wait_reason"] == "review"
	})
	out := h.mustCLI("ls")
	if !strings.Contains(out, "from the terminal (terminal)") {
		t.Fatalf("ls does not mark the terminal session:\n%s", out)
	}
}
