//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/claudeterm"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
)

// The real interactive CLI, killed (SIGKILL) in the middle of a tool call,
// is Interrupted and escalated; "Resume in the background" (`resume ID`,
// or by itself with supervisor.resume_terminal_sessions) runs the app's
// managed Claude Code (agents.claude.command: the pinned managed CLI) with
// --resume of the same session in the same directory, against the same
// fake API and HOME, with the nudge: that turn completes, and both ends
// record the other.
func TestTerminalRealCLIKilledMidToolIsResumed(t *testing.T) {
	t.Parallel()
	for _, auto := range []bool{false, true} {
		t.Run(map[bool]string{false: "by the user", true: "by the setting"}[auto], func(t *testing.T) {
			o := ptyOptions{managedClaude: fakeapi.ClaudeBinary(t), settings: []string{"supervisor.tick_seconds", "5"}}
			if auto {
				o.settings = append(o.settings, "supervisor.resume_terminal_sessions", "true")
			}
			// Auto mode (2.1.328's default) asks the model to judge each
			// command, which the fake API does not answer as a verdict: the
			// default mode runs the read-only command without asking.
			w := startPTYWorldWith(t, o, "--permission-mode", "default")
			w.observed(time.Second, "listed", func(sessions.Session) bool { return true })
			time.Sleep(time.Second) // the prompt box is drawn
			w.typeLine("run the slow command [[scenario:slowtool_tail]]")
			// The CLI asks before running it: approved where it runs, as a
			// person would ("1. Yes").
			w.observed(60*time.Second, "asking to run it", func(s sessions.Session) bool {
				return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitPermission
			})
			time.Sleep(time.Second) // the dialog is drawn
			if _, err := w.ptmx.Write([]byte("1")); err != nil {
				t.Fatal(err)
			}
			s := w.observed(60*time.Second, "running Bash", func(s sessions.Session) bool {
				return s.State == sessions.Working && s.InTurn && strings.Contains(s.Evidence, "Bash")
			})
			sid := s.AgentSessionID
			if err := w.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			w.cmd.Wait()
			if !auto {
				s = w.observed(30*time.Second, "interrupted and escalated", func(s sessions.Session) bool {
					return s.State == sessions.Interrupted && s.NeedsAttention && !s.ProcessAlive
				})
				w.h.mustCLI("resume", s.ID)
			}
			// The terminal session settles, pointing at the managed one.
			s, managed := w.resumed(60 * time.Second)
			deadline := time.Now().Add(90 * time.Second)
			for {
				var m sessions.Session
				if err := json.Unmarshal([]byte(w.h.mustCLI("show", managed.ID, "--json")), &m); err != nil {
					t.Fatal(err)
				}
				if m.State == sessions.WaitingOnUser && m.WaitReason == sessions.WaitReview {
					if m.AgentSessionID != sid {
						t.Errorf("the managed session runs agent session %s, want the terminal's %s", m.AgentSessionID, sid)
					}
					break
				}
				if time.Now().After(deadline) {
					_, tl, _ := w.h.cli("timeline", managed.ID)
					w.fail("the resumed turn did not complete: %s (%s)\n%s", m.State, m.Evidence, tl)
				}
				time.Sleep(100 * time.Millisecond)
			}
			// The nudge reached the model from the resumed session.
			var nudged bool
			for _, c := range w.api.Log() {
				if strings.Contains(c.Request.LastUserText(), fakeapi.ContinuationNudge) {
					nudged = true
				}
			}
			if !nudged {
				w.fail("no request carried the continuation nudge")
			}
			for id, kind := range map[string]string{s.ID: "resumed_as", managed.ID: "resumed_from"} {
				if tl := w.h.mustCLI("timeline", id); !strings.Contains(tl, kind) {
					t.Errorf("%s's timeline has no %s:\n%s", id, kind, tl)
				}
			}
			if !auto {
				twoProcessesOnOneConversation(t, w, managed.ID, sid)
			}
		})
	}
}

