//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/copilot/copilotterm"
	"github.com/session-supervisor/session-supervisor/sessions/copilot/fakeapi"
)

// copilotTUI is the app and one real interactive Copilot CLI (the TUI) in
// a pseudo-terminal, both on a temporary COPILOT_HOME, BYOK on the fake
// chat completions API, offline, everything else refused by the proxy
// (copilotE2EStart). The TUI needs no login with BYOK and COPILOT_OFFLINE
// (measured on 1.0.102); the working directory is trusted beforehand in
// config.json (trusted_folders), which spares the folder-trust dialog.
type copilotTUI struct {
	*agentTUI
	h           *cpe2e
	copilotHome string
}

// startCopilotTUI starts the app (with settings, name-value pairs) and the
// TUI (with env added to the hermetic environment).
func startCopilotTUI(t *testing.T, env []string, settings ...string) *copilotTUI {
	return startCopilotTUIOn(t, copilotE2EStart(t, settings...), env)
}

// startCopilotTUIOn starts the TUI on the app h started.
func startCopilotTUIOn(t *testing.T, h *cpe2e, env []string) *copilotTUI {
	bin := fakeapi.CopilotBinary(t)
	copilotHome := filepath.Join(h.home, ".copilot")
	if err := os.MkdirAll(copilotHome, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"trusted_folders": [%q]}`, h.work)
	if err := os.WriteFile(filepath.Join(copilotHome, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The npm `copilot` is a Node loader that spawnSyncs the native TUI:
	// the session is its child.
	w := &copilotTUI{h: h, copilotHome: copilotHome, agentTUI: startAgentTUI(t, h.agentE2E, "Copilot", 50*time.Millisecond,
		tuiRecords{"events", filepath.Join(".copilot", "session-state", "*", "events.jsonl"), 160},
		exec.Command(bin), env...)}
	s := w.listed(60 * time.Second)
	ws, err := copilotterm.ReadWorkspace(filepath.Join(w.copilotHome, "session-state", s.AgentSessionID))
	if s.AgentSessionID == "" || err != nil || ws.ID != s.AgentSessionID {
		w.fail("the session id %q names no session directory: %v", s.AgentSessionID, err)
	}
	t.Logf("Copilot created the session %s after the start", ws.Created.Sub(w.start).Round(time.Millisecond))
	if s.Cwd != h.work || s.State != sessions.Idle {
		w.fail("before the first prompt: %+v", s)
	}
	// The prompt line is drawn with the status bar ("… · tab next tab").
	w.drawn(60*time.Second, "next tab", "drew its prompt")
	time.Sleep(time.Second) // the input box takes keys a moment after it is drawn
	return w
}

// The TUI is found in the process table as it starts, paired with its
// session directory, and followed through a turn from its events.jsonl:
// working, waiting on the user while the command waits for approval in the
// terminal, working again once approved, then waiting for review — the
// app's own prompt-mode turns are never listed (none ran here, and none of
// the listed sessions is managed).
func TestTerminalCopilotRealTUI(t *testing.T) {
	t.Parallel()
	w := startCopilotTUI(t, nil)
	// A managed session beside it, in the same COPILOT_HOME: its turn's
	// `copilot` process is the same native binary, in prompt mode.
	managed := w.h.launch("[[scenario:text]] hi")
	w.typeLine("run it [[scenario:tool]]")
	s := w.observed(30*time.Second, "working", func(s sessions.Session) bool { return s.State == sessions.Working && s.InTurn })
	t.Logf("working: %s", s.Evidence)
	p := w.observed(30*time.Second, "waiting for the approval", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitPermission && s.InTurn
	})
	t.Logf("permission: %s", p.Evidence)
	// Approved where it runs ("1. Yes" is selected: Enter), again while a
	// slow machine has not taken it yet.
	w.pressUntil("\r", 3*time.Second, 60*time.Second, func(s sessions.Session) bool { return s.WaitReason != sessions.WaitPermission },
		"the approval never reached the events")
	r := w.observed(30*time.Second, "waiting on the user for review", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.TurnGeneration == 1
	})
	if r.Name != "run it [[scenario:tool]]" || r.AgentSessionID != s.AgentSessionID {
		w.fail("the name %q is not the prompt, or the session id changed: %+v", r.Name, r)
	}
	// The turn's model calls (session.usage_record in events.jsonl) are
	// the session's usage.
	u := w.observed(10*time.Second, "with the turn's usage", func(s sessions.Session) bool { return s.Usage.Total.Total().Output > 0 })
	if models := u.Usage.Total.Models(); len(models) != 1 || u.Usage.Total.Total().Input <= 0 {
		w.fail("usage %+v, want one model's input and output", u.Usage.Total)
	}
	// The command really ran: its output went back to the model.
	if reqs := w.h.api.Requests("tool"); len(reqs) == 0 || !strings.Contains(reqs[len(reqs)-1].ToolOutput, "hi") {
		w.fail("the fake saw %+v, want the command's output last", reqs)
	}
	m := w.h.waitFor(managed, "the managed turn's review", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.TurnGeneration == 1
	})
	if reqs := w.h.api.Requests("text"); len(reqs) == 0 {
		w.fail("the managed turn never reached the fake")
	}
	var observed []sessions.Session
	for _, s := range w.h.ls() {
		if s.Source == sessions.Observed {
			observed = append(observed, s)
		}
	}
	if len(observed) != 1 || observed[0].AgentSessionID == m.AgentSessionID || m.Source != sessions.Managed {
		w.fail("the app's own prompt-mode turn was observed as a terminal session: %+v (managed %+v)", observed, m)
	}
	t.Logf("evidence: %s (%s after the start)", r.Evidence, time.Since(w.start).Round(time.Millisecond))
}

// With Copilot's own API (the fake standing in for it: its account, its
// models, its answers), the account's weekly rate limit reaches the
// terminal session from events.jsonl: the failure's reset about two hours
// out and the weekly window spent until then.
func TestTerminalCopilotRealTUIWeeklyLimit(t *testing.T) {
	t.Parallel()
	// With its own API the CLI also asks api.github.com twice (measured,
	// with -p and the TUI alike): refused by the proxy.
	h := copilotE2EStartWith(t, e2eOpts{refusedOK: 2})
	url := "http://" + h.api.Addr()
	// The BYOK provider and offline mode of the hermetic environment off,
	// the fake as the CLI's own API (fakeapi.CopilotAPIEnv).
	w := startCopilotTUIOn(t, h, []string{"COPILOT_OFFLINE=", "COPILOT_PROVIDER_BASE_URL=", "COPILOT_PROVIDER_TYPE=", "COPILOT_PROVIDER_API_KEY=",
		"COPILOT_GITHUB_TOKEN=gho_fake", "COPILOT_DEBUG_GITHUB_API_URL=" + url, "COPILOT_API_URL=" + url})
	typed := time.Now()
	w.typeLine("go [[scenario:weekly_limit]]")
	s := w.observed(60*time.Second, "rate limited with its weekly window", func(s sessions.Session) bool {
		return s.Failure.Kind == sessions.RateLimit && len(s.RateWindows) > 0
	})
	if at := s.Failure.RetryAt; at.Before(typed.Add(fakeapi.WeeklyLimitRetryAfter-time.Second)) || at.After(time.Now().Add(fakeapi.WeeklyLimitRetryAfter)) ||
		s.RateWindows[0].Kind != "weekly" || !s.RateWindows[0].Rejected() || !s.RateWindows[0].ResetsAt.Equal(at) {
		w.fail("failure %+v windows %+v, want the weekly limit spent about two hours from the prompt", s.Failure, s.RateWindows)
	}
	t.Logf("%s: %+v; %+v", s.State, s.Failure, s.RateWindows)
}

// Killed mid-turn (SIGKILL of the terminal's processes while its command
// runs): the process is gone, the events show no end of the turn, and the
// app shows Interrupted and escalates; nothing is sent to it (it has no
// way in). COPILOT_ALLOW_ALL spares the approval.
func TestTerminalCopilotRealTUIKilledMidTurn(t *testing.T) {
	t.Parallel()
	w := startCopilotTUI(t, []string{"COPILOT_ALLOW_ALL=true"})
	w.typeLine("run the slow one [[scenario:slowtool]]")
	w.observed(30*time.Second, "running the command", func(s sessions.Session) bool {
		return s.State == sessions.Working && strings.Contains(s.Evidence, "command")
	})
	if err := syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s := w.observed(30*time.Second, "interrupted and escalated", func(s sessions.Session) bool {
		return s.State == sessions.Interrupted && s.NeedsAttention && !s.ProcessAlive
	})
	if s.Nudge.Attempts != 0 || w.h.nudged("slowtool") {
		w.fail("nudged a terminal Copilot: %+v", s.Nudge)
	}
	t.Logf("evidence: %s", s.Evidence)
	// "Resume in the background": a managed Copilot session on the same
	// session id, with the nudge, which the model answers.
	id := strings.TrimSpace(w.h.mustCLI("resume", s.ID))
	r := w.h.waitForWithin(id, "the resumed turn's review", 90*time.Second, func(r sessions.Session) bool {
		return r.State == sessions.WaitingOnUser && r.WaitReason == sessions.WaitReview
	})
	if r.Source != sessions.Managed || r.Agent != "copilot" || r.AgentSessionID != s.AgentSessionID || r.ResumedFrom != s.ID || !w.h.nudged("slowtool") {
		w.fail("the resumed session: %+v", r)
	}
	t.Logf("resumed in the background: %s", r.Evidence)
}

// A turn that fails on 401 (after Copilot's own retries): Errored (auth)
// from the session.error in its events; the auth wait passes, and the
// continue the recovery would send cannot reach a Copilot terminal (no
// inbox): the app escalates with the evidence, and the model never sees a
// nudge.
func TestTerminalCopilotRealTUIAuthEscalates(t *testing.T) {
	t.Parallel()
	w := startCopilotTUI(t, nil, "supervisor.auth_retry_minutes", "0.05")
	w.typeLine("hello [[scenario:401]]")
	w.authEscalated(60*time.Second, "no way in")
}
