//go:build unix

package toyagent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
	"github.com/session-supervisor/session-supervisor/sessions/copilot/fakeapi"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// The adapter against its real CLI (toycli) and the OpenAI-compatible fake
// model API the Copilot tests use, on loopback.

// TestMain removes the CLI agenttest.Built builds when the tests end.
func TestMain(m *testing.M) { os.Exit(agenttest.RunTests(m)) }

// world is one test's fake API, HOME (where the CLI keeps its sessions)
// and working directory.
type world struct {
	api        *fakeapi.Server
	home, work string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	api, err := fakeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	return &world{api: api, home: t.TempDir(), work: t.TempDir()}
}

// start starts the CLI (toycli, built as toy: ReapOrphan knows the toy by
// its program's name), resuming resume when set; it is killed when the
// test ends.
func (w *world) start(t *testing.T, resume string) *Process {
	t.Helper()
	p, err := Start(sessions.StartOptions{Command: agenttest.Built(t, "./toycli", "toy"), Cwd: w.work, ResumeID: resume, WriteTimeout: 10 * time.Second,
		Env: []string{"HOME=" + w.home, "TOY_API_URL=" + w.api.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Signal(syscall.SIGKILL) })
	return p
}

// startTurn starts a world and a new session, and sends prompt.
func startTurn(t *testing.T, prompt string) (*world, *Process) {
	t.Helper()
	w := newWorld(t)
	p := w.start(t, "")
	if err := p.SendPrompt(prompt); err != nil {
		t.Fatal(err)
	}
	return w, p
}

// waitRequests waits until the fake API has n requests of scenario.
func (w *world) waitRequests(t *testing.T, scenario string, n int) []fakeapi.Entry {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if reqs := w.api.Requests(scenario); len(reqs) >= n || time.Now().After(deadline) {
			if len(reqs) < n {
				t.Fatalf("the fake API has %d requests of %s, want %d", len(reqs), scenario, n)
			}
			return reqs
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A command turn: the tool is open while it runs, its output goes back to
// the model, and the turn completes; at the end of its input the CLI exits.
func TestProcessToolTurn(t *testing.T) {
	w, p := startTurn(t, "[[scenario:tool]] run it")
	evs := agenttest.Until(t, p, "the turn's end", agenttest.Is(sessions.EvTurnCompleted))
	want := []string{"session_init", "session_init", "tool_started", "tool_finished", "activity", "turn_completed"}
	if !slices.Equal(agenttest.Kinds(evs), want) {
		t.Fatalf("events %v, want %v", agenttest.Kinds(evs), want)
	}
	if id := evs[0].AgentSessionID; !strings.HasPrefix(id, "toy_") || evs[1].AgentSessionID != id {
		t.Errorf("session ids %q, %q; want one toy_ id", id, evs[1].AgentSessionID)
	}
	if evs[2].Name != "bash" || evs[2].CallID == "" || evs[3].CallID != evs[2].CallID {
		t.Errorf("tool events %+v, %+v; want bash opened and closed by one call id", evs[2], evs[3])
	}
	if reqs := w.api.Requests("tool"); len(reqs) != 2 || !strings.Contains(reqs[1].ToolOutput, "hi") {
		t.Errorf("requests %+v, want the call and then its output hi", reqs)
	}
	agenttest.ExitsAtEndOfInput(t, p)
}

// A resumed session continues the history the CLI kept under HOME: the
// next request still carries the first prompt's marker.
func TestProcessResume(t *testing.T) {
	w, p := startTurn(t, "[[scenario:text]] first")
	id := agenttest.Until(t, p, "the first turn's end", agenttest.Is(sessions.EvTurnCompleted))[0].AgentSessionID
	_ = p.Signal(syscall.SIGKILL)
	for range p.Events() {
	}
	_, _, _ = p.Wait()

	p = w.start(t, id)
	if err := p.SendPrompt("second"); err != nil {
		t.Fatal(err)
	}
	evs := agenttest.Until(t, p, "the resumed turn's end", agenttest.Is(sessions.EvTurnCompleted))
	if evs[0].AgentSessionID != id {
		t.Errorf("resumed as %q, want %q", evs[0].AgentSessionID, id)
	}
	if reqs := w.api.Requests("text"); len(reqs) != 2 || reqs[1].UserText != "second" {
		t.Errorf("requests %+v, want the second prompt in the first one's session", reqs)
	}
}

// An interrupt cancels the turn in flight (a stalled model stream); the
// prompts sent during it are one next turn, in the same history.
func TestProcessInterruptAndQueuedPrompts(t *testing.T) {
	w, p := startTurn(t, "[[scenario:stall]] go")
	w.waitRequests(t, "stall", 1)
	for _, text := range []string{"a", "b"} {
		if err := p.SendPrompt(text); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	agenttest.Until(t, p, "the abort", agenttest.Is(sessions.EvTurnAborted))
	evs := agenttest.Until(t, p, "the next turn's end", agenttest.Is(sessions.EvTurnCompleted))
	if want := []string{"session_init", "activity", "turn_completed"}; !slices.Equal(agenttest.Kinds(evs), want) {
		t.Errorf("after the interrupt: %v, want %v", agenttest.Kinds(evs), want)
	}
	if reqs := w.api.Requests("stall"); len(reqs) != 2 || reqs[1].UserText != "a\n\nb" {
		t.Errorf("requests %+v, want the stalled one, then both queued prompts as one", reqs)
	}
}

// The CLI killed mid-tool reads as dead (its tool, in a group of its own,
// left running), whatever holds its stdout.
func TestProcessKilledMidToolReadsDead(t *testing.T) {
	_, p := startTurn(t, "[[scenario:slowtool]] go")
	agenttest.Until(t, p, "the tool's start", agenttest.Is(sessions.EvToolStarted))
	var tools []int
	for deadline := time.Now().Add(10 * time.Second); len(tools) == 0 && time.Now().Before(deadline); {
		tools = proctree.Descendants(p.PID())
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		// The tool's whole group (the toy starts it in a group of its
		// own): its shell may fork the sleep after the listing above.
		for _, pid := range tools {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	agenttest.KillReadsDead(t, p)
}

// An orphan (its input gone, its turn stalled, so it never exits) is
// reaped when its start stamp is the one recorded, and left alone with
// another (its pid reused by a later process); a process that is not the
// toy is left alone.
func TestReapOrphan(t *testing.T) {
	w, p := startTurn(t, "[[scenario:stall]] go")
	w.waitRequests(t, "stall", 1)
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	stamp := agenttest.StartStamp(t, p.PID())
	if stopped, err := (Agent{}).ReapOrphan(p.PID(), stamp+"0"); stopped || err != nil || !proctree.Alive(p.PID()) {
		t.Fatalf("ReapOrphan with another start stamp = %v, %v; want the CLI left running", stopped, err)
	}
	if stopped, err := (Agent{}).ReapOrphan(p.PID(), stamp); !stopped || err != nil {
		t.Fatalf("ReapOrphan = %v, %v; want the stalled CLI stopped", stopped, err)
	}
	for range p.Events() {
	}
	if _, sig, _ := p.Wait(); sig == "" {
		t.Error("the reaped CLI exited by itself; want it signalled")
	}
	if stopped, err := (Agent{}).ReapOrphan(os.Getpid(), ""); stopped || err != nil {
		t.Errorf("ReapOrphan(the test itself) = %v, %v; want left alone", stopped, err)
	}
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"/x/toy", "--stream"}, true},
		{[]string{"toy", "--stream", "--resume", "toy_1"}, true},
		{[]string{"/x/toy"}, false},
		{[]string{"/x/toy", "--help"}, false},
		{[]string{"/x/claude", "--stream"}, false},
	} {
		if got := isToy(tc.args); got != tc.want {
			t.Errorf("isToy(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// Lines that mean nothing are counted, not fatal; what the toy cannot do
// fails at once.
func TestProcessSkipsAndRefusals(t *testing.T) {
	script := filepath.Join(t.TempDir(), "toy")
	body := "#!/bin/sh\necho '{\"type\":\"text\",\"text\":\"x\"}'\necho 'junk'\necho '{\"type\":\"nope\"}'\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := Start(sessions.StartOptions{Command: script, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var evs []sessions.Event
	for ev := range p.Events() {
		evs = append(evs, ev)
	}
	_, _, _ = p.Wait()
	if !slices.Equal(agenttest.Kinds(evs), []string{"activity"}) || p.SkippedLines() != 2 {
		t.Errorf("events %v skipped %d; want the text alone and two skipped lines", agenttest.Kinds(evs), p.SkippedLines())
	}
	if p.Compact() == nil || p.AnswerPermission(sessions.Permission{}, true, "") == nil {
		t.Error("Compact or AnswerPermission succeeded; the toy can do neither")
	}
	if _, err := Start(sessions.StartOptions{Command: script, ResumeID: "--evil"}); err == nil {
		t.Error("Start took a resume id that reads as a flag")
	}
	if _, err := Start(sessions.StartOptions{Command: filepath.Join(t.TempDir(), "missing")}); err == nil ||
		!strings.Contains(err.Error(), "agents.toy.command") {
		t.Errorf("Start of a missing command: %v; want the error to name the setting", err)
	}
}
