package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// TestMain removes the scripted fake CLI (buildFake) when the tests end.
func TestMain(m *testing.M) { os.Exit(agenttest.RunTests(m)) }

// buildFake builds the scripted fake CLI once per test binary.
func buildFake(t *testing.T) string {
	t.Helper()
	return agenttest.Built(t, "./fakeclaude", "fakeclaude")
}

func startFake(t *testing.T, script string) *Process {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Start(ProcessOptions{Options: agentkit.Options{Command: buildFake(t), Cwd: t.TempDir(), Env: []string{"FAKE_CLAUDE_SCRIPT=" + path}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Signal(os.Kill) })
	return p
}

func TestProcessTurnAndExit(t *testing.T) {
	p := startFake(t, `{"turns":[[
		{"emit":{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]},"session_id":"$SESSION"}},
		{"raw":"not json"},
		{"emit":{"type":"result","subtype":"success","is_error":false,"session_id":"$SESSION"}},
		{"exit":3}]]}`)
	if err := p.SendPrompt("hello"); err != nil {
		t.Fatal(err)
	}
	var evs []sessions.Event
	for e := range p.Events() {
		evs = append(evs, e)
	}
	code, sig, err := p.Wait()
	if err != nil || code != 3 || sig != "" {
		t.Fatalf("Wait = %d %q %v, want exit code 3", code, sig, err)
	}
	got := kinds(evs)
	if got != "session_init activity turn_completed" {
		t.Errorf("events %s", got)
	}
	if p.SkippedLines() != 1 {
		t.Errorf("skipped %d lines, want 1 (the garbage line)", p.SkippedLines())
	}
	if err := p.SendPrompt("again"); err == nil {
		t.Error("writing after the process exited should fail")
	}
}

func TestProcessKilledBySignal(t *testing.T) {
	p := startFake(t, `{"turns":[[{"kill":true}]]}`)
	if err := p.SendPrompt("hello"); err != nil {
		t.Fatal(err)
	}
	for range p.Events() {
	}
	code, sig, err := p.Wait()
	if err != nil || sig != "killed" || code != -1 {
		t.Fatalf("Wait = %d %q %v, want killed", code, sig, err)
	}
}

// An agent that died while something still holds its stdout never sends
// an exit event; Alive tells, after a short grace.
func TestProcessAliveProbe(t *testing.T) {
	p := startFake(t, `{"turns":[[{"sleep_ms":60000}]]}`)
	if alive, known := p.Alive(); !alive || !known {
		t.Fatalf("running process: Alive = %v, %v", alive, known)
	}
	// Kill only the agent (not its group) and do not reap it: a zombie.
	if err := p.Cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		alive, known := p.Alive()
		if known && !alive {
			break
		}
		if alive && known && time.Now().After(deadline) {
			t.Fatal("the killed process still reads as alive")
		}
		if time.Now().After(deadline.Add(agentkit.ExitGrace)) {
			t.Fatal("Alive never became sure the process is dead")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStartMissingCommandNamesTheSetting(t *testing.T) {
	_, err := Start(ProcessOptions{Options: agentkit.Options{Command: "/nonexistent/claude", Cwd: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), CommandSetting) {
		t.Fatalf("err = %v, want it to name %s", err, CommandSetting)
	}
}

func TestGracefulCloseFinishesTheTurn(t *testing.T) {
	p := startFake(t, `{"turns":[[{"sleep_ms":300},
		{"emit":{"type":"result","subtype":"success","is_error":false,"session_id":"$SESSION"}}]]}`)
	if err := p.SendPrompt("hello"); err != nil {
		t.Fatal(err)
	}
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	var last sessions.Event
	for e := range p.Events() {
		last = e
	}
	if last.Kind != sessions.EvTurnCompleted {
		t.Fatalf("last event %s, want the turn to complete after stdin closed", last.Kind)
	}
	if code, _, _ := p.Wait(); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
