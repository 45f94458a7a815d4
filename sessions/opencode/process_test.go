//go:build unix

package opencode

import (
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
	"github.com/session-supervisor/session-supervisor/sessions/opencode/fakeapi"
)

// These tests run the real OpenCode CLI (`make test` installs the pinned
// one; OPENCODE_BIN overrides) against the fake chat completions API on
// 127.0.0.1, with a refusing proxy for anything else.

// realWorld is one test's fake API and hermetic OpenCode environment.
type realWorld struct {
	bin  string
	api  *fakeapi.Server
	env  []string
	cwd  string
	home string
}

func newRealWorld(t *testing.T, cfg fakeapi.Config) *realWorld {
	t.Helper()
	bin := fakeapi.OpenCodeBinary(t)
	api := agenttest.FakeAPI(t, fakeapi.Start)
	proxy := agenttest.Serve(t, fakeapi.StartRefusingProxy)
	home := t.TempDir()
	if err := fakeapi.WriteConfig(home, api.URL(), cfg); err != nil {
		t.Fatal(err)
	}
	return &realWorld{bin: bin, api: api, env: fakeapi.HermeticEnv(home, proxy), cwd: t.TempDir(), home: home}
}

func (w *realWorld) start(t *testing.T, o ProcessOptions) *proc {
	t.Helper()
	o.Command, o.Env = w.bin, w.env
	if o.Cwd == "" {
		o.Cwd = w.cwd
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = time.Minute
	}
	return &proc{Process: agenttest.Started(t, Start, o), t: t}
}

// proc collects a process's events.
type proc struct {
	*Process
	t   *testing.T
	got []sessions.Event
}

// until reads events until one satisfies ok (returned) or the stream ends
// or a minute passes (fatal).
func (p *proc) until(what string, ok func(sessions.Event) bool) sessions.Event {
	p.t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case ev, open := <-p.Events():
			if !open {
				p.t.Fatalf("the stream ended before %s; events: %s", what, kinds(p.got))
			}
			p.got = append(p.got, ev)
			if ok(ev) {
				return ev
			}
		case <-deadline:
			p.t.Fatalf("no %s within 2 minutes; events: %s; stderr: %s", what, kinds(p.got), p.StderrTail())
		}
	}
}

func kindIs(k sessions.EventKind) func(sessions.Event) bool {
	return func(e sessions.Event) bool { return e.Kind == k }
}

func turnEnd(e sessions.Event) bool {
	return e.Kind == sessions.EvTurnCompleted || e.Kind == sessions.EvTurnFailed || e.Kind == sessions.EvTurnAborted
}

func kinds(evs []sessions.Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Kind == sessions.EvActivity || e.Kind == sessions.EvMetrics {
			continue
		}
		b.WriteString(e.Kind.String())
		if e.Name != "" {
			b.WriteString("(" + e.Name + ")")
		}
		b.WriteString(" ")
	}
	return b.String()
}

func (p *proc) has(k sessions.EventKind) bool {
	for _, e := range p.got {
		if e.Kind == k {
			return true
		}
	}
	return false
}

