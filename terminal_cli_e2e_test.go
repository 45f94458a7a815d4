//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
	"github.com/session-supervisor/session-supervisor/sessions/claude/terminal"
)

// InteractiveClaudeVersion is the Claude Code release the terminal-session
// test drives interactively: the session registry and the inbox socket need
// 2.1.224 or later, and the pin of the other end-to-end tests (2.1.197)
// predates them. Install it with
// npm install --prefix .cache/claude-interactive @anthropic-ai/claude-code@2.1.328.
const InteractiveClaudeVersion = "2.1.328"

func interactiveClaude(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("CLAUDE_INTERACTIVE_BIN")
	explicit := bin != ""
	if !explicit {
		root, err := fakeapi.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(root, ".cache", "claude-interactive", "node_modules", ".bin", "claude")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("no interactive Claude Code ≥ 2.1.224 at %s (%v): npm install --prefix .cache/claude-interactive "+
			"@anthropic-ai/claude-code@%s, or set CLAUDE_INTERACTIVE_BIN", bin, err, InteractiveClaudeVersion)
		if explicit {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// screen keeps the tail of what the CLI drew, for a failure's diagnostics;
// reading the pty also keeps the CLI from blocking on a full terminal.
type screen struct {
	mu  sync.Mutex
	buf []byte
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	if len(s.buf) > 8<<10 {
		s.buf = s.buf[len(s.buf)-8<<10:]
	}
	return len(p), nil
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' {
			return ' '
		}
		return r
	}, string(s.buf))
}

// The real interactive CLI, in a pseudo-terminal, against the fake API: the
// app finds it within a second of its session file, follows two typed
// turns to review, and its nudge through the inbox socket starts a third
// turn in the idle session — nothing typed into the terminal.
func TestTerminalRealCLI(t *testing.T) {
	bin := interactiveClaude(t)
	api, err := fakeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	proxy, closeProxy, err := fakeapi.StartRefusingProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeProxy)
	home, work := t.TempDir(), t.TempDir()
	// Short: the CLI's inbox socket lives under it.
	run, err := os.MkdirTemp("", "xr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	onboarding, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true,
		"customApiKeyResponses":  map[string]any{"approved": []string{"test"}},
		"projects":               map[string]any{work: map[string]any{"hasTrustDialogAccepted": true}},
	})
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), onboarding, 0o600); err != nil {
		t.Fatal(err)
	}

	h := newAppE2E(t, `{"turns": [[]]}`)
	h.env = append(h.env, "HOME="+home)
	h.start()

	cmd := exec.Command(bin)
	cmd.Dir = work
	cmd.Env = append(fakeapi.HermeticEnv(home, api.URL(), proxy), "TERM=xterm-256color", "XDG_RUNTIME_DIR="+run)
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	scr := &screen{}
	go io.Copy(scr, ptmx)
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		ptmx.Close()
	})
	fail := func(format string, args ...any) {
		t.Helper()
		var recs []string
		if m, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", "*.jsonl")); len(m) > 0 {
			b, _ := os.ReadFile(m[0])
			for _, l := range strings.Split(string(b), "\n") {
				if len(l) > 160 {
					l = l[:160]
				}
				recs = append(recs, l)
			}
		}
		t.Fatalf(format+"\nthe transcript:\n%s\nthe terminal showed:\n%s", append(args, strings.Join(recs, "\n"), scr.String())...)
	}

	sessFile := filepath.Join(home, ".claude", "sessions", fmt.Sprintf("%d.json", cmd.Process.Pid))
	var fileAt time.Time
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sessFile); err == nil {
			fileAt = time.Now()
			break
		}
		if time.Now().After(deadline) {
			fail("the CLI wrote no session file in 60 s")
		}
	}
	observed := func(limit time.Duration, what string, ok func(sessions.Session) bool) sessions.Session {
		t.Helper()
		deadline := time.Now().Add(limit)
		for {
			var list []sessions.Session
			if err := json.Unmarshal([]byte(h.mustCLI("ls", "--json")), &list); err != nil {
				t.Fatal(err)
			}
			for _, s := range list {
				if s.Source == sessions.Observed && s.PID == cmd.Process.Pid && ok(s) {
					return s
				}
			}
			if time.Now().After(deadline) {
				var tl []string
				for _, s := range list {
					_, out, _ := h.cli("timeline", s.ID)
					tl = append(tl, out)
				}
				fail("no observed session %s within %s: %+v\ntimeline:\n%s", what, limit, list, strings.Join(tl, "\n"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if b, err := os.ReadFile(sessFile); err == nil {
		t.Logf("session file: %s", b)
	}
	observed(time.Second, "listed", func(sessions.Session) bool { return true })
	t.Logf("listed %s after the session file appeared", time.Since(fileAt).Round(time.Millisecond))

	typeLine := func(text string) {
		if _, err := ptmx.Write([]byte(text)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if _, err := ptmx.Write([]byte("\r")); err != nil {
			t.Fatal(err)
		}
	}
	review := func(gen int64) func(sessions.Session) bool {
		return func(s sessions.Session) bool {
			return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.TurnGeneration == gen
		}
	}
	time.Sleep(time.Second) // the prompt box is drawn
	typeLine("say hello")
	s := observed(60*time.Second, "in review after the first turn", review(1))
	if s.Name != "say hello" {
		t.Errorf("named %q, want the first prompt", s.Name)
	}
	typeLine("and again")
	observed(60*time.Second, "in review after the second turn", review(2))

	// The nudge, through the inbox socket only.
	src := &terminal.Source{ConfigDir: filepath.Join(home, ".claude")}
	f, err := terminal.ReadSessionFile(sessFile)
	if err != nil {
		t.Fatal(err)
	}
	es := sessions.ExternalSession{Key: f.Key(), PID: f.PID, AgentSessionID: f.SessionID, StartedAt: f.Started()}
	if !src.CanNudge(es) {
		fail("no inbox socket or key for the live session: %+v", f)
	}
	before := api.Requests()
	if err := src.Nudge(context.Background(), es, "please continue", false); err != nil {
		t.Fatal(err)
	}
	observed(60*time.Second, "in review after the nudged turn", review(3))
	log := api.Log()
	if api.Requests() <= before || !strings.Contains(log[len(log)-1].Request.LastUserText(), "please continue") {
		fail("the nudge did not reach the model: %d requests before, %d after", before, api.Requests())
	}
}
