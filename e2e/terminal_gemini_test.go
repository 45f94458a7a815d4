//go:build linux

package e2e

// The real interactive Gemini CLI (the TUI, 0.61.0) in a pseudo-terminal,
// observed by the app from outside (sessions/gemini/geminiterm): both on a
// temporary HOME, the CLI against the fake Gemini API with every other
// request refused by the loopback proxy (sessions/gemini/fakeapi).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/gemini/fakeapi"
)

// geminiTUI is the app and one real interactive Gemini CLI in a
// pseudo-terminal. The CLI relaunches itself once (a second Node process
// with a larger heap): the session is that child.
type geminiTUI struct {
	*agentTUI
	h *gme2e
}

func startGeminiTUI(t *testing.T, settings []string, args ...string) *geminiTUI {
	h := geminiE2EStart(t, settings...)
	w := &geminiTUI{h: h, agentTUI: startAgentTUI(t, h.agentE2E, "Gemini", 100*time.Millisecond,
		tuiRecords{"chat files", filepath.Join(".gemini", "tmp", "*", "chats", "*.jsonl"), 200},
		exec.Command(fakeapi.GeminiBinary(t), args...))}
	s := w.listed(60 * time.Second)
	if s.Cwd != h.work || s.State != sessions.Idle || s.InTurn {
		w.fail("before the first prompt: %+v", s)
	}
	// The window title says Ready once the input takes prompts.
	w.drawn(60*time.Second, "Ready (", "drew its prompt")
	return w
}

// send types a prompt selecting scenario, then Enter as a separate write,
// as a person types; Enter is pressed again while the fake has not seen the
// prompt (measured: an Enter that follows the text too closely, or comes
// while the TUI still starts, is taken into the input as part of a paste).
func (w *geminiTUI) send(text, scenario string) {
	w.t.Helper()
	if _, err := w.ptmx.Write([]byte(text)); err != nil {
		w.t.Fatal(err)
	}
	// Enter again only when the last one was evidently not taken: on a
	// busy machine the request comes seconds after the Enter, and a second
	// Enter would land on the dialog the reply opens and approve it.
	time.Sleep(time.Second)
	for deadline := time.Now().Add(60 * time.Second); ; {
		if _, err := w.ptmx.Write([]byte("\r")); err != nil {
			w.t.Fatal(err)
		}
		for taken := time.Now().Add(15 * time.Second); time.Now().Before(taken); time.Sleep(100 * time.Millisecond) {
			if len(w.h.api.Requests(scenario)) > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			w.fail("the TUI never sent the prompt")
		}
	}
}

// The TUI is found in the process table (the relaunched child, not the
// launcher), paired with its chat file by the cwd's hash, and followed
// through a turn with a command (working, then waiting on the user for
// review), as `ls --json` shows; its session id is Gemini's.
func TestTerminalGeminiRealTUI(t *testing.T) {
	t.Parallel()
	// The command takes seconds, so that the turn is seen working through
	// `ls` (a quick turn ends between two looks; the tool is run without a
	// prompt: sleep is not on the CLI's read-only list).
	w := startGeminiTUI(t, nil, "--approval-mode", "yolo")
	w.h.api.Handle("slowecho", func(_ int, out string) fakeapi.Reply {
		if out != "" {
			return fakeapi.Reply{Text: "The command printed: " + strings.TrimSpace(out)}
		}
		// Long enough to be seen working by a loaded machine's poll: 4 s
		// was missed once (the turn first seen already complete).
		return fakeapi.Reply{Command: "sleep 10 && echo hi"}
	})
	w.send("run it [[scenario:slowecho]]", "slowecho")
	s := w.observed(60*time.Second, "working", func(s sessions.Session) bool { return s.State == sessions.Working && s.InTurn })
	t.Logf("working after %s: %s", time.Since(w.start).Round(time.Millisecond), s.Evidence)
	r := w.observed(60*time.Second, "waiting on the user for review", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.TurnGeneration == 1
	})
	m, _ := filepath.Glob(filepath.Join(w.h.home, ".gemini", "tmp", "*", "chats", "session-*-"+r.AgentSessionID[:min(8, len(r.AgentSessionID))]+".jsonl"))
	if len(r.AgentSessionID) != 36 || len(m) != 1 || r.Name != "run it [[scenario:slowecho]]" {
		w.fail("the session id %q names no chat file (%v), or the name %q is not the prompt", r.AgentSessionID, m, r.Name)
	}
	// The command really ran: its output went back to the model.
	if reqs := w.h.api.Requests("slowecho"); len(reqs) != 2 || !strings.Contains(reqs[len(reqs)-1].ToolOutput, "hi") {
		w.fail("the fake saw %+v, want the command's output last", reqs)
	}
	// What the turn used, from the chat file's token counts: its two
	// replies, each once, under the model that answered.
	u := w.observed(10*time.Second, "with the turn's usage", func(s sessions.Session) bool { return s.Usage.Total.Total().Output > 0 })
	if models := u.Usage.Total.Models(); len(models) != 1 || models[0] == "unknown" || u.Usage.Total.Total().Input <= 0 {
		w.fail("usage %+v, want one model's input and output", u.Usage.Total)
	}
	t.Logf("evidence: %s (%s after the start); usage %+v", r.Evidence, time.Since(w.start).Round(time.Millisecond), u.Usage.Total)
}

