//go:build unix

package codex

import (
	"errors"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
	"github.com/session-supervisor/session-supervisor/sessions/codex/fakeapi"
)

// These tests run the real Codex CLI (`make test` installs the pinned one;
// CODEX_BIN overrides) against the fake Responses API on 127.0.0.1, with a
// refusing proxy for anything else.

// realWorld is one test's fake API and hermetic Codex environment.
type realWorld struct {
	bin string
	api *fakeapi.Server
	env []string
	cwd string
}

func newRealWorld(t *testing.T, approvalPolicy string) *realWorld {
	t.Helper()
	return newRealWorldWith(t, fakeapi.Config{ApprovalPolicy: approvalPolicy})
}

// newRealWorldWith is newRealWorld with Codex's configuration spelled out.
func newRealWorldWith(t *testing.T, c fakeapi.Config) *realWorld {
	t.Helper()
	bin := fakeapi.CodexBinary(t)
	api := agenttest.FakeAPI(t, fakeapi.Start)
	proxy := agenttest.Serve(t, fakeapi.StartRefusingProxy)
	home := t.TempDir()
	codexHome := filepath.Join(home, "codex")
	if err := fakeapi.WriteConfig(codexHome, api.URL(), c); err != nil {
		t.Fatal(err)
	}
	return &realWorld{bin: bin, api: api, env: fakeapi.HermeticEnv(home, codexHome, proxy), cwd: t.TempDir()}
}

func (w *realWorld) start(t *testing.T, o ProcessOptions) *Process {
	t.Helper()
	o.Command, o.Env = w.bin, w.env
	if o.Cwd == "" {
		o.Cwd = w.cwd
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 10 * time.Second
	}
	return agenttest.Started(t, Start, o)
}

func kindsOf(events []sessions.Event) string {
	var parts []string
	for _, e := range events {
		if e.Kind != sessions.EvMetrics {
			parts = append(parts, summary(e))
		}
	}
	return strings.Join(parts, ", ")
}

func TestRealPlainReplyThenSecondTurn(t *testing.T) {
	w := newRealWorld(t, "")
	p := w.start(t, ProcessOptions{})
	if p.PID() <= 0 {
		t.Fatalf("pid %d", p.PID())
	}
	// The orphan reaper would know this process for a managed app server.
	// Start returns before the child has exec'd, when its command line can
	// still read empty: wait for it to be readable first.
	var args []string
	for deadline := time.Now().Add(10 * time.Second); len(args) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		args, _ = procscan.Cmdline(p.PID())
	}
	if !isManagedCodex(args) {
		t.Errorf("the real app server (%q) is not recognized as managed", args)
	}
	if err := p.SendPrompt("[[scenario:text]] hi"); err != nil {
		t.Fatal(err)
	}
	seen := agenttest.Until(t, p, "the first turn's end", func(e sessions.Event) bool {
		return e.Kind == sessions.EvTurnCompleted || e.Kind == sessions.EvTurnFailed
	})
	var thread string
	for _, e := range seen {
		if e.Kind == sessions.EvSessionInit {
			thread = e.AgentSessionID
		}
	}
	if thread == "" || seen[len(seen)-1].Kind != sessions.EvTurnCompleted {
		t.Fatalf("thread %q, events %s; want a thread id and a completed turn", thread, kindsOf(seen))
	}
	// The second prompt is a new turn on the same thread: the model sees
	// the first exchange in its input.
	if err := p.SendPrompt("[[scenario:tool]] again"); err != nil {
		t.Fatal(err)
	}
	seen = agenttest.Until(t, p, "the second turn's end", func(e sessions.Event) bool {
		return e.Kind == sessions.EvTurnCompleted || e.Kind == sessions.EvTurnFailed
	})
	if got := significant(seen); strings.Join(got, ",") != "tool_started command,tool_finished command,turn_completed" {
		t.Errorf("second turn: %q", got)
	}
	if reqs := w.api.Requests("tool"); len(reqs) != 2 || !strings.Contains(reqs[1].ToolOutput, "hi") {
		t.Errorf("tool requests %+v, want the call and its output hi", reqs)
	}
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	for range p.Events() {
	}
	if code, sig, err := p.Wait(); code != 0 || sig != "" || err != nil {
		t.Errorf("exit %d %q %v after closing input, want a clean exit", code, sig, err)
	}
	if p.SkippedLines() != 0 {
		t.Errorf("%d lines skipped: %+v", p.SkippedLines(), p.Stats())
	}

	// Resumed in a new process, the thread continues.
	p2 := w.start(t, ProcessOptions{ResumeID: thread})
	if err := p2.SendPrompt("[[scenario:text]] after resume"); err != nil {
		t.Fatal(err)
	}
	seen = agenttest.Until(t, p2, "the resumed turn's end", agenttest.Is(sessions.EvTurnCompleted))
	var resumed string
	for _, e := range seen {
		if e.Kind == sessions.EvSessionInit {
			resumed = e.AgentSessionID
			break
		}
	}
	if resumed != thread {
		t.Errorf("resumed thread %q, want the same thread %s", resumed, thread)
	}
	if n := len(w.api.Requests("text")); n != 2 {
		t.Errorf("%d text requests, want 2", n)
	}
}

