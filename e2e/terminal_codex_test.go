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
	"github.com/session-supervisor/session-supervisor/sessions/codex/fakeapi"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// codexTUI is the app and one real interactive Codex (the TUI) in a
// pseudo-terminal, both on a temporary CODEX_HOME against the fake
// Responses API.
//
// --no-daemon: by default the 0.171.0 TUI installs an app-server daemon
// into CODEX_HOME/packages (424 MB copied on the first run) that writes the
// rollouts and outlives the TUI (re-parented to init). The discovery is the
// same either way (the TUI process, its cwd and start, the rollout by cwd
// and time — measured by hand in daemon mode: listed 2.3 s after the start,
// paired at the first prompt, two turns followed); without the daemon the
// TUI also holds its rollout open, which pairs it exactly. The test spares
// the copy and the stray daemon.
type codexTUI struct {
	*agentTUI
	h         *cxe2e
	codexHome string
}

func startCodexTUI(t *testing.T, cfg fakeapi.Config, settings ...string) *codexTUI {
	h := codexE2EStart(t, cfg, settings...)
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

	// The npm `codex` is a Node wrapper: the session is its native child.
	w := &codexTUI{h: h, codexHome: codexHome, agentTUI: startAgentTUI(t, h.agentE2E, "Codex", 50*time.Millisecond,
		tuiRecords{"rollouts", filepath.Join(".codex", "sessions", "*", "*", "*", "*.jsonl"), 160},
		exec.Command(codexBin, "--no-daemon"))}
	s := w.listed(30 * time.Second)
	if s.Cwd != h.work || s.State != sessions.Idle || s.AgentSessionID != "" {
		w.fail("before the first prompt: %+v", s)
	}
	w.drawn(30*time.Second, "state=idle", "said it was ready")
	return w
}

// submit types the prompt and Enter as a person does who watches the
// screen: again while the TUI has not taken it. On a busy machine the
// 0.171.0 TUI dropped a prompt typed once it said it was ready (a CI run:
// its banner drawn, the composer empty, no rollout 30 s later). Taken
// means a rollout exists (the TUI writes one at the first prompt); what
// the composer may hold is cleared (Ctrl-U) before the next try, so a
// prompt is never sent twice.
func (w *codexTUI) submit(prompt string) {
	w.t.Helper()
	taken := func() bool {
		m, _ := filepath.Glob(filepath.Join(w.codexHome, "sessions", "*", "*", "*", "*.jsonl"))
		return len(m) > 0
	}
	for try := 1; ; try++ {
		w.typeLine(prompt)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if taken() {
				return
			}
		}
		if try == 3 {
			w.fail("the TUI took no prompt in %d tries", try)
		}
		w.t.Logf("the TUI took no prompt within 10 s (try %d): typing it again", try)
		if _, err := w.ptmx.Write([]byte{0x15}); err != nil {
			w.t.Fatal(err)
		}
	}
}

// The TUI is found in the process table, paired with the rollout it writes
// at the first prompt, and followed through the turn (working, its
// command, then waiting on the user for review), as `ls --json` shows.
func TestTerminalCodexRealTUI(t *testing.T) {
	t.Parallel()
	w := startCodexTUI(t, fakeapi.Config{})
	w.submit("run it [[scenario:tool]]")
	// The command runs a second (sleep 1; echo hi): seen working on it.
	s := w.observed(30*time.Second, "working", func(s sessions.Session) bool { return s.State == sessions.Working && s.InTurn })
	t.Logf("working: %s", s.Evidence)
	r := w.observed(30*time.Second, "waiting on the user for review", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.TurnGeneration == 1
	})
	m, _ := filepath.Glob(filepath.Join(w.codexHome, "sessions", "*", "*", "*", "rollout-*-"+r.AgentSessionID+".jsonl"))
	if r.AgentSessionID == "" || len(m) != 1 || r.Name != "run it [[scenario:tool]]" {
		w.fail("the thread id %q names no rollout (%v), or the name %q is not the prompt", r.AgentSessionID, m, r.Name)
	}
	// The command really ran: its output went back to the model.
	if reqs := w.h.api.Requests("tool"); len(reqs) == 0 || !strings.Contains(reqs[len(reqs)-1].ToolOutput, "hi") {
		w.fail("the fake saw %+v, want the command's output last", reqs)
	}
	// What the turn used, from the rollout's token counts: the thread's
	// running total under the turn's model.
	u := w.observed(10*time.Second, "with the turn's usage", func(s sessions.Session) bool { return s.Usage.Total.Total().Output > 0 })
	if models := u.Usage.Total.Models(); len(models) != 1 || models[0] == "unknown" || u.Usage.Total.Total().Input+u.Usage.Total.Total().CacheRead <= 0 {
		w.fail("usage %+v, want one model's input and output", u.Usage.Total)
	}
	t.Logf("evidence: %s (%s after the start); usage %+v", r.Evidence, time.Since(w.start).Round(time.Millisecond), u.Usage.Total)
}

