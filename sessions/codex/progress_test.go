package codex

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The plan's step counts and the account's windows, as the decoder passes
// them on.
func TestPlanAndWindows(t *testing.T) {
	const th = `"threadId":"T"`
	// The real line codex app-server 0.171.0 wrote for the fake's plan
	// scenario (x-codex-* headers of two windows).
	const measured = `{"method":"account/rateLimits/updated","params":{"rateLimits":{"limitId":"codex","limitName":null,"normalModelSlug":null,"primary":{"usedPercent":42,"windowDurationMins":300,"resetsAt":1796263231},"secondary":{"usedPercent":12,"windowDurationMins":10080,"resetsAt":1796616031},"credits":null,"individualLimit":null,"spendControlReached":null,"planType":null,"rateLimitReachedType":null}},"emittedAtMs":1796263231000}`
	// With an API key and no headers both windows are null (measured).
	const none = `{"method":"account/rateLimits/updated","params":{"rateLimits":{"limitId":"codex","limitName":null,"normalModelSlug":null,"primary":null,"secondary":null,"credits":null,"individualLimit":null,"spendControlReached":null,"planType":null,"rateLimitReachedType":null}},"emittedAtMs":1796069752919}`
	cases := []struct {
		name    string
		lines   []string
		todos   []sessions.TodoProgress
		windows []sessions.RateWindow
	}{
		{
			name: "a plan update counts its steps",
			lines: []string{
				`{"id":2,"result":{"thread":{"id":"T"}}}`,
				notif("turn/plan/updated", `{`+th+`,"turnId":"u","explanation":null,"plan":[{"step":"a","status":"completed"},{"step":"b","status":"inProgress"},{"step":"c","status":"pending"}]}`),
				notif("turn/plan/updated", `{`+th+`,"turnId":"u","plan":[]}`),
			},
			todos: []sessions.TodoProgress{{Total: 3, Completed: 1, InProgress: 1}},
		},
		{
			name: "a subagent's plan is its own",
			lines: []string{
				`{"id":2,"result":{"thread":{"id":"T"}}}`,
				notif("turn/plan/updated", `{"threadId":"SUB","turnId":"x","plan":[{"step":"a","status":"pending"}]}`),
			},
		},
		{
			name:  "the measured windows",
			lines: []string{measured, none},
			windows: []sessions.RateWindow{
				{Kind: "primary", Used: 42, Length: 5 * time.Hour, ResetsAt: time.Unix(1796263231, 0).UTC()},
				{Kind: "secondary", Used: 12, Length: 7 * 24 * time.Hour, ResetsAt: time.Unix(1796616031, 0).UTC()},
			},
		},
		{
			name:  "figures out of range are dropped",
			lines: []string{notif("account/rateLimits/updated", `{"rateLimits":{"primary":{"usedPercent":1e308,"resetsAt":-1},"secondary":{"usedPercent":-3}}}`)},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := primed(strings.NewReader(strings.Join(c.lines, "\n")+"\n"), 0)
			events, _ := decodeAll(t, d)
			var todos []sessions.TodoProgress
			var windows []sessions.RateWindow
			for _, e := range events {
				if e.Todos != nil {
					todos = append(todos, *e.Todos)
				}
				if e.RateWindow != nil {
					windows = append(windows, *e.RateWindow)
				}
			}
			if !slices.Equal(todos, c.todos) {
				t.Errorf("todos = %+v, want %+v", todos, c.todos)
			}
			if !slices.Equal(windows, c.windows) {
				t.Errorf("windows = %+v, want %+v", windows, c.windows)
			}
		})
	}
}
