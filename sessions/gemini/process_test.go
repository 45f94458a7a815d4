//go:build unix

package gemini

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
	"github.com/session-supervisor/session-supervisor/sessions/gemini/fakeapi"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// These tests run the real Gemini CLI (`make test` installs the pinned one;
// GEMINI_BIN overrides) in ACP mode against the fake Gemini API on
// 127.0.0.1, with a refusing proxy for anything else. Each test builds a
// world of its own (newRealWorld: its own fake, proxy, home and directory)
// and spends most of its time waiting on the CLI, not on a core (measured:
// 20 s of CPU in the package's 83 s run one at a time), so they run in
// parallel: the longest is TestProcessRealCancelAndResume, whose resume
// waits for the next minute (loadDelay).

type realWorld struct {
	bin string
	api *fakeapi.Server
	env []string
	cwd string
}

func newRealWorld(t *testing.T) *realWorld {
	t.Helper()
	bin := fakeapi.GeminiBinary(t)
	api := agenttest.FakeAPI(t, fakeapi.Start)
	proxy := agenttest.Serve(t, fakeapi.StartRefusingProxy)
	home := t.TempDir()
	if err := fakeapi.WriteSettings(home, fakeapi.Config{}); err != nil {
		t.Fatal(err)
	}
	return &realWorld{bin: bin, api: api, env: fakeapi.HermeticEnv(home, api.URL(), proxy), cwd: t.TempDir()}
}

func (w *realWorld) start(t *testing.T, mode, resume string) *Process {
	t.Helper()
	return agenttest.Started(t, Start, ProcessOptions{ApprovalMode: mode, ResumeID: resume,
		Options: agentkit.Options{Command: w.bin, Cwd: w.cwd, Env: w.env, WriteTimeout: 30 * time.Second}})
}

// collect reads events until one satisfies stop or the stream ends
// (agenttest.Collect), failing after 90 s.
func collect(t *testing.T, p *Process, stop func(sessions.Event) bool) []sessions.Event {
	t.Helper()
	return agenttest.Collect(t, p, 90*time.Second, stop)
}

func kinds(evs []sessions.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Kind != sessions.EvMetrics {
			out = append(out, e.Kind.String())
		}
	}
	return out
}

func turnEnd(e sessions.Event) bool {
	switch e.Kind {
	case sessions.EvTurnCompleted, sessions.EvTurnFailed, sessions.EvTurnAborted:
		return true
	}
	return false
}

func last(evs []sessions.Event) sessions.Event {
	if len(evs) == 0 {
		return sessions.Event{}
	}
	return evs[len(evs)-1]
}

// TestProcessRealTurns: one long-lived process takes two prompts on one
// session; a tool under approval mode yolo runs without asking and is open
// while it runs.
func TestProcessRealTurns(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	p := w.start(t, "yolo", "")
	if err := p.SendPrompt("[[scenario:text]] hi"); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, p, turnEnd)
	var sid string
	for _, e := range evs {
		if e.Kind == sessions.EvSessionInit {
			sid = e.AgentSessionID
		}
	}
	if sid == "" || last(evs).Kind != sessions.EvTurnCompleted {
		t.Fatalf("first turn: session %q events %v", sid, kinds(evs))
	}
	if err := p.SendPrompt("[[scenario:tool]] run it"); err != nil {
		t.Fatal(err)
	}
	evs = collect(t, p, turnEnd)
	got := strings.Join(kinds(evs), " ")
	if !strings.Contains(got, "tool_started tool_finished") || last(evs).Kind != sessions.EvTurnCompleted {
		t.Errorf("tool turn: %s", got)
	}
	reqs := w.api.Requests("tool")
	if len(reqs) != 2 || !strings.Contains(reqs[1].ToolOutput, "hi") {
		t.Errorf("requests %+v, want the call and then its output", reqs)
	}
	if p.SkippedLines() != 0 {
		t.Errorf("%d lines skipped: %+v", p.SkippedLines(), p.Stats())
	}
}