// The user types `claude --resume ID` in a second terminal on the
// conversation the app's managed session now runs: the new terminal
// session and the managed one each name the other, both timelines say so,
// the managed session is escalated; when the terminal process ends, the
// managed session lets go of it.
func twoProcessesOnOneConversation(t *testing.T, w *ptyWorld, managedID, sid string) {
	t.Helper()
	w.startCLI("--resume", sid, "--permission-mode", "default")
	term := w.observed(60*time.Second, "sharing the managed session's conversation", func(s sessions.Session) bool {
		return s.AgentSessionID == sid && s.SharedWith == managedID
	})
	var m sessions.Session
	if err := json.Unmarshal([]byte(w.h.mustCLI("show", managedID, "--json")), &m); err != nil {
		t.Fatal(err)
	}
	if m.SharedWith != term.ID || !m.NeedsAttention {
		w.fail("the managed session names %q (attention %v), want %s", m.SharedWith, m.NeedsAttention, term.ID)
	}
	if out := w.h.mustCLI("show", managedID); !strings.Contains(out, "also run by session "+term.ID[:8]) {
		t.Errorf("show:\n%s", out)
	}
	for _, id := range []string{managedID, term.ID} {
		if tl := w.h.mustCLI("timeline", id); !strings.Contains(tl, "shared conversation") {
			t.Errorf("%s's timeline has no shared_conversation:\n%s", id, tl)
		}
	}
	w.cmd.Process.Kill()
	w.cmd.Wait()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		m = sessions.Session{} // an omitted key leaves a field as it was
		if err := json.Unmarshal([]byte(w.h.mustCLI("show", managedID, "--json")), &m); err != nil {
			t.Fatal(err)
		}
		if m.SharedWith == "" {
			break
		}
		if time.Now().After(deadline) {
			w.fail("the managed session still names %s after its process ended:\n%s\n%s", m.SharedWith, w.h.mustCLI("timeline", managedID), w.h.mustCLI("timeline", term.ID))
		}
	}
}

// resumed waits until the terminal session settles, pointing at the
// managed session resumed from it in the background, and returns both.
func (w *ptyWorld) resumed(limit time.Duration) (terminal, managed sessions.Session) {
	w.t.Helper()
	terminal = w.observed(limit, "resumed", func(s sessions.Session) bool {
		return s.State == sessions.Idle && !s.NeedsAttention && strings.Contains(s.Evidence, "resumed in the background")
	})
	var list []sessions.Session
	if err := json.Unmarshal([]byte(w.h.mustCLI("ls", "--json")), &list); err != nil {
		w.t.Fatal(err)
	}
	for _, m := range list {
		if m.ResumedFrom == terminal.ID {
			managed = m
		}
	}
	if managed.ID == "" || managed.Source != sessions.Managed || managed.Cwd != terminal.Cwd {
		w.fail("no managed session resumed from %s: %+v", terminal.ID, list)
	}
	return terminal, managed
}

// Claude Code that registers no session file (older than its registry; the
// pins both register one, 2.1.197 without an inbox, so the real interactive
// CLI runs here with its sessions directory made a plain file): the app
// finds it in the process table, pairs it with the transcript its first
// prompt writes, and follows its turn to review.
func TestTerminalOldCLIFromProcessTable(t *testing.T) {
	t.Parallel()
	w := startPTYWorldWith(t, ptyOptions{noSessionFile: true})
	s := w.observed(20*time.Second, "found in the process table", func(sessions.Session) bool { return true })
	t.Logf("listed %s after the CLI started (the table waits 5 s for a session file)", time.Since(w.fileAt).Round(time.Millisecond))
	if b, err := os.ReadFile(w.sessFile); err == nil {
		t.Fatalf("the CLI registered a session file: %s", b)
	}
	time.Sleep(time.Second) // the prompt box is drawn
	w.submitLine("say hello")
	s = w.observed(60*time.Second, "in review after the first turn", ce2eReview(1))
	if s.AgentSessionID == "" || s.Name != "say hello" {
		t.Errorf("paired with %q, named %q", s.AgentSessionID, s.Name)
	}
	if _, err := os.Stat(filepath.Join(w.home, ".claude", "projects", claudeterm.Mangle(s.Cwd), s.AgentSessionID+".jsonl")); err != nil {
		t.Errorf("the paired transcript: %v", err)
	}
	t.Logf("evidence: %s", s.Evidence)
}