func TestRealInterruptThenNextTurn(t *testing.T) {
	w := newRealWorld(t, "")
	w.api.Handle("hang", func(int, string) fakeapi.Reply { return fakeapi.Reply{Stall: true} })
	p := w.start(t, ProcessOptions{})
	if err := p.SendPrompt("[[scenario:hang]] go"); err != nil {
		t.Fatal(err)
	}
	agenttest.Until(t, p, "the turn to start", func(e sessions.Event) bool { return e.Detail == "turn started" })
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	agenttest.Until(t, p, "the abort", agenttest.Is(sessions.EvTurnAborted))
	if err := p.SendPrompt("[[scenario:text]] next"); err != nil {
		t.Fatal(err)
	}
	agenttest.Until(t, p, "the next turn", agenttest.Is(sessions.EvTurnCompleted))
}

func TestRealApprovalAcceptedAndDeclined(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "accept", false: "decline"}[allow], func(t *testing.T) {
			w := newRealWorld(t, "on-request")
			p := w.start(t, ProcessOptions{})
			if err := p.SendPrompt("[[scenario:write]] make it"); err != nil {
				t.Fatal(err)
			}
			seen := agenttest.Until(t, p, "the approval request", agenttest.Is(sessions.EvWaitingOnUser))
			ask := seen[len(seen)-1]
			if ask.Reason != sessions.WaitPermission || ask.Permission == nil || ask.Permission.Tool != "command" {
				t.Fatalf("asked %+v", ask)
			}
			if err := p.AnswerPermission(*ask.Permission, allow, ""); err != nil {
				t.Fatal(err)
			}
			seen = agenttest.Until(t, p, "the turn's end", agenttest.Is(sessions.EvTurnCompleted))
			for _, e := range seen {
				if e.Kind == sessions.EvUserAnswered {
					t.Errorf("our own answer came back as withdrawn: %+v", e)
				}
			}
			_, err := os.Stat(filepath.Join(w.cwd, "build", "out.txt"))
			if ran := err == nil; ran != allow {
				t.Errorf("the command ran: %v, want %v", ran, allow)
			}
		})
	}
}

// A Codex that stops reading its input fails the write with a deadline
// instead of blocking the caller (the app's stdin writes are bounded).
func TestWriteTimeoutOnAnAgentThatDoesNotRead(t *testing.T) {
	script := filepath.Join(t.TempDir(), "codex")
	// It answers thread/start once it has read it, then reads no more.
	body := "#!/bin/sh\nhead -n 3 >/dev/null\nprintf '{\"id\":2,\"result\":{\"thread\":{\"id\":\"T\"}}}\\n'\nexec sleep 600\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	p := agenttest.Started(t, Start, ProcessOptions{Options: agentkit.Options{Command: script, Cwd: t.TempDir(), WriteTimeout: 300 * time.Millisecond}})
	start := time.Now()
	err := p.SendPrompt(strings.Repeat("x", 4<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("SendPrompt = %v, want a deadline error", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the write took %s", took)
	}
	if err := p.SendPrompt("again"); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("after a timed-out write: %v, want the input closed", err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range p.Events() {
	}
	if _, sig, _ := p.Wait(); sig != "terminated" {
		t.Errorf("signal %q, want terminated", sig)
	}
}

// An app-server that never answers thread/start: a prompt waits at most
// the write timeout, then fails as a deadline.
func TestPromptWaitsForTheThreadBounded(t *testing.T) {
	script := filepath.Join(t.TempDir(), "codex")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := Start(ProcessOptions{Options: agentkit.Options{Command: script, Cwd: t.TempDir(), WriteTimeout: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Signal(syscall.SIGKILL) })
	if err := p.SendPrompt("hi"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("SendPrompt = %v, want a deadline error", err)
	}
}

func TestStartMissingCommandNamesTheSetting(t *testing.T) {
	_, err := Start(ProcessOptions{Options: agentkit.Options{Command: "/nowhere/codex", Cwd: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), CommandSetting) {
		t.Errorf("err %v, want it to name %s", err, CommandSetting)
	}
	if _, err := Start(ProcessOptions{Options: agentkit.Options{Command: "sh"}, ResumeID: "-rf"}); err == nil {
		t.Error("a resume id that looks like a flag was accepted")
	}
}

func TestApprovalPolicyFromPermissionMode(t *testing.T) {
	for mode, want := range map[string]string{
		"": "", "never": "never", "on-request": "on-request", "bypassPermissions": "never",
		"default": "on-request", "plan": "", "untrusted": "",
	} {
		if got := ApprovalPolicy(mode); got != want {
			t.Errorf("ApprovalPolicy(%q) = %q, want %q", mode, got, want)
		}
	}
}

// TestRealKilledMidTurnReadsDead: the agent SIGKILLed mid-turn (alone: its group and its tools
// left running, and not reaped) reads as dead once the exit grace has
// passed, so the runtime interrupts the session at its next tick even when
// a survivor holds stdout open and no exit event comes.
func TestRealKilledMidTurnReadsDead(t *testing.T) {
	w := newRealWorld(t, "")
	w.api.Handle("hang", func(int, string) fakeapi.Reply { return fakeapi.Reply{Stall: true} })
	// A loaded machine (make test runs the packages side by side) can take
	// more than the default 10 s to open the thread.
	p := w.start(t, ProcessOptions{Options: agentkit.Options{WriteTimeout: 30 * time.Second}})
	if err := p.SendPrompt("[[scenario:hang]] go"); err != nil {
		t.Fatal(err)
	}
	agenttest.Until(t, p, "the turn to start", func(e sessions.Event) bool { return e.Detail == "turn started" })
	agenttest.KillReadsDead(t, p)
}
