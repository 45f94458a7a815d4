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
	"github.com/session-supervisor/session-supervisor/sessions/claude/hooks"
)

// With the hooks installed (the real `hooks install`, into a settings file
// that already holds the user's own hook), the real interactive CLI's hook
// events reach the app: the session is "hooked", a turn ends in review, and
// `hooks status` counts the events. Uninstall gives the file back byte for
// byte.
func TestTerminalRealCLIHooked(t *testing.T) {
	t.Parallel()
	var settings string
	var before []byte
	w := startPTYWorldWith(t, ptyOptions{before: func(w *ptyWorld) {
		settings = filepath.Join(w.home, ".claude", "settings.json")
		before = []byte("{\n\t\"hooks\": {\n\t\t\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"true\"}]}]\n\t},\n\t\"x\": 1\n}\n")
		if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(settings, before, 0o600); err != nil {
			t.Fatal(err)
		}
		out := w.h.mustCLI("hooks", "install")
		if !strings.Contains(out, "installed Claude Code hooks in "+settings) {
			t.Fatalf("hooks install said:\n%s", out)
		}
	}})
	// SessionStart arrives at start.
	w.observed(10*time.Second, "hooked", func(s sessions.Session) bool { return s.Source == sessions.Hooked })
	t.Logf("hooked %s after the session file appeared", time.Since(w.fileAt).Round(time.Millisecond))
	time.Sleep(time.Second) // the prompt box is drawn
	w.typeLine("say hello")
	s := w.observed(60*time.Second, "in review after the first turn", ce2eReview(1))
	if s.Source != sessions.Hooked {
		t.Fatalf("source %v", s.Source)
	}
	// `hooks status --json`, read as a user's script reads it.
	var st struct {
		Installed bool     `json:"installed"`
		Events    []string `json:"events"`
		Current   bool     `json:"current"`
		Listening bool     `json:"listening"`
		Received  *struct {
			Events   int             `json:"events"`
			Sessions json.RawMessage `json:"sessions"`
		} `json:"received"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := json.Unmarshal([]byte(w.h.mustCLI("hooks", "status", "--json")), &st); err != nil {
			t.Fatal(err)
		}
		// SessionStart, UserPromptSubmit, Stop at least.
		if st.Received != nil && st.Received.Events >= 3 {
			break
		}
		if time.Now().After(deadline) {
			w.fail("hooks status: %+v %+v", st, st.Received)
		}
	}
	if !st.Installed || !st.Current || !st.Listening || len(st.Events) != len(hooks.Events) {
		t.Fatalf("hooks status: %+v", st)
	}
	t.Logf("events: %d, sessions: %s", st.Received.Events, st.Received.Sessions)

	w.h.mustCLI("hooks", "uninstall")
	if after, _ := os.ReadFile(settings); string(after) != string(before) {
		t.Fatalf("after uninstall:\n%s\nwant:\n%s", after, before)
	}
}

// With the hooks installed and no app listening on their socket, the real
// CLI runs its turns as before and records no hook error. (The CLI does not
// wait for an async hook nor report its exit status — measured: a missing
// program left "hookErrors":[] too — so the hook's own tests check that it
// exits 0 silently; this checks the CLI is unaffected.)
func TestTerminalRealCLIHooksAppDown(t *testing.T) {
	t.Parallel()
	w := startPTYWorldWith(t, ptyOptions{before: func(w *ptyWorld) {
		settings := filepath.Join(w.home, ".claude", "settings.json")
		prog := filepath.Join(filepath.Dir(w.h.bin), hooks.Sentinel) // linux: no .exe
		dead := filepath.Join(t.TempDir(), "nobody.sock")
		if _, err := hooks.InstallFile(settings, hooks.Command(prog, dead)); err != nil {
			t.Fatal(err)
		}
	}})
	time.Sleep(time.Second)
	w.typeLine("say hello")
	s := w.observed(60*time.Second, "in review after the first turn", ce2eReview(1))
	if s.Source != sessions.Observed {
		t.Fatalf("source %v with no event delivered", s.Source)
	}
	m, _ := filepath.Glob(filepath.Join(w.home, ".claude", "projects", "*", "*.jsonl"))
	for _, p := range m {
		b, _ := os.ReadFile(p)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"hookErrors":[{`) || strings.Contains(l, `"subtype":"hook_error"`) {
				w.fail("the CLI recorded a hook error: %s", l)
			}
		}
	}
}
