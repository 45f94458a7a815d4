//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/codex/fakeapi"
)

// codexScreen keeps what the TUI drew and answers its cursor-position
// query (ESC [ 6 n), which a real terminal answers and the TUI waits for.
type codexScreen struct {
	mu   sync.Mutex
	buf  []byte
	ptmx *os.File
}

func (s *codexScreen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes.Contains(p, []byte("\x1b[6n")) {
		_, _ = s.ptmx.Write([]byte("\x1b[1;1R"))
	}
	s.buf = append(s.buf, p...)
	if len(s.buf) > 64<<10 {
		s.buf = s.buf[len(s.buf)-64<<10:]
	}
	return len(p), nil
}

func (s *codexScreen) has(sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Contains(s.buf, []byte(sub))
}

func (s *codexScreen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buf
	if len(b) > 4<<10 {
		b = b[len(b)-4<<10:]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' {
			return ' '
		}
		return r
	}, string(b))
}

// The real interactive Codex 0.171.0 (the TUI) in a pseudo-terminal, on a
// temporary CODEX_HOME against the fake Responses API: the app finds it in
// the process table, pairs it with the rollout it writes at the first
// prompt, and follows the turn (working, its command, then waiting on the
// user for review), as `ls --json` shows.
//
// --no-daemon: by default the 0.171.0 TUI installs an app-server daemon
// into CODEX_HOME/packages (424 MB copied on the first run) that writes the
// rollouts and outlives the TUI (re-parented to init). The discovery is the
// same either way (the TUI process, its cwd and start, the rollout by cwd
// and time; without the daemon the TUI also holds its rollout open, which
// pairs it exactly); the test spares the copy and the stray daemon.
func TestTerminalCodexRealTUI(t *testing.T) {
	h := codexE2EStart(t, fakeapi.Config{})
	codexBin := fakeapi.CodexBinary(t)
	codexHome := filepath.Join(h.home, ".codex")
	// Trusted beforehand: the trust prompt is answered in the config.
	trust := fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n", h.work)
	fh, err := os.OpenFile(filepath.Join(codexHome, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(trust); err != nil {
		t.Fatal(err)
	}
	fh.Close()

	cmd := exec.Command(codexBin, "--no-daemon")
	cmd.Dir = h.work
	cmd.Env = append(append([]string{}, h.env...), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	scr := &codexScreen{ptmx: ptmx}
	go func() { _, _ = ptmx.WriteTo(scr) }()
	t.Cleanup(func() {
		// The whole terminal session: the wrapper and the native TUI
		// (pty.Start made the wrapper a session and group leader).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		ptmx.Close()
	})
	// The npm `codex` is a Node wrapper: the session is its native child.
	var native int
	fail := func(format string, args ...any) {
		t.Helper()
		var tl string
		for _, s := range h.ls() {
			tl += fmt.Sprintf("%+v\n", s)
		}
		var roll []string
		m, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "*.jsonl"))
		for _, p := range m {
			b, _ := os.ReadFile(p)
			for _, l := range strings.Split(string(b), "\n") {
				roll = append(roll, l[:min(len(l), 160)])
			}
		}
		t.Fatalf(format+"\nsessions:\n%s\nrollouts:\n%s\nthe terminal showed:\n%s", append(args, tl, strings.Join(roll, "\n"), scr.String())...)
	}
	observed := func(limit time.Duration, what string, ok func(sessions.Session) bool) sessions.Session {
		t.Helper()
		for deadline := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
			for _, s := range h.ls() {
				if s.Source == sessions.Observed && s.Agent == "codex" && (native == 0 || s.PID == native) && ok(s) {
					return s
				}
			}
			if time.Now().After(deadline) {
				fail("no observed Codex session %s within %s", what, limit)
			}
		}
	}
	start := time.Now()
	s := observed(30*time.Second, "listed", func(s sessions.Session) bool { return s.PID != cmd.Process.Pid })
	native = s.PID
	t.Logf("listed after %s: pid %d (the wrapper is %d), %s", time.Since(start).Round(time.Millisecond), native, cmd.Process.Pid, s.Evidence)
	if s.Cwd != h.work || s.State != sessions.Idle || s.AgentSessionID != "" {
		fail("before the first prompt: %+v", s)
	}
	for deadline := time.Now().Add(30 * time.Second); !scr.has("state=idle"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			fail("the TUI never said it was ready")
		}
	}
	if _, err := ptmx.Write([]byte("run it [[scenario:tool]]")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // keystrokes, then Enter, as a person types
	if _, err := ptmx.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	// The command runs a second (sleep 1; echo hi): seen working on it.
	w := observed(30*time.Second, "working", func(s sessions.Session) bool { return s.State == sessions.Working && s.InTurn })
	t.Logf("working: %s", w.Evidence)
	r := observed(30*time.Second, "waiting on the user for review", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.TurnGeneration == 1
	})
	m, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*-"+r.AgentSessionID+".jsonl"))
	if r.AgentSessionID == "" || len(m) != 1 || r.Name != "run it [[scenario:tool]]" {
		fail("the thread id %q names no rollout (%v), or the name %q is not the prompt", r.AgentSessionID, m, r.Name)
	}
	// The command really ran: its output went back to the model.
	if reqs := h.api.Requests("tool"); len(reqs) == 0 || !strings.Contains(reqs[len(reqs)-1].ToolOutput, "hi") {
		fail("the fake saw %+v, want the command's output last", reqs)
	}
	t.Logf("evidence: %s (%s after the start)", r.Evidence, time.Since(start).Round(time.Millisecond))
}
