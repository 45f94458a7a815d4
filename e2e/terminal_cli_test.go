//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/claudeterm"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
	"github.com/session-supervisor/session-supervisor/testdir"
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
		// Under make test (E2E_REQUIRED) or CI a missing CLI is a broken
		// set-up, never a silent skip.
		if explicit || os.Getenv("E2E_REQUIRED") != "" || os.Getenv("CI") != "" {
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

// ptyWorld is the app and one real interactive CLI in a pseudo-terminal,
// both on a temporary HOME, the CLI talking only to the fake API.
type ptyWorld struct {
	t        *testing.T
	h        *appE2E
	api      *fakeapi.Server
	home     string
	cmd      *exec.Cmd
	ptmx     *os.File
	scr      *screen
	sessFile string
	fileAt   time.Time
	// What startCLI runs: the binary, in work, with cliEnv.
	bin, work     string
	cliEnv        []string
	noSessionFile bool
}

func startPTYWorld(t *testing.T, args ...string) *ptyWorld {
	return startPTYWorldWith(t, ptyOptions{}, args...)
}

// ptyOptions are what a test changes in the app of a ptyWorld.
type ptyOptions struct {
	// managedClaude, when set, is the app's agents.claude.command, and the
	// app runs with the CLI's hermetic environment (the same HOME and fake
	// API), so a session it launches or resumes talks to the fake API too.
	managedClaude string
	// settings are more key, value pairs set before the app starts.
	settings []string
	// bin, when set, is the CLI run in the terminal instead of the
	// interactive pin; one older than 2.1.224 writes no session file.
	bin string
	// noSessionFile keeps the CLI from registering a session file (its
	// sessions directory is a plain file), as one older than its registry
	// does, so the app can only find it in the process table.
	noSessionFile bool
	// before, when set, runs once the app runs and before the CLI starts
	// (what the CLI reads only at start: its hooks).
	before func(*ptyWorld)
	// cliEnv are KEY=VALUE pairs for the CLI in the terminal, after its
	// hermetic environment; a bare KEY removes that variable.
	cliEnv []string
}

func startPTYWorldWith(t *testing.T, o ptyOptions, args ...string) *ptyWorld {
	bin := o.bin
	if bin == "" {
		bin = interactiveClaude(t)
	}
	home, work := t.TempDir(), t.TempDir()
	api, proxy := claudeTerminalFakes(t, home, work)
	// Short: the CLI's inbox socket lives under it.
	run := testdir.Short(t, "xr")
	if o.noSessionFile {
		os.MkdirAll(filepath.Join(home, ".claude"), 0o700)
		if err := os.WriteFile(filepath.Join(home, ".claude", "sessions"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w := &ptyWorld{t: t, api: api, home: home, scr: &screen{}}
	w.h = newAppE2E(t, `{"turns": [[]]}`)
	w.h.env = append(w.h.env, "HOME="+home)
	if o.managedClaude != "" {
		w.h.env = append(w.h.env, fakeapi.HermeticEnv(home, api.URL(), proxy)...)
		w.h.mustCLI("settings", "set", "agents.claude.command", o.managedClaude)
	}
	for i := 0; i+1 < len(o.settings); i += 2 {
		w.h.mustCLI("settings", "set", o.settings[i], o.settings[i+1])
	}
	w.h.start()
	if o.before != nil {
		o.before(w)
	}

	w.cliEnv = append(fakeapi.HermeticEnv(home, api.URL(), proxy), "TERM=xterm-256color", "XDG_RUNTIME_DIR="+run)
	for _, kv := range o.cliEnv {
		if k, _, set := strings.Cut(kv, "="); !set {
			w.cliEnv = slices.DeleteFunc(w.cliEnv, func(e string) bool { return strings.HasPrefix(e, k+"=") })
			continue
		}
		w.cliEnv = append(w.cliEnv, kv)
	}
	w.bin, w.work, w.noSessionFile = bin, work, o.noSessionFile
	w.startCLI(args...)
	return w
}

// startCLI starts the world's CLI with args in a terminal of its own (a
// pty) in the world's folder, and waits for its session file. The world
// follows it from then on (observed, typeLine): a second call is a second
// terminal, the first one's process left as it is.
func (w *ptyWorld) startCLI(args ...string) {
	t := w.t
	t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Dir = w.work
	cmd.Env = w.cliEnv
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	w.cmd, w.ptmx, w.scr = cmd, ptmx, &screen{}
	go io.Copy(w.scr, ptmx)
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		ptmx.Close()
	})
	w.sessFile = filepath.Join(w.home, ".claude", "sessions", fmt.Sprintf("%d.json", cmd.Process.Pid))
	w.fileAt = time.Now()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if w.noSessionFile {
			break
		}
		if _, err := os.Stat(w.sessFile); err == nil {
			w.fileAt = time.Now()
			break
		}
		if time.Now().After(deadline) {
			w.fail("the CLI wrote no session file in 60 s")
		}
	}
}

// claudeTerminalFakes starts the fake API and its refusing proxy for the
// test's length, and writes under home what an interactive CLI in work
// needs to start without asking (onboarding done, the key and the folder
// trusted).
func claudeTerminalFakes(t *testing.T, home, work string) (*fakeapi.Server, string) {
	t.Helper()
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
	onboarding, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true,
		"customApiKeyResponses":  map[string]any{"approved": []string{"test"}},
		"projects":               map[string]any{work: map[string]any{"hasTrustDialogAccepted": true}},
	})
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), onboarding, 0o600); err != nil {
		t.Fatal(err)
	}
	return api, proxy
}