// TestProcessTurns drives one real `opencode serve` through one turn per
// scenario, in order, in one session (the fake API picks a request's
// scenario by the last marker in it): the event sequence and the outcome
// the supervisor is told, and that a session takes its next prompt after
// each failure. One server, not one per scenario: OpenCode's start is 4 to
// 5 s of a core, the unit tests' longest single cost. The overflows come
// first: OpenCode's compaction request leaves out the prompt that
// overflowed, so it would carry the turn before's marker (a 401 there made
// overflow_once fail as auth). "text" comes last: it closes the input.
func TestProcessTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test needs the real OpenCode CLI, which it runs for minutes")
	}
	tests := []struct {
		scenario string
		check    func(t *testing.T, p *proc, end sessions.Event, w *realWorld)
	}{
		{"overflow_once", func(t *testing.T, p *proc, end sessions.Event, w *realWorld) {
			// OpenCode compacts an overflow by itself and goes on.
			if end.Kind != sessions.EvTurnCompleted || !p.has(sessions.EvCompactionStarted) || !p.has(sessions.EvCompactionFinished) {
				t.Errorf("events %s, want a compaction then the turn completed; end %+v; log %+v", kinds(p.got), end.Failure, w.api.Log())
			}
		}},
		{"overflow", func(t *testing.T, p *proc, end sessions.Event, w *realWorld) {
			if end.Kind != sessions.EvTurnFailed || end.Failure.Kind != sessions.ContextOverflow {
				t.Errorf("turn ended %s %+v, want failed context_overflow", end.Kind, end.Failure)
			}
		}},
		{"tool", func(t *testing.T, p *proc, end sessions.Event, w *realWorld) {
			if end.Kind != sessions.EvTurnCompleted || !p.has(sessions.EvToolStarted) || !p.has(sessions.EvToolFinished) {
				t.Errorf("events %s, want bash started, finished, then the turn completed", kinds(p.got))
			}
			if reqs := w.api.Requests("tool"); len(reqs) != 2 || !strings.Contains(reqs[1].ToolOutput, "hi") {
				t.Errorf("requests %+v, want the call and then its output", reqs)
			}
		}},
		{"401", func(t *testing.T, p *proc, end sessions.Event, w *realWorld) {
			if end.Kind != sessions.EvTurnFailed || end.Failure.Kind != sessions.Auth || end.Status != 401 {
				t.Errorf("turn ended %s status %d %+v, want failed auth 401", end.Kind, end.Status, end.Failure)
			}
		}},
		{"text", func(t *testing.T, p *proc, end sessions.Event, w *realWorld) {
			if end.Kind != sessions.EvTurnCompleted {
				t.Errorf("turn ended %s %+v, want completed", end.Kind, end.Failure)
			}
			// Between turns, closing the input stops the server at once
			// (a shutdown of the app) and no prompt is taken after it.
			if err := p.CloseInput(); err != nil {
				t.Fatal(err)
			}
			if err := p.SendPrompt("more"); err == nil {
				t.Error("a prompt was taken after CloseInput")
			}
			for range p.Events() {
			}
			if code, sig, err := p.Wait(); err != nil || sig != "" && sig != syscall.SIGTERM.String() {
				t.Errorf("after CloseInput: exit %d signal %q err %v, want a stop by SIGTERM", code, sig, err)
			}
		}},
	}
	w := newRealWorld(t, fakeapi.Config{})
	p := w.start(t, ProcessOptions{})
	init := p.until("the session", kindIs(sessions.EvSessionInit))
	if !sessionRE.MatchString(init.AgentSessionID) {
		t.Fatalf("session id %q", init.AgentSessionID)
	}
	checkLocked(t, p.Process)
	for _, tc := range tests {
		ok := t.Run(tc.scenario, func(t *testing.T) {
			p.t, p.got = t, nil // this scenario's events alone
			if err := p.SendPrompt("[[scenario:" + tc.scenario + "]] go"); err != nil {
				t.Fatal(err)
			}
			end := p.until("the turn's end", turnEnd)
			tc.check(t, p, end, w)
			if p.SkippedLines() != 0 {
				t.Errorf("%d events skipped", p.SkippedLines())
			}
		})
		if !ok {
			break // the session may be anywhere: the next scenarios would fail for it
		}
	}
}

// TestProcessRateLimitPastRetries: a 429 with retry-after is retried by
// OpenCode itself (retry events with the next attempt's time), then fails
// the turn as a rate limit with the provider's retry time.
func TestProcessRateLimitPastRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test needs the real OpenCode CLI, which it runs for minutes")
	}
	w := newRealWorld(t, fakeapi.Config{})
	p := w.start(t, ProcessOptions{})
	p.until("the session", kindIs(sessions.EvSessionInit))
	if err := p.SendPrompt("[[scenario:429]] go"); err != nil {
		t.Fatal(err)
	}
	end := p.until("the turn's end", turnEnd)
	retries := 0
	for _, e := range p.got {
		if e.Kind == sessions.EvRetryScheduled {
			retries++
			// The delay is what is left of the announced second when the
			// event is decoded: zero on a machine slow enough to read it
			// late (decode_test checks the arithmetic on a fixed clock).
			if e.Failure.Kind != sessions.RateLimit || e.Delay < 0 || e.Delay > 5*time.Second {
				t.Errorf("retry %+v, want a rate limit with a delay of at most about a second", e)
			}
		}
	}
	if retries != fakeapi.RateLimitAttempts-1 {
		t.Errorf("%d retries, want %d", retries, fakeapi.RateLimitAttempts-1)
	}
	if end.Kind != sessions.EvTurnFailed || end.Failure.Kind != sessions.RateLimit || end.Failure.RetryAt.IsZero() {
		t.Errorf("turn ended %s %+v, want a rate limit with its retry time", end.Kind, end.Failure)
	}
	if n := len(w.api.Requests("429")); n != fakeapi.RateLimitAttempts {
		t.Errorf("%d requests, want %d", n, fakeapi.RateLimitAttempts)
	}
}

