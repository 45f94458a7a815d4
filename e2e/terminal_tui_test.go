//go:build linux

package e2e

// What the terminal suites of the agents with a TUI (Codex, Copilot,
// Gemini) share: one real interactive CLI in a pseudo-terminal next to the
// app, on the hermetic environment of the agent's managed suite (its fake
// API, its HOME), observed by the app from outside.

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
)

// tuiScreen keeps what the TUI drew and answers its cursor-position query
// (ESC [ 6 n), which a real terminal answers and a TUI may wait for.
type tuiScreen struct {
	mu   sync.Mutex
	buf  []byte
	ptmx *os.File
}

func (s *tuiScreen) Write(p []byte) (int, error) {
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

func (s *tuiScreen) has(sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Contains(s.buf, []byte(sub))
}

func (s *tuiScreen) String() string {
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

// tuiRecords is what a failing TUI test shows of the CLI's own records of
// its sessions: the files matching glob under the test's HOME, each line
// cut to width.
type tuiRecords struct {
	name  string // "rollouts", "events", "chat files"
	glob  string // relative to HOME
	width int
}

// agentTUI is the app and one real interactive agent CLI in a
// pseudo-terminal.
type agentTUI struct {
	t     *testing.T
	app   *agentE2E
	label string // the agent as a message names it: "Codex"
	cmd   *exec.Cmd
	ptmx  *os.File
	scr   *tuiScreen
	// pid is the session's process once listed: the npm package's
	// launcher (the terminal's process) runs it as a child.
	pid     int
	start   time.Time
	poll    time.Duration // between two looks at `ls --json`
	records tuiRecords
}

// startAgentTUI runs cmd in a pseudo-terminal in the app's working
// directory with the app's hermetic environment and env after it; the
// whole terminal session is killed when the test ends.
func startAgentTUI(t *testing.T, h *agentE2E, label string, poll time.Duration, rec tuiRecords, cmd *exec.Cmd, env ...string) *agentTUI {
	t.Helper()
	w := &agentTUI{t: t, app: h, label: label, cmd: cmd, poll: poll, records: rec}
	cmd.Dir = h.work
	cmd.Env = append(append(append([]string{}, h.env...), "TERM=xterm-256color"), env...)
	w.start = time.Now()
	var err error
	w.ptmx, err = pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	w.scr = &tuiScreen{ptmx: w.ptmx}
	go func() { _, _ = w.ptmx.WriteTo(w.scr) }()
	t.Cleanup(func() {
		// The whole terminal session: the launcher and the TUI it runs
		// (pty.Start made the launcher a session and group leader).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		w.ptmx.Close()
	})
	return w
}

// listed waits until the app lists the TUI's session (its process, not
// the launcher's), remembers its pid and logs how long it took.
func (w *agentTUI) listed(limit time.Duration) sessions.Session {
	w.t.Helper()
	s := w.observed(limit, "listed", func(s sessions.Session) bool { return s.PID != w.cmd.Process.Pid })
	w.pid = s.PID
	w.t.Logf("listed after %s: pid %d (the launcher is %d), session %q, %s",
		time.Since(w.start).Round(time.Millisecond), w.pid, w.cmd.Process.Pid, s.AgentSessionID, s.Evidence)
	return s
}

// drawn waits until the terminal showed sub.
func (w *agentTUI) drawn(limit time.Duration, sub, what string) {
	w.t.Helper()
	for deadline := time.Now().Add(limit); !w.scr.has(sub); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			w.fail("the TUI never %s", what)
		}
	}
}

// pressUntil presses key in the terminal until the TUI's session satisfies
// ok, again every while it does not (a slow machine may not have taken the
// last press yet), and fails with what after limit.
func (w *agentTUI) pressUntil(key string, every, limit time.Duration, ok func(sessions.Session) bool, what string) {
	w.t.Helper()
	for deadline := time.Now().Add(limit); ; {
		if _, err := w.ptmx.Write([]byte(key)); err != nil {
			w.t.Fatal(err)
		}
		if w.waitFor(every, ok) {
			return
		}
		if time.Now().After(deadline) {
			w.fail("%s", what)
		}
	}
}

// authEscalated waits until the session its 401 scenario failed on auth is
// escalated once the auth wait passed (the continue cannot reach a terminal:
// no inbox), with evidence that says so (holds why) and no nudge sent to
// the model.
func (w *agentTUI) authEscalated(limit time.Duration, why string) {
	w.t.Helper()
	s := w.observed(limit, "escalated after the auth wait", func(s sessions.Session) bool {
		return s.NeedsAttention && s.Failure.Kind == sessions.Auth
	})
	if !strings.Contains(s.Evidence, why) || s.Nudge.Attempts != 0 || w.app.nudged("401") {
		w.fail("escalated without saying why, or nudged: %s %+v", s.Evidence, s.Nudge)
	}
	w.t.Logf("evidence: %s", s.Evidence)
}

// fail ends the test with what the app lists, the CLI's records and what
// the terminal showed.
func (w *agentTUI) fail(format string, args ...any) {
	w.t.Helper()
	var tl string
	for _, s := range w.app.ls() {
		tl += fmt.Sprintf("%+v\n", s)
	}
	var recs []string
	m, _ := filepath.Glob(filepath.Join(w.app.home, w.records.glob))
	for _, p := range m {
		b, _ := os.ReadFile(p)
		for _, l := range strings.Split(string(b), "\n") {
			recs = append(recs, l[:min(len(l), w.records.width)])
		}
	}
	w.t.Fatalf(format+"\nsessions:\n%s\n%s:\n%s\nthe terminal showed:\n%s", append(args, tl, w.records.name, strings.Join(recs, "\n"), w.scr.String())...)
}

// observed waits until `ls --json` lists the TUI's session satisfying ok.
func (w *agentTUI) observed(limit time.Duration, what string, ok func(sessions.Session) bool) sessions.Session {
	w.t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(w.poll) {
		for _, s := range w.app.ls() {
			if s.Source == sessions.Observed && s.Agent == w.app.agent.name && (w.pid == 0 || s.PID == w.pid) && ok(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			w.fail("no observed %s session %s within %s", w.label, what, limit)
		}
	}
}

// waitFor reports whether the TUI's session satisfies ok within limit.
func (w *agentTUI) waitFor(limit time.Duration, ok func(sessions.Session) bool) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(w.poll) {
		for _, s := range w.app.ls() {
			if s.Source == sessions.Observed && s.PID == w.pid && ok(s) {
				return true
			}
		}
	}
	return false
}

// typeLine types text, then Enter as a separate write, as a person types.
func (w *agentTUI) typeLine(text string) { typeLine(w.t, w.ptmx, text) }

// typeLine types text into a terminal, then Enter as a separate write (as
// a person's keystrokes arrive).
func typeLine(t *testing.T, ptmx *os.File, text string) {
	t.Helper()
	if _, err := ptmx.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := ptmx.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
}
