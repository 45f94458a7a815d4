package claude

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The task list as the real CLI's task tools built it, and the plan window
// its rate_limit_event reports, through the decoder and Apply.
func TestCapturedTodosAndWindows(t *testing.T) {
	type progress = sessions.TodoProgress
	cases := []struct {
		file string
		// lists is the task list after each event that carries one.
		lists  []progress
		window *sessions.RateWindow
	}{
		{
			file: "tasks.jsonl",
			lists: []progress{
				{Total: 1}, {Total: 2}, {Total: 2, InProgress: 1}, {Total: 2, Completed: 1},
			},
		},
		{file: "todowrite.jsonl", lists: []progress{{Total: 3, Completed: 1, InProgress: 1}}},
		{
			file: "plan_window.jsonl",
			window: &sessions.RateWindow{Kind: "five_hour", Status: "allowed_warning", Used: 82,
				ResetsAt: time.Unix(1796263136, 0).UTC()},
		},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			events, _ := decodeFile(t, c.file)
			var lists []progress
			var windows []sessions.RateWindow
			s := sessions.Session{ID: "s"}
			now := time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC)
			s = sessions.Apply(s, sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.ByUser}, now)
			for _, e := range events {
				if e.Todos != nil {
					if e.Kind != sessions.EvToolStarted {
						t.Errorf("todos on a %s event", e.Kind)
					}
					lists = append(lists, *e.Todos)
				}
				if e.RateWindow != nil {
					windows = append(windows, *e.RateWindow)
				}
				now = now.Add(time.Second)
				s = sessions.Apply(s, e, now)
			}
			if !slices.Equal(lists, c.lists) {
				t.Errorf("lists = %+v, want %+v", lists, c.lists)
			}
			if c.lists != nil && s.Todos != c.lists[len(c.lists)-1] {
				t.Errorf("session todos = %+v", s.Todos)
			}
			if c.window == nil {
				if len(windows) != 0 {
					t.Errorf("windows = %+v, want none (a bare \"allowed\" names no window)", windows)
				}
				return
			}
			if len(windows) != 1 || windows[0] != *c.window {
				t.Fatalf("windows = %+v, want %+v", windows, *c.window)
			}
			if len(s.RateWindows) != 1 || s.RateWindows[0].Used != c.window.Used {
				t.Errorf("session windows = %+v", s.RateWindows)
			}
			if len(s.PastTurns) != 1 {
				t.Errorf("past turns = %+v, want the completed turn", s.PastTurns)
			}
		})
	}
}

func TestTodoLines(t *testing.T) {
	const create = `{"type":"assistant","message":{"id":"m%d","model":"claude-x","content":[{"type":"tool_use","id":"t%d","name":"TaskCreate","input":{"subject":"a","description":"b"}}]},"parent_tool_use_id":null,"session_id":"s"}`
	cases := []struct {
		name  string
		lines []string
		want  []sessions.TodoProgress
	}{
		{
			name: "an update of a task created before this process is clamped",
			lines: []string{
				`{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"TaskUpdate","input":{"taskId":"7","status":"completed"}}]},"parent_tool_use_id":null,"session_id":"s"}`,
			},
			want: []sessions.TodoProgress{{Total: 1, Completed: 1}},
		},
		{
			name: "a subagent's list is not the session's",
			lines: []string{
				`{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"TodoWrite","input":{"todos":[{"content":"x","status":"pending","activeForm":"x"}]}}]},"parent_tool_use_id":"toolu_parent","session_id":"s"}`,
			},
		},
		{
			name: "a deleted task leaves the list; a change of subject changes nothing",
			lines: []string{
				fmtLine(create, 1), fmtLine(create, 2),
				`{"type":"assistant","message":{"id":"m3","model":"claude-x","content":[{"type":"tool_use","id":"t3","name":"TaskUpdate","input":{"taskId":"2","status":"deleted"}}]},"parent_tool_use_id":null,"session_id":"s"}`,
				`{"type":"assistant","message":{"id":"m4","model":"claude-x","content":[{"type":"tool_use","id":"t4","name":"TaskUpdate","input":{"taskId":"1","subject":"renamed"}}]},"parent_tool_use_id":null,"session_id":"s"}`,
			},
			want: []sessions.TodoProgress{{Total: 1}, {Total: 2}, {Total: 1}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s state
			var got []sessions.TodoProgress
			for _, l := range c.lines {
				events, _, err := s.decode([]byte(l))
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range events {
					if e.Todos != nil {
						got = append(got, *e.Todos)
					}
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("lists = %+v, want %+v", got, c.want)
			}
		})
	}
}

func fmtLine(format string, n int) string { return fmt.Sprintf(format, n, n) }
