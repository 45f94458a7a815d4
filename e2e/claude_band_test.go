package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
)

// TestClaudeE2ETaskListBand: the real CLI keeps a task list with its Task
// tools (the fake API asks for two tasks, starts and completes the first,
// then runs a slow command); the session carries the list's counts, and
// while the command runs `show --json` gives a time-left band from the
// list's pace. The user's stop ends the wait; the stopped turn is not a
// past turn the estimate learns from.
func TestClaudeE2ETaskListBand(t *testing.T) {
	t.Parallel()
	h := claudeE2EStart(t, ce2eOptions{settings: ce2eFast})
	id := h.launch("[[scenario:tasks_slow]] go")
	half := sessions.TodoProgress{Total: 2, Completed: 1}
	// The Bash call open, not only a task call: the list is half done as
	// soon as the fourth task call is read, before it closes.
	s := h.waitFor(id, "the task list half done and the slow command running", func(s sessions.Session) bool {
		return s.Todos == half && s.InTurn && openCall(s, "Bash")
	})
	if s.TurnTools < len(fakeapi.TasksSteps)+1 {
		t.Errorf("turn tools = %d, want the %d task calls and the command", s.TurnTools, len(fakeapi.TasksSteps)+1)
	}
	// The list's pace needs ten seconds since it began.
	h.waitFor(id, "ten seconds of the list", func(s sessions.Session) bool { return time.Since(s.TodosSince) > 11*time.Second })
	var shown struct {
		TimeLeft struct {
			Low     time.Duration `json:"low_ns"`
			High    time.Duration `json:"high_ns"`
			Signals []string      `json:"signals"`
		} `json:"time_left"`
		Todos sessions.TodoProgress `json:"todos"`
	}
	if err := json.Unmarshal([]byte(h.mustCLI("show", "--json", id)), &shown); err != nil {
		t.Fatal(err)
	}
	if b := shown.TimeLeft; !(0 < b.Low && b.Low < b.High) || len(b.Signals) != 1 || b.Signals[0] != "todos" || shown.Todos != half {
		t.Errorf("show --json: time_left %+v todos %+v, want a band from the todos", b, shown.Todos)
	}
	h.mustCLI("interrupt", id)
	s = h.waitFor(id, "the stopped turn", func(s sessions.Session) bool { return !s.InTurn })
	if len(s.PastTurns) != 0 {
		t.Errorf("past turns = %+v: a stopped turn is not a duration to learn from", s.PastTurns)
	}
	h.stopApp()
}

// openCall reports whether s has a call of the named tool open.
func openCall(s sessions.Session, name string) bool {
	for _, c := range s.OpenTools {
		if c.Name == name {
			return true
		}
	}
	return false
}
