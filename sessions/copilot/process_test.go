//go:build linux

package copilot

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
	"github.com/session-supervisor/session-supervisor/sessions/copilot/fakeapi"
)

// These tests drive the real Copilot CLI (COPILOT_BIN, or the Makefile's
// pinned copy) against the fake chat completions API, offline, behind a
// proxy that refuses everything else.

type world struct {
	api     *fakeapi.Server
	refused func() int
	opts    ProcessOptions
}

func newWorld(t *testing.T) *world {
	t.Helper()
	bin := fakeapi.CopilotBinary(t)
	api := agenttest.FakeAPI(t, fakeapi.Start)
	proxy, refused, closeProxy, err := fakeapi.StartRefusingProxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeProxy)
	cache, err := fakeapi.SharedCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	w := &world{api: api, refused: refused, opts: ProcessOptions{PermissionMode: "bypassPermissions", Options: agentkit.Options{Command: bin, Cwd: t.TempDir(),
		Env: fakeapi.HermeticEnv(home, cache, api.URL(), proxy), WriteTimeout: 10 * time.Second}}}
	t.Cleanup(func() {
		if n := w.refused(); n != 0 {
			t.Errorf("the CLI tried to leave loopback %d times (refused by the proxy)", n)
		}
	})
	return w
}

// start prepares a session in w and sends its first prompt.
func (w *world) start(t *testing.T, prompt string) *Process {
	t.Helper()
	p, err := Start(w.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SendPrompt(prompt); err != nil {
		t.Fatal(err)
	}
	return p
}

// stalled starts a turn whose model stream stays silent and returns once
// the request reached the fake.
func (w *world) stalled(t *testing.T) *Process {
	t.Helper()
	p := w.start(t, "[[scenario:stall]] go")
	next(t, p, sessions.EvProcessStarted)
	for len(w.api.Requests("stall")) == 0 {
		time.Sleep(50 * time.Millisecond)
	}
	return p
}

// next reads events until one of kind arrives (failing when Events closes
// first or none comes within 90 s) and returns it with all it read.
func next(t *testing.T, p *Process, kind sessions.EventKind) (sessions.Event, []sessions.Event) {
	t.Helper()
	seen := agenttest.UntilWithin(t, p, kind.String(), 90*time.Second, agenttest.Is(kind))
	return seen[len(seen)-1], seen
}

func kindsOf(evs []sessions.Event) []sessions.EventKind {
	var out []sessions.EventKind
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

func closed(t *testing.T, p *Process) []sessions.Event {
	t.Helper()
	var usage []sessions.Event
	for {
		select {
		case ev, ok := <-p.Events():
			if !ok {
				return usage
			}
			if ev.Kind == sessions.EvMetrics && ev.Usage != nil {
				// The last turn's tokens, read from the events file
				// when its process ended.
				usage = append(usage, ev)
				continue
			}
			t.Fatalf("Events still open: %+v", ev)
		case <-time.After(30 * time.Second):
			t.Fatal("Events not closed")
		}
	}
}

// TestProcessTwoTurnsOneSession: each prompt is a process of its own, both
// on the session id the app chose; the exit between turns is not an exit
// of the agent, and CloseInput ends the session cleanly.
func TestProcessTwoTurnsOneSession(t *testing.T) {
	w := newWorld(t)
	p, err := Start(w.opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.PID() != 0 {
		t.Errorf("pid %d before the first prompt", p.PID())
	}
	if err := p.SendPrompt("[[scenario:text]] first"); err != nil {
		t.Fatal(err)
	}
	started, _ := next(t, p, sessions.EvProcessStarted)
	if started.AgentSessionID != p.SessionID() || started.PID <= 0 {
		t.Errorf("process started %+v, want pid and session %s", started, p.SessionID())
	}
	next(t, p, sessions.EvTurnCompleted)
	first := p.PID()
	// The turn's process exits; Events stays open for the next prompt.
	deadline := time.Now().Add(30 * time.Second)
	for processAliveOrUnknown(first) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// Until the pump has reaped the turn's process, Alive cannot tell.
	alive, known := p.Alive()
	for !known && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		alive, known = p.Alive()
	}
	if !alive || !known {
		t.Errorf("between turns Alive = %v, %v; the session is ready for a prompt", alive, known)
	}
	if err := p.SendPrompt("second"); err != nil {
		t.Fatal(err)
	}
	s2, _ := next(t, p, sessions.EvProcessStarted)
	next(t, p, sessions.EvTurnCompleted)
	if s2.PID == first {
		t.Errorf("turn 2 ran in the first turn's process %d", first)
	}
	reqs := w.api.Requests("text")
	if len(reqs) != 2 || reqs[1].UserText != "second" {
		t.Fatalf("requests %+v, want two, the second carrying the prompt", reqs)
	}
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	closed(t, p)
	if code, sig, err := p.Wait(); code != 0 || sig != "" || err != nil {
		t.Errorf("Wait = %d %q %v, want a clean end", code, sig, err)
	}
	if _, err := os.Stat(w.opts.Cwd); err != nil {
		t.Fatal(err)
	}
	if n := p.SkippedLines(); n != 0 {
		t.Errorf("%d lines skipped", n)
	}
}

func processAliveOrUnknown(pid int) bool {
	alive, known := processAlive(pid)
	return alive || !known
}

// TestProcessInterruptThenNudge: SIGINT to the turn's group aborts the
// stalled turn (Copilot's abort event), Events stays open, and the next
// prompt resumes the same session in a new process.
func TestProcessInterruptThenNudge(t *testing.T) {
	w := newWorld(t)
	p := w.stalled(t)
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	next(t, p, sessions.EvTurnAborted)
	if err := p.SendPrompt("continue"); err != nil {
		t.Fatal(err)
	}
	_, seen := next(t, p, sessions.EvTurnCompleted)
	for _, ev := range seen {
		if ev.Kind == sessions.EvTurnAborted {
			t.Errorf("a second abort: %v", kindsOf(seen))
		}
	}
	if reqs := w.api.Requests("stall"); len(reqs) != 2 || reqs[1].UserText != "continue" {
		t.Errorf("requests %+v, want the stalled one and the nudge", reqs)
	}
	_ = p.CloseInput()
	closed(t, p)
}

// TestProcessKilledMidTurn: the turn's process group killed with SIGKILL
// is the agent dying: Events closes and Wait reports the signal.
func TestProcessKilledMidTurn(t *testing.T) {
	w := newWorld(t)
	p := w.stalled(t)
	if err := syscall.Kill(-p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range p.Events() {
	}
	code, sig, err := p.Wait()
	if sig != "killed" || err != nil {
		t.Errorf("Wait = %d %q %v, want killed", code, sig, err)
	}
	if err := p.SendPrompt("more"); err == nil {
		t.Error("a prompt was accepted after the agent died")
	}
}

// TestProcessPromptDuringTurnQueued: a prompt sent while a turn runs starts
// the next turn when it ends (Copilot reads no input mid-turn), announced
// by EvSessionInit so Apply supervises it as that prompt's turn.
func TestProcessPromptDuringTurnQueued(t *testing.T) {
	w := newWorld(t)
	p := w.start(t, "[[scenario:tool]] run it")
	next(t, p, sessions.EvToolStarted)
	if err := p.SendPrompt("[[scenario:text]] and then this"); err != nil {
		t.Fatal(err)
	}
	next(t, p, sessions.EvTurnCompleted)
	next(t, p, sessions.EvSessionInit)
	next(t, p, sessions.EvTurnCompleted)
	reqs, queued := w.api.Requests("tool"), w.api.Requests("text")
	if len(reqs) != 2 || !strings.Contains(reqs[1].ToolOutput, "hi") || len(queued) != 1 || !strings.Contains(queued[0].UserText, "and then this") {
		t.Errorf("requests %+v then %+v, want the call, its output, then the queued prompt", reqs, queued)
	}
	_ = p.CloseInput()
	closed(t, p)
}

// TestProcessQueuedTurnThatCannotStart: a queued prompt whose process
// cannot start (the command gone between turns) ends the session: Events
// closes, Wait reports -1, and the stderr tail says which start failed.
func TestProcessQueuedTurnThatCannotStart(t *testing.T) {
	w := newWorld(t)
	wrapper := filepath.Join(t.TempDir(), "copilot")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nexec '"+w.opts.Command+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.opts.Command = wrapper
	p := w.start(t, "[[scenario:tool]] run it")
	next(t, p, sessions.EvToolStarted)
	if err := os.Remove(wrapper); err != nil {
		t.Fatal(err)
	}
	if err := p.SendPrompt("[[scenario:text]] and then this"); err != nil {
		t.Fatal(err)
	}
	next(t, p, sessions.EvTurnCompleted)
	closed(t, p)
	if code, _, err := p.Wait(); err != nil || code != -1 {
		t.Errorf("Wait = %d, %v; want -1", code, err)
	}
	if tail := p.StderrTail(); !strings.Contains(tail, "starting the queued turn") {
		t.Errorf("stderr tail %q does not say the queued turn could not start", tail)
	}
}

// TestProcessCompactAsTheTurnEnds: the supervisor decides on a turn's
// result line, which Copilot prints before its process exits; a compaction
// asked for then is not refused but runs as soon as that process is gone
// (under load the gap is long enough that the overflow retry never ran).
func TestProcessCompactAsTheTurnEnds(t *testing.T) {
	w := newWorld(t)
	p := w.start(t, "[[scenario:text]] hello")
	next(t, p, sessions.EvTurnCompleted)
	if err := p.Compact(); err != nil {
		t.Fatalf("compact right after the result line: %v", err)
	}
	next(t, p, sessions.EvCompactionStarted)
	next(t, p, sessions.EvCompactionFinished)
	next(t, p, sessions.EvTurnCompleted) // the /compact turn's own result
	_ = p.CloseInput()
	closed(t, p)
}

// TestProcessPermissionModes: prompt mode asks no one, so the session's
// permission mode decides up front: under "default" Copilot denies the
// command (the tool fails, the turn goes on), under bypassPermissions it
// runs.
func TestProcessPermissionModes(t *testing.T) {
	tests := []struct {
		mode string
		runs bool
	}{
		{"default", false},
		{"bypassPermissions", true},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			w := newWorld(t)
			w.opts.PermissionMode = tt.mode
			p := w.start(t, "[[scenario:write]] make it")
			fin, _ := next(t, p, sessions.EvToolFinished)
			next(t, p, sessions.EvTurnCompleted)
			_, err := os.Stat(filepath.Join(w.opts.Cwd, "made.txt"))
			if ran := err == nil; ran != tt.runs || (fin.Detail == "tool failed") == tt.runs {
				t.Errorf("command ran %v (tool finished %+v), want %v", ran, fin, tt.runs)
			}
			_ = p.CloseInput()
			closed(t, p)
		})
	}
}

func TestPermissionArgs(t *testing.T) {
	tests := []struct {
		mode string
		want string
	}{
		{"bypassPermissions", "--allow-all"},
		{"allow-all", "--allow-all"},
		{"acceptEdits", "--allow-tool=write"},
		{"default", ""},
		{"plan", ""},
		{"", ""},
		{"--yolo; rm", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(PermissionArgs(tt.mode), " "); got != tt.want {
			t.Errorf("PermissionArgs(%q) = %q, want %q", tt.mode, got, tt.want)
		}
	}
}

func TestStartRefusesBadResumeID(t *testing.T) {
	if _, err := Start(ProcessOptions{Options: agentkit.Options{Command: "sh"}, ResumeID: "--yolo"}); err == nil {
		t.Error("a resume id that is a flag was accepted")
	}
	if _, err := Start(ProcessOptions{Options: agentkit.Options{Command: "no-such-copilot-here"}}); err == nil || !strings.Contains(err.Error(), CommandSetting) {
		t.Errorf("missing command: %v", err)
	}
	p, err := Start(ProcessOptions{Options: agentkit.Options{Command: "sh"}})
	if err != nil || !sessionRE.MatchString(p.SessionID()) {
		t.Errorf("new session id %q (%v), want a UUID", p.SessionID(), err)
	}
}

// With Copilot's own API (the fake standing in for it), the account's
// weekly rate limit reaches the session: the turn fails as rate limited
// with the reset the API's retry-after gave (worded to the hour by the
// CLI, counted from the event's time), and the weekly window is spent
// until then. No session.quota_observation is printed (measured: it is
// ephemeral, and 1.0.102 sends none to -p's stream).
func TestProcessOwnAPIWeeklyLimit(t *testing.T) {
	w := newWorld(t)
	w.opts.Env = fakeapi.CopilotAPIEnv(filepath.Dir(envValue(w.opts.Env, "COPILOT_HOME")), envValue(w.opts.Env, "XDG_CACHE_HOME"),
		"http://"+w.api.Addr(), envValue(w.opts.Env, "HTTPS_PROXY"))
	// With its own API the CLI also asks api.github.com (two CONNECTs,
	// measured): the proxy refuses them, so nothing leaves the machine,
	// and the turn does not need them.
	refused := w.refused
	w.refused = func() int { return 0 }
	defer func() { t.Logf("%d requests refused by the proxy", refused()) }()
	sent := time.Now()
	p := w.start(t, "[[scenario:weekly_limit]] hi")
	e, seen := next(t, p, sessions.EvTurnFailed)
	// The process ends before the test's directories are removed.
	_ = p.CloseInput()
	closed(t, p)
	_, _, _ = p.Wait()
	var s sessions.Session
	for _, ev := range seen {
		s = sessions.Apply(s, ev, time.Now())
	}
	want := sent.Add(fakeapi.WeeklyLimitRetryAfter)
	if f := e.Failure; f.Kind != sessions.RateLimit || f.RetryAt.Before(want.Add(-2*time.Second)) || f.RetryAt.After(time.Now().Add(fakeapi.WeeklyLimitRetryAfter)) {
		t.Fatalf("failure %+v, want rate limited until about %v", f, want)
	}
	if len(s.RateWindows) != 1 || s.RateWindows[0].Kind != "weekly" || !s.RateWindows[0].Rejected() || !s.RateWindows[0].ResetsAt.Equal(e.Failure.RetryAt) {
		t.Fatalf("windows %+v, want the weekly one spent until %v", s.RateWindows, e.Failure.RetryAt)
	}
	if n := len(w.api.Server.Requests(fakeapi.OwnCompletionsPath, "weekly_limit")); n != 1 {
		t.Errorf("%d requests, want 1 (the CLI does not retry its weekly limit)", n)
	}
	t.Logf("%+v; %+v", e.Failure, s.RateWindows[0])
}
