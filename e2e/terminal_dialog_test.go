//go:build linux

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The real interactive CLI in its default (auto) mode writes the Bash call
// to the transcript, then opens a dialog over it (its session file says
// "dialog open"): the app reports a permission request naming the tool and
// what it would run, to be answered in the terminal (no request id, so no
// Allow/Deny from the app), not a question.
func TestTerminalRealCLIDialogOverAToolIsAPermission(t *testing.T) {
	t.Parallel()
	w := startPTYWorldWith(t, ptyOptions{})
	w.observed(10*time.Second, "listed", func(sessions.Session) bool { return true })
	time.Sleep(time.Second) // the prompt box is drawn
	w.typeLine("run the slow command [[scenario:slowtool_tail]]")
	s := w.observed(60*time.Second, "asking permission for the Bash call", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitPermission && s.Permission != nil
	})
	if p := s.Permission; p.Tool != "Bash" || !strings.Contains(p.Input, "tail -f /dev/null") || p.RequestID != "" {
		w.fail("permission %+v", *p)
	}
	if !strings.Contains(s.Evidence, "Bash: timeout 30 tail -f /dev/null") || !strings.Contains(s.Evidence, "answer it there") {
		w.fail("evidence %q", s.Evidence)
	}
	if out := w.h.mustCLI("ls"); !strings.Contains(out, "Waiting on user (permission)") {
		w.fail("ls:\n%s", out)
	}
}
