package view

import (
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestTimeLeftText(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	working := sessions.Session{InTurn: true, TurnStarted: now.Add(-12 * time.Minute),
		Todos: sessions.TodoProgress{Total: 7, Completed: 3}, TodosSince: now.Add(-12 * time.Minute)}
	cases := []struct {
		name string
		s    sessions.Session
		want string
	}{
		{"no turn: nothing to say", sessions.Session{Todos: working.Todos}, ""},
		{"a turn with no signal", sessions.Session{InTurn: true, TurnStarted: now.Add(-time.Minute)}, "not enough signal"},
		// 4 min an item, 4 left: about 16 min, one signal of three items.
		{"todos", working, "8–32 min (todos 3/7)"},
	}
	for _, c := range cases {
		if got := TimeLeftText(c.s, now); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestAccountWindowsAndWarning(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	reset := now.Add(2 * time.Hour)
	old := sessions.RateWindow{Kind: "five_hour", Used: 40, FirstUsed: 40, ResetsAt: reset, At: now.Add(-2 * time.Hour), FirstAt: now.Add(-2 * time.Hour)}
	// 60% to 80% in the last hour: full in another hour, before the reset.
	filling := sessions.RateWindow{Kind: "five_hour", Used: 80, FirstUsed: 60, ResetsAt: reset, At: now, FirstAt: now.Add(-time.Hour)}
	weekly := sessions.RateWindow{Kind: "seven_day", Used: 10, FirstUsed: 10, At: now, FirstAt: now}
	list := []sessions.Session{
		{ID: "a", Agent: "claude", InTurn: true, TurnStarted: now.Add(-time.Minute), RateWindows: []sessions.RateWindow{old}},
		{ID: "b", Agent: "claude", RateWindows: []sessions.RateWindow{filling, weekly}},
		{ID: "c", Agent: "codex", InTurn: true, RateWindows: []sessions.RateWindow{{Kind: "primary", Used: 100, ResetsAt: now.Add(30 * time.Minute), At: now}}},
	}
	ws := AccountWindows(list)
	if len(ws) != 3 || ws[0].Agent != "claude" || ws[0].Window.Used != 80 || ws[1].Window.Kind != "seven_day" || ws[2].Agent != "codex" {
		t.Fatalf("windows = %+v", ws)
	}
	if got, want := WindowText(ws[0].Window, now, time.UTC), "five_hour 80% used, resets 14:00"; got != want {
		t.Errorf("WindowText = %q, want %q", got, want)
	}
	quick := list[0]
	quick.PastTurns = []sessions.TurnRecord{{Duration: 3 * time.Minute}, {Duration: 4 * time.Minute}}
	cases := []struct {
		name string
		s    sessions.Session
		want string
	}{
		{"working on a window filling before its reset", list[0], "will hit the five_hour window at about 13:00 (it resets 14:00)"},
		{"a turn that ends before the window fills is not marked", quick, ""},
		{"not working: not marked", list[1], ""},
		{"a spent window", list[2], "plan window primary used up, resets 12:30"},
	}
	for _, c := range cases {
		if got := WindowWarning(c.s, ws, now, time.UTC); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
