package sessions

import (
	"testing"
	"time"
)

var p0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func TestApplyKeepsTurnsAndTodos(t *testing.T) {
	s := Session{ID: "s", State: Idle}
	at := func(m int) time.Time { return p0.Add(time.Duration(m) * time.Minute) }
	steps := []struct {
		e   Event
		min int
	}{
		{Event{Kind: EvTurnStarted, By: ByUser}, 0},
		{Event{Kind: EvToolStarted, CallID: "a", Name: "TodoWrite", Todos: &TodoProgress{Total: 3, InProgress: 1}}, 1},
		{Event{Kind: EvToolStarted, CallID: "b", Name: "Bash"}, 2},
		{Event{Kind: EvToolFinished, CallID: "b"}, 3},
		{Event{Kind: EvActivity, Todos: &TodoProgress{Total: 3, Completed: 1, InProgress: 1}}, 4},
		{Event{Kind: EvTurnCompleted}, 10},
		{Event{Kind: EvTurnStarted, By: ByUser}, 20},
		// A failed turn is not a duration the estimate should learn from.
		{Event{Kind: EvTurnFailed, Failure: Failure{Kind: OtherFailure, Message: "x"}}, 21},
	}
	for _, st := range steps {
		s = Apply(s, st.e, at(st.min))
	}
	if len(s.PastTurns) != 1 || s.PastTurns[0] != (TurnRecord{Duration: 10 * time.Minute, Tools: 2}) {
		t.Fatalf("past turns = %+v, want one of 10 min with 2 tools", s.PastTurns)
	}
	if s.TurnTools != 0 {
		t.Fatalf("turn tools = %d after a new turn, want 0", s.TurnTools)
	}
	if s.Todos != (TodoProgress{Total: 3, Completed: 1, InProgress: 1}) || !s.TodosSince.Equal(at(1)) {
		t.Fatalf("todos = %+v since %v, want 1/3 since minute 1", s.Todos, s.TodosSince)
	}
}

func TestApplyTodosSince(t *testing.T) {
	cases := []struct {
		name      string
		have      TodoProgress
		next      TodoProgress
		restarted bool
	}{
		{"first list", TodoProgress{}, TodoProgress{Total: 2}, true},
		{"progress on the same list", TodoProgress{Total: 4, Completed: 1}, TodoProgress{Total: 4, Completed: 2}, false},
		{"an item added", TodoProgress{Total: 4, Completed: 1}, TodoProgress{Total: 5, Completed: 1}, false},
		{"a new list after a finished one", TodoProgress{Total: 4, Completed: 4}, TodoProgress{Total: 3}, true},
		{"fewer done: a new list", TodoProgress{Total: 4, Completed: 3}, TodoProgress{Total: 4, Completed: 1}, true},
		{"inconsistent counts are clamped", TodoProgress{Total: 2, Completed: 1}, TodoProgress{Total: 1, Completed: 2}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Session{Todos: c.have, TodosSince: p0}
			n := Apply(s, Event{Kind: EvMetrics, Todos: &c.next}, p0.Add(time.Hour))
			if got := !n.TodosSince.Equal(p0); got != c.restarted {
				t.Fatalf("restarted = %v, want %v", got, c.restarted)
			}
			if n.Todos.Total < n.Todos.Completed+n.Todos.InProgress {
				t.Fatalf("todos %+v inconsistent", n.Todos)
			}
		})
	}
}

func TestPastTurnsBounded(t *testing.T) {
	s := Session{}
	for i := range MaxPastTurns + 3 {
		s = Apply(s, Event{Kind: EvTurnStarted, By: ByUser}, p0.Add(time.Duration(i)*time.Hour))
		s = Apply(s, Event{Kind: EvTurnCompleted}, p0.Add(time.Duration(i)*time.Hour+time.Duration(i+1)*time.Minute))
	}
	if len(s.PastTurns) != MaxPastTurns || s.PastTurns[MaxPastTurns-1].Duration != time.Duration(MaxPastTurns+3)*time.Minute {
		t.Fatalf("past turns = %+v, want the last %d", s.PastTurns, MaxPastTurns)
	}
}

func TestObservedTurnEndRecorded(t *testing.T) {
	s := Apply(Session{Source: Observed}, Event{Kind: EvObserved, Observed: &ObservedState{State: Working, InTurn: true, NewTurns: 1, Tool: "Bash", Evidence: "x"}}, p0)
	s = Apply(s, Event{Kind: EvObserved, Observed: &ObservedState{State: WaitingOnUser, Wait: WaitReview, Evidence: "done"}}, p0.Add(5*time.Minute))
	if len(s.PastTurns) != 1 || s.PastTurns[0] != (TurnRecord{Duration: 5 * time.Minute, Tools: 1}) {
		t.Fatalf("past turns = %+v", s.PastTurns)
	}
	s = Apply(s, Event{Kind: EvObserved, Observed: &ObservedState{State: Working, InTurn: true, NewTurns: 1, Evidence: "x"}}, p0.Add(6*time.Minute))
	s = Apply(s, Event{Kind: EvObserved, Observed: &ObservedState{State: Errored, Failure: Failure{Kind: RateLimit}, Evidence: "limit"}}, p0.Add(7*time.Minute))
	if len(s.PastTurns) != 1 {
		t.Fatalf("a failed observed turn was recorded: %+v", s.PastTurns)
	}
}