// The plan's windows Codex writes into the rollout's token counts (from
// the fake's x-codex-* headers: fakeapi.PlanWindowHeader) reach the
// terminal session as they reach a managed one: the primary window 42%
// used and resetting in about two hours, the secondary 12%.
func TestTerminalCodexRealTUIPlanWindows(t *testing.T) {
	t.Parallel()
	w := startCodexTUI(t, fakeapi.Config{})
	start := time.Now()
	w.submit("plan it [[scenario:plan]]")
	s := w.observed(60*time.Second, "with its plan windows", func(s sessions.Session) bool { return len(s.RateWindows) == 2 })
	for _, rw := range s.RateWindows {
		want := map[string]float64{"primary": 42, "secondary": 12}[rw.Kind]
		if rw.Used != want || rw.Length == 0 || rw.ResetsAt.Before(start.Add(time.Hour)) {
			w.fail("window %+v, want %s %v%% used, its length and a reset in hours", rw, rw.Kind, want)
		}
	}
	t.Logf("windows %+v (%s after the prompt)", s.RateWindows, time.Since(start).Round(time.Millisecond))
}

// Under approval_policy on-request a command that must leave the sandbox
// is put to the user in the terminal; the rollout shows the call asking
// for it with no output, and the app shows Waiting on user (permission)
// until it is approved where it runs.
func TestTerminalCodexRealTUIApproval(t *testing.T) {
	t.Parallel()
	w := startCodexTUI(t, fakeapi.Config{ApprovalPolicy: "on-request"})
	w.submit("make the build dir [[scenario:write]]")
	s := w.observed(30*time.Second, "waiting for permission", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitPermission && s.InTurn
	})
	t.Logf("evidence: %s", s.Evidence)
	// Approved where it runs: "y" once the dialog is drawn, again while
	// a slow machine has not taken it yet.
	w.drawn(30*time.Second, "Yes, proceed", "drew an approval prompt")
	w.pressUntil("y", 2*time.Second, 60*time.Second, func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.TurnGeneration == 1
	}, "no review after the approved command")
	if _, err := os.Stat(filepath.Join(w.h.work, "build", "out.txt")); err != nil {
		w.fail("the approved command did not run: %v", err)
	}
}