// TestProcessRealPermission: under approval mode default the command waits
// for the app's answer; deny keeps it from running, allow runs it.
func TestProcessRealPermission(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allow", false: "deny"}[allow], func(t *testing.T) {
			t.Parallel()
			w := newRealWorld(t)
			p := w.start(t, "default", "")
			if err := p.SendPrompt("[[scenario:write]] make it"); err != nil {
				t.Fatal(err)
			}
			evs := collect(t, p, func(e sessions.Event) bool { return e.Kind == sessions.EvWaitingOnUser || turnEnd(e) })
			ask := last(evs)
			if ask.Kind != sessions.EvWaitingOnUser || ask.Permission == nil || ask.Permission.Tool != "command" {
				t.Fatalf("events %v, want a permission request for a command", kinds(evs))
			}
			if err := p.AnswerPermission(*ask.Permission, allow, ""); err != nil {
				t.Fatal(err)
			}
			evs = collect(t, p, turnEnd)
			_, err := os.Stat(filepath.Join(w.cwd, "build", "out.txt"))
			if ran := err == nil; ran != allow {
				t.Errorf("allow %v: the command ran %v; events %v", allow, ran, kinds(evs))
			}
			if last(evs).Kind != sessions.EvTurnCompleted {
				t.Errorf("events %v, want the turn to complete", kinds(evs))
			}
		})
	}
}

// TestProcessRealCancelAndResume: session/cancel aborts a silent stream; a
// new process loads the session and its turn completes.
func TestProcessRealCancelAndResume(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	p := w.start(t, "yolo", "")
	if err := p.SendPrompt("[[scenario:text]] hi"); err != nil {
		t.Fatal(err)
	}
	var sid string
	evs := collect(t, p, turnEnd)
	for _, e := range evs {
		if e.Kind == sessions.EvSessionInit {
			sid = e.AgentSessionID
		}
	}
	if last(evs).Kind != sessions.EvTurnCompleted || sid == "" {
		t.Fatalf("first turn: %v, session %q", kinds(evs), sid)
	}
	if err := p.SendPrompt("[[scenario:stall]] go"); err != nil {
		t.Fatal(err)
	}
	evs = collect(t, p, func(e sessions.Event) bool { return e.Kind == sessions.EvActivity })
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	evs = append(evs, collect(t, p, turnEnd)...)
	if last(evs).Kind != sessions.EvTurnAborted {
		t.Fatalf("events %v, want the turn aborted", kinds(evs))
	}
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	for range p.Events() {
	}
	if code, sig, err := p.Wait(); code != 0 || sig != "" || err != nil {
		t.Errorf("after closing its input: exit %d signal %q err %v, want a clean exit", code, sig, err)
	}
	q := w.start(t, "yolo", sid)
	if _, err := q.session(); err != nil {
		t.Fatalf("%v; stderr %q", err, q.StderrTail())
	}
	if err := q.SendPrompt("[[scenario:stall]] again"); err != nil {
		t.Fatal(err)
	}
	evs = collect(t, q, turnEnd)
	if last(evs).Kind != sessions.EvTurnCompleted {
		t.Fatalf("resumed: events %v", kinds(evs))
	}
	for _, e := range evs {
		if e.Kind == sessions.EvSessionInit && e.AgentSessionID != sid {
			t.Errorf("resumed session %q, want %q", e.AgentSessionID, sid)
		}
	}
	if reqs := w.api.Requests("stall"); len(reqs) != 2 || !strings.HasSuffix(reqs[1].UserText, "again") {
		t.Errorf("requests %+v, want the stalled one and the resumed one", reqs)
	}
}

// TestProcessRealFailures: the CLI's errors after its own retries are
// classified.
func TestProcessRealFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		scenario string
		kind     sessions.FailureKind
		retryAt  bool
		attempts int
		// in is when the reset is due, when the test knows (0: not checked).
		in time.Duration
	}{
		{"429", sessions.RateLimit, true, 2, 0},
		// A daily quota's RetryInfo does not reach the client: the CLI
		// replaces the message ("You have exhausted your daily quota").
		{"quota", sessions.RateLimit, false, 1, 0},
		// A delay past the CLI's retry ceiling does, in its words.
		{"quota_hourly", sessions.RateLimit, true, 1, time.Hour},
		{"too_long", sessions.ContextOverflow, false, 1, 0},
		{"401", sessions.Auth, false, 0, 0},
		{"403", sessions.Auth, false, 0, 0},
	}
	w := newRealWorld(t)
	p := w.start(t, "yolo", "")
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			sent := time.Now()
			if err := p.SendPrompt("[[scenario:" + c.scenario + "]] hi"); err != nil {
				t.Fatal(err)
			}
			evs := collect(t, p, turnEnd)
			e := last(evs)
			if e.Kind != sessions.EvTurnFailed || e.Failure.Kind != c.kind || e.Failure.RetryAt.IsZero() == c.retryAt {
				t.Errorf("got %v %+v, want a %v failure (reset time %v)", e.Kind, e.Failure, c.kind, c.retryAt)
			}
			if at := e.Failure.RetryAt; c.in > 0 && (at.Before(sent.Add(c.in-time.Second)) || at.After(time.Now().Add(c.in))) {
				t.Errorf("reset at %v, want %v after the prompt (%v)", at, c.in, sent)
			}
			if n := len(w.api.Requests(c.scenario)); c.attempts > 0 && n != c.attempts {
				t.Errorf("%d requests, want %d", n, c.attempts)
			}
			t.Logf("%s: %d requests; %+v", c.scenario, len(w.api.Requests(c.scenario)), e.Failure)
		})
	}
}