func TestApplyRateWindows(t *testing.T) {
	reset := p0.Add(5 * time.Hour)
	s := Apply(Session{}, Event{Kind: EvMetrics, RateWindow: &RateWindow{Kind: "five_hour", Used: 40, ResetsAt: reset}}, p0)
	s = Apply(s, Event{Kind: EvMetrics, RateWindow: &RateWindow{Kind: "five_hour", Used: 60, ResetsAt: reset}}, p0.Add(time.Hour))
	s = Apply(s, Event{Kind: EvMetrics, RateWindow: &RateWindow{Kind: "seven_day", Used: 10}}, p0.Add(time.Hour))
	if len(s.RateWindows) != 2 {
		t.Fatalf("windows = %+v", s.RateWindows)
	}
	w := s.RateWindows[0]
	if w.Used != 60 || w.FirstUsed != 40 || !w.FirstAt.Equal(p0) || !w.At.Equal(p0.Add(time.Hour)) {
		t.Fatalf("five_hour = %+v, want its first report kept", w)
	}
	// 20 points an hour from 60: full two hours later, before the reset.
	if at, ok := w.HitAt(p0.Add(time.Hour)); !ok || !at.Equal(p0.Add(3*time.Hour)) {
		t.Fatalf("HitAt = %v %v, want %v", at, ok, p0.Add(3*time.Hour))
	}
	// A new reset time is a new window: its pace starts over.
	s = Apply(s, Event{Kind: EvMetrics, RateWindow: &RateWindow{Kind: "five_hour", Used: 5, ResetsAt: reset.Add(5 * time.Hour)}}, p0.Add(6*time.Hour))
	if w := s.RateWindows[0]; w.FirstUsed != 5 || !w.FirstAt.Equal(p0.Add(6*time.Hour)) {
		t.Fatalf("new window = %+v", w)
	}
}

func TestRateWindowHitAt(t *testing.T) {
	now := p0.Add(time.Hour)
	cases := []struct {
		name string
		w    RateWindow
		hit  bool
		at   time.Time
	}{
		{"rejected is hit now", RateWindow{Status: "rejected", Used: -1}, true, now},
		{"full is hit now", RateWindow{Used: 100}, true, now},
		{"one report: no pace", RateWindow{Used: 50, FirstUsed: 50, At: now, FirstAt: now}, false, time.Time{}},
		{"no figure", RateWindow{Used: -1, FirstUsed: -1, At: now, FirstAt: p0}, false, time.Time{}},
		{"fills after the reset", RateWindow{Used: 20, FirstUsed: 10, At: now, FirstAt: p0, ResetsAt: now.Add(time.Hour)}, false, time.Time{}},
		{"fills before the reset", RateWindow{Used: 80, FirstUsed: 60, At: now, FirstAt: p0, ResetsAt: now.Add(2 * time.Hour)}, true, now.Add(time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			at, ok := c.w.HitAt(now)
			if ok != c.hit || !at.Equal(c.at) {
				t.Fatalf("HitAt = %v %v, want %v %v", at, ok, c.at, c.hit)
			}
		})
	}
	ws := []RateWindow{{Kind: "a", Used: 100, ResetsAt: now.Add(time.Hour)}, {Kind: "b", Status: "rejected", ResetsAt: now.Add(3 * time.Hour)}, {Kind: "c", Used: 50, ResetsAt: now.Add(9 * time.Hour)}}
	if got := ResetAfter(ws, now); !got.Equal(now.Add(3 * time.Hour)) {
		t.Fatalf("ResetAfter = %v, want the latest spent window's reset", got)
	}
	if got := ResetAfter(ws[2:], now); !got.IsZero() {
		t.Fatalf("ResetAfter with no spent window = %v", got)
	}
}

func TestTodosOf(t *testing.T) {
	items := func(statuses ...string) []TodoItem {
		var out []TodoItem
		for _, s := range statuses {
			out = append(out, TodoItem{Status: s})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		items []TodoItem
		want  TodoProgress
	}{
		{"none", nil, TodoProgress{}},
		{"claude's words", items("completed", "in_progress", "pending"), TodoProgress{Total: 3, Completed: 1, InProgress: 1}},
		{"codex's camel case", items("completed", "inProgress", "pending", "completed"), TodoProgress{Total: 4, Completed: 2, InProgress: 1}},
		{"opencode's cancelled leave the list", items("cancelled", "completed", "cancelled"), TodoProgress{Total: 1, Completed: 1}},
		{"an unknown word is pending", items("blocked"), TodoProgress{Total: 1}},
	} {
		if got := TodosOf(tc.items); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