// TestProcessInterruptAndResume: abort ends a hung turn as aborted; the
// same server takes the next prompt; a new server resumes the session by
// id and sees its history; SIGKILL ends the stream and Wait reports it.
func TestProcessInterruptAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test needs the real OpenCode CLI, which it runs for minutes")
	}
	w := newRealWorld(t, fakeapi.Config{})
	p := w.start(t, ProcessOptions{})
	init := p.until("the session", kindIs(sessions.EvSessionInit))
	if err := p.SendPrompt("[[scenario:stall]] go"); err != nil {
		t.Fatal(err)
	}
	p.until("the stalled reply's first words", func(e sessions.Event) bool { return e.Detail == "writing a reply" })
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if end := p.until("the turn's end", turnEnd); end.Kind != sessions.EvTurnAborted {
		t.Fatalf("turn ended %s %+v, want aborted", end.Kind, end.Failure)
	}
	if err := p.SendPrompt("[[scenario:stall]] again"); err != nil {
		t.Fatal(err)
	}
	if end := p.until("the second turn's end", turnEnd); end.Kind != sessions.EvTurnCompleted {
		t.Fatalf("second turn ended %s %+v, want completed", end.Kind, end.Failure)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for ev := range p.Events() {
		p.got = append(p.got, ev)
	}
	if code, sig, err := p.Wait(); err != nil || sig != syscall.SIGKILL.String() {
		t.Errorf("wait: code %d signal %q err %v, want killed", code, sig, err)
	}

	r := w.start(t, ProcessOptions{ResumeID: init.AgentSessionID})
	again := r.until("the resumed session", kindIs(sessions.EvSessionInit))
	if again.AgentSessionID != init.AgentSessionID || !strings.Contains(again.Detail, "resumed") {
		t.Errorf("resumed %+v, want session %s", again, init.AgentSessionID)
	}
	// A compaction before the new server has answered anything uses the
	// configured model.
	if err := r.Compact(); err != nil {
		t.Fatal(err)
	}
	r.until("the compaction to start", kindIs(sessions.EvCompactionStarted))
	if ev := r.until("the compaction to end", kindIs(sessions.EvCompactionFinished)); !ev.OK {
		t.Errorf("compaction %+v, want it done", ev)
	}
	r.until("the compaction turn's end", turnEnd)
	if err := r.SendPrompt("third"); err != nil {
		t.Fatal(err)
	}
	if end := r.until("the resumed turn's end", turnEnd); end.Kind != sessions.EvTurnCompleted {
		t.Fatalf("resumed turn ended %s %+v", end.Kind, end.Failure)
	}
	// The compaction's summary became the history: the prompt after it
	// carries no marker, so it is found by its text.
	var third bool
	for _, e := range w.api.Log() {
		third = third || e.UserText == "third" && e.Status == 200
	}
	if !third {
		t.Error("the resumed session's prompt never reached the model")
	}
}

// TestProcessStartFailures: a missing binary is an error naming the
// setting; a resume of a session that does not exist fails the prompt and
// the server is stopped.
func TestProcessStartFailures(t *testing.T) {
	if _, err := Start(ProcessOptions{Command: "/nonexistent/opencode"}); err == nil || !strings.Contains(err.Error(), CommandSetting) {
		t.Errorf("missing binary: %v", err)
	}
	if _, err := Start(ProcessOptions{Command: "sh", ResumeID: "../etc"}); err == nil {
		t.Error("an invalid resume id was accepted")
	}
	if testing.Short() {
		return
	}
	w := newRealWorld(t, fakeapi.Config{})
	p := w.start(t, ProcessOptions{ResumeID: "ses_doesnotexist0000000000"})
	if err := p.SendPrompt("hi"); err == nil || !strings.Contains(err.Error(), "resume") {
		t.Errorf("prompt to a session that could not be resumed: %v", err)
	}
	for range p.Events() {
	}
	if _, _, err := p.Wait(); err != nil {
		t.Errorf("wait: %v", err)
	}
	_ = os.Remove(w.cwd)
}

// checkLocked: the server listens on 127.0.0.1 only and refuses a request
// without the process's password.
func checkLocked(t *testing.T, p *Process) {
	t.Helper()
	p.mu.Lock()
	base := p.base
	p.mu.Unlock()
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("the server listens on %q", base)
	}
	resp, err := http.Get(base + "/session")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without the password got HTTP %d, want 401", resp.StatusCode)
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OPENCODE_SERVER_PASSWORD=") {
			t.Error("the password leaked into this process's environment")
		}
	}
}

// TestProcessKilledMidTurnReadsDead: the agent SIGKILLed mid-turn (alone: its group and its tools
// left running, and not reaped) reads as dead once the exit grace has
// passed, so the runtime interrupts the session at its next tick even when
// a survivor holds stdout open and no exit event comes.
func TestProcessKilledMidTurnReadsDead(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test needs the real OpenCode CLI, which it runs for minutes")
	}
	w := newRealWorld(t, fakeapi.Config{})
	p := w.start(t, ProcessOptions{})
	p.until("the session", kindIs(sessions.EvSessionInit))
	if err := p.SendPrompt("[[scenario:stall]] go"); err != nil {
		t.Fatal(err)
	}
	p.until("the stalled reply's first words", func(e sessions.Event) bool { return e.Detail == "writing a reply" })
	agenttest.KillReadsDead(t, p)
}