// TestProcessRealQueuedPrompt: a prompt sent while a turn runs is not a
// second session/prompt (which would abort the first): it waits and starts
// the next turn, announced as a session init so Apply starts that turn.
// Compact, which ACP cannot do, fails its turn at once with the reason.
func TestProcessRealQueuedPrompt(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	p := w.start(t, "yolo", "")
	if err := p.SendPrompt("[[scenario:text]] first"); err != nil {
		t.Fatal(err)
	}
	if err := p.SendPrompt("second"); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, p, turnEnd)
	if last(evs).Kind != sessions.EvTurnCompleted {
		t.Fatalf("first turn: %v", kinds(evs))
	}
	evs = collect(t, p, turnEnd)
	if len(evs) == 0 || evs[0].Kind != sessions.EvSessionInit || last(evs).Kind != sessions.EvTurnCompleted {
		t.Fatalf("queued turn: %v, want it announced, then completed", kinds(evs))
	}
	reqs := w.api.Requests("text")
	if len(reqs) != 2 || !strings.HasSuffix(reqs[1].UserText, "second") {
		t.Errorf("requests %+v, want the first prompt's, then the queued one's", reqs)
	}
	if err := p.Compact(); err != nil {
		t.Fatal(err)
	}
	evs = collect(t, p, turnEnd)
	if e := last(evs); e.Kind != sessions.EvTurnFailed || !strings.Contains(e.Failure.Message, "no compaction") {
		t.Errorf("compact: %v %+v, want the turn failed with the reason", e.Kind, e.Failure)
	}
}

// hangingTurn is the real `gemini --acp` in a world of its own, mid-turn:
// its prompt is the fake's hang scenario (the model stream never ends), and
// the turn's first activity has come.
func hangingTurn(t *testing.T) *Process {
	t.Helper()
	p := newRealWorld(t).start(t, "yolo", "")
	if err := p.SendPrompt("[[scenario:hang]] go"); err != nil {
		t.Fatal(err)
	}
	collect(t, p, func(e sessions.Event) bool { return e.Kind == sessions.EvActivity })
	return p
}

// TestReapOrphanReal: the real `gemini --acp` mid-turn (which does not exit
// when its input closes) is recognized and stopped; a program that is not
// gemini --acp is left alone.
func TestReapOrphanReal(t *testing.T) {
	t.Parallel()
	p := hangingTurn(t)
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	stopped, err := ReapOrphan(p.PID(), agenttest.StartStamp(t, p.PID()))
	if !stopped || err != nil {
		args, _ := procscan.Cmdline(p.PID())
		t.Fatalf("ReapOrphan(%q) = %v, %v; want stopped", args, stopped, err)
	}
	for range p.Events() {
	}
	_, _, _ = p.Wait()
	if proctree.Alive(p.PID()) {
		t.Error("the orphan still runs")
	}
}

func TestIsGeminiACP(t *testing.T) {
	cases := []struct {
		args []string
		want bool
	}{
		{[]string{"node", "/x/node_modules/.bin/gemini", "--acp"}, true},
		{[]string{"node", "--max-old-space-size=4096", "/x/bundle/gemini.js", "--acp", "--approval-mode", "yolo"}, true},
		{[]string{"node", "/x/node_modules/.bin/gemini", "-p", "hi"}, false},
		{[]string{"node", "/x/other.js", "--acp"}, false},
		{[]string{"--acp"}, false},
	}
	for _, c := range cases {
		if got := isGeminiACP(c.args); got != c.want {
			t.Errorf("isGeminiACP(%q) = %v, want %v", c.args, got, c.want)
		}
	}
	if stopped, err := ReapOrphan(os.Getpid(), ""); stopped || err != nil {
		t.Errorf("ReapOrphan(the test itself) = %v, %v; want left alone", stopped, err)
	}
}

// TestProcessRealKilledMidTurnReadsDead: the agent SIGKILLed mid-turn (alone: its group and its tools
// left running, and not reaped) reads as dead once the exit grace has
// passed, so the runtime interrupts the session at its next tick even when
// a survivor holds stdout open and no exit event comes.
func TestProcessRealKilledMidTurnReadsDead(t *testing.T) {
	t.Parallel()
	p := hangingTurn(t)
	agenttest.KillReadsDead(t, p)
}