// Killed mid-turn (SIGKILL while its command runs): the process is gone,
// the rollout shows no end of the turn, and the app shows Interrupted and
// escalates; nothing is sent to it (it has no way in) and nothing typed.
// "Resume in the background" (`resume ID` after the escalation, or by
// itself with supervisor.resume_terminal_sessions) launches the app's
// managed Codex (`codex app-server`, thread/resume) on the same thread, in
// the same directory, on the same CODEX_HOME and fake API (the app and the
// TUI share one environment), with the constant nudge: that turn completes,
// both ends record the other, and the terminal session leaves the
// needs-attention set.
func TestTerminalCodexRealTUIKilledMidTurn(t *testing.T) {
	t.Parallel()
	for _, auto := range []bool{false, true} {
		t.Run(map[bool]string{false: "escalated then resumed by the user", true: "resumed by the setting"}[auto], func(t *testing.T) {
			var settings []string
			if auto {
				settings = []string{"supervisor.resume_terminal_sessions", "true", "supervisor.tick_seconds", "5"}
			}
			w := startCodexTUI(t, fakeapi.Config{}, settings...)
			w.submit("run the slow one [[scenario:slowtool]]")
			s := w.observed(30*time.Second, "running the command", func(s sessions.Session) bool {
				return s.State == sessions.Working && strings.Contains(s.Evidence, "exec_command")
			})
			thread := s.AgentSessionID
			if err := syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			if !auto {
				s = w.observed(30*time.Second, "interrupted and escalated", func(s sessions.Session) bool {
					return s.State == sessions.Interrupted && s.NeedsAttention && !s.ProcessAlive
				})
				// The TUI's one request (its title request is filed apart):
				// nothing reached the thread after the kill.
				if reqs := w.h.api.Requests("slowtool"); s.Nudge.Attempts != 0 || len(reqs) != 1 {
					w.fail("reached into a Codex terminal: %+v, the fake saw %+v", s.Nudge, reqs)
				}
				t.Logf("escalated %s after the kill: %s", time.Since(killed).Round(time.Millisecond), s.Evidence)
				w.h.mustCLI("resume", s.ID)
			}
			// The terminal session settles, pointing at the managed one.
			s = w.observed(60*time.Second, "resumed", func(s sessions.Session) bool {
				return s.State == sessions.Idle && !s.NeedsAttention && strings.Contains(s.Evidence, "resumed in the background")
			})
			var managed sessions.Session
			for _, m := range w.h.ls() {
				if m.ResumedFrom == s.ID {
					managed = m
				}
			}
			if managed.ID == "" {
				w.fail("no managed session resumed from %s", s.ID)
			}
			m := w.h.waitFor(managed.ID, "the resumed turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
			t.Logf("the resumed turn completed %s after the kill: %s", time.Since(killed).Round(time.Millisecond), m.Evidence)
			if m.Source != sessions.Managed || m.Agent != "codex" || m.Cwd != w.h.work || m.AgentSessionID != thread || thread == "" {
				w.fail("resumed as %+v, want a managed codex session in %s on thread %s", m, w.h.work, thread)
			}
			// The nudge was the last user input of a request on the thread:
			// the request is filed under slowtool because its history holds
			// the TUI's prompt (the marker is nowhere else), so the app
			// server resumed the TUI's thread, not a new one.
			reqs := w.h.api.Requests("slowtool")
			if len(reqs) < 2 || reqs[0].UserText == core.NudgeText || !w.h.nudged("slowtool") {
				w.fail("the fake saw %+v, want the TUI's request, then the nudge", reqs)
			}
			// The managed app server is the app's own: never listed as a
			// terminal session.
			for _, o := range w.h.ls() {
				if o.Source == sessions.Observed && o.ID != s.ID {
					w.fail("the app's own Codex was observed as a terminal session: %+v", o)
				}
			}
			by := map[bool]string{false: "user", true: "supervisor"}[auto]
			for id, kind := range map[string]string{s.ID: "resumed_as", managed.ID: "resumed_from"} {
				row := w.h.findRow(w.h.timeline(id), kind)
				if row.detail()["by"] != by {
					t.Errorf("%s's %s row was not by the %s: %s", id, kind, by, row.Detail)
				}
			}
			if s = w.h.show(s.ID); s.NeedsAttention || s.State != sessions.Idle {
				w.fail("the terminal session after the resume: %+v", s)
			}
		})
	}
}

// A turn that fails on 401: Errored (auth) from the rollout's
// codex_error_info; the auth wait passes, and the continue recovery would
// send cannot reach a Codex terminal (no inbox): the app escalates with the
// evidence instead, and the model never sees a nudge.
func TestTerminalCodexRealTUIAuthEscalates(t *testing.T) {
	t.Parallel()
	w := startCodexTUI(t, fakeapi.Config{}, "supervisor.auth_retry_minutes", "0.05")
	w.submit("hello [[scenario:401]]")
	w.authEscalated(30*time.Second, "offers no way in")
}