// Killed mid-turn (SIGKILL of the whole terminal session while its command
// runs under yolo): the process is gone, the chat file shows no end of the
// turn, and the app shows Interrupted and escalates; nothing is sent to it
// (it has no way in). With supervisor.resume_terminal_sessions on, the app
// instead resumes the same Gemini session in the background (managed, over
// ACP), which completes the work.
func TestTerminalGeminiRealTUIKilledMidTurn(t *testing.T) {
	t.Parallel()
	for _, auto := range []bool{false, true} {
		t.Run(map[bool]string{false: "escalated", true: "resumed by the setting"}[auto], func(t *testing.T) {
			var settings []string
			if auto {
				settings = []string{"supervisor.resume_terminal_sessions", "true", "supervisor.tick_seconds", "5"}
			}
			w := startGeminiTUI(t, settings, "--approval-mode", "yolo")
			w.send("run the slow one [[scenario:slowtool]]", "slowtool")
			s := w.observed(60*time.Second, "running the command", func(s sessions.Session) bool {
				return s.State == sessions.Working && strings.Contains(s.Evidence, "running a tool")
			})
			sid := s.AgentSessionID
			if err := syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if !auto {
				s := w.observed(60*time.Second, "interrupted and escalated", func(s sessions.Session) bool {
					return s.State == sessions.Interrupted && s.NeedsAttention && !s.ProcessAlive
				})
				if s.Nudge.Attempts != 0 || len(w.h.api.Requests("slowtool")) != 1 {
					w.fail("reached into a Gemini terminal: %+v, %d requests", s.Nudge, len(w.h.api.Requests("slowtool")))
				}
				t.Logf("evidence: %s", s.Evidence)
				return
			}
			var managed sessions.Session
			for deadline := time.Now().Add(180 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				for _, m := range w.h.ls() {
					if m.ResumedFrom == s.ID {
						managed = m
					}
				}
				if managed.State == sessions.WaitingOnUser && managed.WaitReason == sessions.WaitReview {
					break
				}
				if time.Now().After(deadline) {
					_, tl, _ := w.h.cli("timeline", managed.ID)
					w.fail("the resumed session did not complete: %+v\n%s", managed, tl)
				}
			}
			// The managed `gemini --acp` (and its relaunched child) is the
			// app's own: never listed as a terminal session.
			for _, m := range w.h.ls() {
				if m.Source == sessions.Observed && m.ID != s.ID {
					w.fail("the app's own Gemini process was observed as a terminal session: %+v", m)
				}
			}
			reqs := w.h.api.Requests("slowtool")
			if managed.Source != sessions.Managed || managed.Agent != "gemini" || managed.AgentSessionID != sid || len(reqs) < 2 {
				w.fail("resumed as %+v (want a managed gemini session on %s), the fake saw %d requests", managed, sid, len(reqs))
			}
			t.Logf("resumed as %s on %s: %s", managed.ID, sid, managed.Evidence)
		})
	}
}

// In the default approval mode a command that writes is put to the user in
// the terminal; the chat file shows the model's call with nothing written
// for it and nothing runs under the CLI, so the app shows Waiting on user
// (permission) until it is allowed where it runs, then the turn's review.
func TestTerminalGeminiRealTUIApproval(t *testing.T) {
	t.Parallel()
	w := startGeminiTUI(t, nil)
	w.send("make the build dir [[scenario:write]]", "write")
	s := w.observed(60*time.Second, "waiting for permission", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitPermission && s.InTurn
	})
	t.Logf("evidence: %s", s.Evidence)
	w.drawn(30*time.Second, "Allow once", "drew an approval prompt")
	// "1. Allow once", chosen where it runs.
	if _, err := w.ptmx.Write([]byte("1")); err != nil {
		t.Fatal(err)
	}
	w.observed(60*time.Second, "waiting on the user for review", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.TurnGeneration == 1
	})
	if _, err := os.Stat(filepath.Join(w.h.work, "build", "out.txt")); err != nil {
		w.fail("the allowed command did not run: %v", err)
	}
}