func (w *ptyWorld) fail(format string, args ...any) {
	w.t.Helper()
	var recs []string
	if m, _ := filepath.Glob(filepath.Join(w.home, ".claude", "projects", "*", "*.jsonl")); len(m) > 0 {
		b, _ := os.ReadFile(m[0])
		for _, l := range strings.Split(string(b), "\n") {
			if i := strings.Index(l, `"tool_result"`); i >= 0 {
				l = l[i:] // what a tool answered, not the record's header
			}
			if len(l) > 160 {
				l = l[:160]
			}
			recs = append(recs, l)
		}
	}
	file, _ := os.ReadFile(w.sessFile)
	w.t.Fatalf(format+"\nthe session file: %s\nthe transcript:\n%s\nthe terminal showed:\n%s",
		append(args, file, strings.Join(recs, "\n"), w.scr.String())...)
}

// observed waits until `ls --json` lists the CLI's session satisfying ok.
func (w *ptyWorld) observed(limit time.Duration, what string, ok func(sessions.Session) bool) sessions.Session {
	w.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s, list, found := terminalSessionOf(w.h, w.cmd.Process.Pid, ok)
		if found {
			return s
		}
		if time.Now().After(deadline) {
			var tl []string
			for _, s := range list {
				_, out, _ := w.h.cli("timeline", s.ID)
				tl = append(tl, out)
			}
			w.fail("no observed session %s within %s: %+v\ntimeline:\n%s", what, limit, list, strings.Join(tl, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// terminalSessionOf is the terminal session of pid that `ls --json` lists
// satisfying ok (found), and the whole list for a failure's message.
func terminalSessionOf(h *appE2E, pid int, ok func(sessions.Session) bool) (s sessions.Session, list []sessions.Session, found bool) {
	h.t.Helper()
	if err := json.Unmarshal([]byte(h.mustCLI("ls", "--json")), &list); err != nil {
		h.t.Fatal(err)
	}
	for _, s := range list {
		if s.Source != sessions.Managed && s.PID == pid && ok(s) {
			return s, list, true
		}
	}
	return sessions.Session{}, list, false
}

// typeLine types text into the terminal, then Enter as a separate write
// (as a person's keystrokes arrive).
func (w *ptyWorld) typeLine(text string) { typeLine(w.t, w.ptmx, text) }

// submitLine types text and Enter, and presses Enter again (as a person
// would) while the session shows no turn within each wait: on a loaded
// machine the CLI can draw the typed line and drop the Enter that came
// before it was ready (seen: "❯ say hello" left in the box for a minute).
func (w *ptyWorld) submitLine(text string) {
	w.t.Helper()
	w.typeLine(text)
	for range 3 {
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			if _, _, ok := terminalSessionOf(w.h, w.cmd.Process.Pid, func(s sessions.Session) bool { return s.TurnGeneration >= 1 }); ok {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		if _, err := w.ptmx.Write([]byte("\r")); err != nil {
			w.t.Fatal(err)
		}
	}
}

// The real interactive CLI, in a pseudo-terminal, against the fake API: the
// app finds it within a second of its session file, follows two typed
// turns to review, and its nudge through the inbox socket starts a third
// turn in the idle session — nothing typed into the terminal.
func TestTerminalRealCLI(t *testing.T) {
	t.Parallel()
	w := startPTYWorld(t)
	w.observed(time.Second, "listed", func(sessions.Session) bool { return true })
	t.Logf("listed %s after the session file appeared", time.Since(w.fileAt).Round(time.Millisecond))

	time.Sleep(time.Second) // the prompt box is drawn
	w.typeLine("say hello")
	s := w.observed(60*time.Second, "in review after the first turn", ce2eReview(1))
	if s.Name != "say hello" {
		t.Errorf("named %q, want the first prompt", s.Name)
	}
	w.typeLine("and again")
	w.observed(60*time.Second, "in review after the second turn", ce2eReview(2))

	// The nudge, through the inbox socket only.
	src := &claudeterm.Source{ConfigDir: filepath.Join(w.home, ".claude")}
	f, err := claudeterm.ReadSessionFile(w.sessFile)
	if err != nil {
		t.Fatal(err)
	}
	es := sessions.ExternalSession{Key: f.Key(), PID: f.PID, AgentSessionID: f.SessionID, StartedAt: f.Started()}
	if !src.CanNudge(es) {
		w.fail("no inbox socket or key for the live session: %+v", f)
	}
	before := w.api.Requests()
	if err := src.Nudge(context.Background(), es, "please continue", false); err != nil {
		t.Fatal(err)
	}
	w.observed(60*time.Second, "in review after the nudged turn", ce2eReview(3))
	log := w.api.Log()
	if w.api.Requests() <= before || !strings.Contains(log[len(log)-1].Request.LastUserText(), "please continue") {
		w.fail("the nudge did not reach the model: %d requests before, %d after", before, w.api.Requests())
	}
}

// A permission prompt is never in the transcript (the tool call is written
// only once approved): the session file says the CLI waits ("waitingFor":
// "permission prompt" on 2.1.328), and the app shows Waiting on user
// (permission) until it is answered in the terminal.
func TestTerminalRealCLIPermission(t *testing.T) {
	t.Parallel()
	w := startPTYWorld(t, "--permission-mode", "default")
	w.observed(time.Second, "listed", func(sessions.Session) bool { return true })
	time.Sleep(time.Second)
	w.typeLine("make the build dir [[scenario:write]]")
	s := w.observed(60*time.Second, "waiting for permission", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitPermission
	})
	t.Logf("evidence: %s", s.Evidence)
	// Answered where it runs ("1. Yes", once the dialog is drawn): the
	// turn goes on and ends in review.
	time.Sleep(time.Second)
	if _, err := w.ptmx.Write([]byte("1")); err != nil {
		t.Fatal(err)
	}
	w.observed(60*time.Second, "in review after the approved tool", ce2eReview(1))
}

// Killed mid-turn (SIGKILL while the model's answer stalls): the session
// file is left behind, the pid is gone, and the app shows Interrupted and
// escalates — no nudge can reach a dead process, and nothing is typed.
func TestTerminalRealCLIKilledMidTurn(t *testing.T) {
	t.Parallel()
	w := startPTYWorld(t)
	w.observed(time.Second, "listed", func(sessions.Session) bool { return true })
	time.Sleep(time.Second)
	w.typeLine("wait for it [[scenario:stall]]")
	w.observed(60*time.Second, "working", func(s sessions.Session) bool { return s.State == sessions.Working && s.InTurn })
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	w.cmd.Wait()
	s := w.observed(30*time.Second, "interrupted and escalated", func(s sessions.Session) bool {
		return s.State == sessions.Interrupted && s.NeedsAttention && !s.ProcessAlive
	})
	if s.Nudge.Attempts != 0 {
		t.Fatalf("nudged a dead process: %+v", s.Nudge)
	}
	t.Logf("evidence: %s", s.Evidence)
}
