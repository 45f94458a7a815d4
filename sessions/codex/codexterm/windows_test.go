package codexterm

import (
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// planLine is a token_count the real Codex 0.171.0 TUI wrote against the
// fake's plan scenario (its x-codex-* headers: the primary window 42% used,
// the secondary 12%), TestTerminalCodexRealTUIPlanWindows.
const planLine = `{"timestamp":"2026-12-03T06:58:00.192Z","ordinal":12,"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":20,"reasoning_output_tokens":0,"total_tokens":120},"last_token_usage":{"input_tokens":100,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":20,"reasoning_output_tokens":0,"total_tokens":120},"last_usage_includes_reasoning":false,"model_context_window":258400},"rate_limits":{"limit_id":"codex","limit_name":null,"primary":{"used_percent":42.0,"window_minutes":300,"resets_at":1796288280},"secondary":{"used_percent":12.0,"window_minutes":10080,"resets_at":1796641080},"credits":null,"individual_limit":null,"spend_control_reached":null,"plan_type":null,"rate_limit_reached_type":null}}}`

// nullLimits is the same record with an API key (both windows null, real).
const nullLimits = `{"timestamp":"2026-12-03T06:59:00Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"limit_id":"codex","limit_name":null,"primary":null,"secondary":null,"credits":null,"individual_limit":null,"spend_control_reached":null,"plan_type":null,"rate_limit_reached_type":null}}}`

// A token_count's rate_limits become the plan windows a managed Codex
// session keeps (the same kinds); a later record without windows keeps
// the last ones; older releases' resets_in_seconds counts from the
// record's time; figures out of range are dropped.
func TestFeedPlanWindows(t *testing.T) {
	primary := sessions.RateWindow{Kind: "primary", Used: 42, ResetsAt: time.Unix(1796288280, 0).UTC(), Length: 5 * time.Hour}
	secondary := sessions.RateWindow{Kind: "secondary", Used: 12, ResetsAt: time.Unix(1796641080, 0).UTC(), Length: 7 * 24 * time.Hour}
	for _, tc := range []struct {
		name  string
		lines []string
		want  []sessions.RateWindow
		reset time.Time
	}{
		{"real plan windows", []string{planLine}, []sessions.RateWindow{primary, secondary}, time.Time{}},
		{"null windows (an API key)", []string{nullLimits}, nil, time.Time{}},
		{"null after windows keeps them", []string{planLine, nullLimits}, []sessions.RateWindow{primary, secondary}, time.Time{}},
		{"resets_in_seconds from the record's time",
			[]string{`{"timestamp":"2026-12-03T10:00:00Z","type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":{"used_percent":100,"window_minutes":300,"resets_in_seconds":600}}}}`},
			[]sessions.RateWindow{{Kind: "primary", Used: 100, ResetsAt: time.Date(2026, 12, 3, 10, 10, 0, 0, time.UTC), Length: 5 * time.Hour}},
			time.Date(2026, 12, 3, 10, 10, 0, 0, time.UTC)},
		{"out of range dropped",
			[]string{`{"timestamp":"2026-12-03T10:00:00Z","type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":{"used_percent":-3,"window_minutes":300,"resets_at":1796288280},"secondary":{"used_percent":12,"window_minutes":-1,"resets_at":99999999999999}}}}`},
			[]sessions.RateWindow{{Kind: "secondary", Used: 12}}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Summary
			for _, l := range tc.lines {
				s.Feed([]byte(l))
			}
			if !slices.Equal(s.Windows, tc.want) || !s.ResetsAt.Equal(tc.reset) {
				t.Fatalf("windows %+v reset %v, want %+v %v", s.Windows, s.ResetsAt, tc.want, tc.reset)
			}
		})
	}
}

// The observer sends each window once as it changes, one per event (in a
// synctest bubble, whose clock is before the real line's reset times),
// and leaves out a window that has reset by now.
func TestObservePlanWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, Proc{Proc: observe.Proc{PID: 7, Cwd: "/w", Started: time.Now().Add(-time.Minute)}})
		path := w.path("th")
		appendTo(t, path, lines(metaLine("th", "/w", time.Now(), "user"), started, []byte(planLine)))
		w.Observe()
		evs, _ := w.Step()
		if got := windowsOf(evs); len(got) != 2 || got[0].Kind != "primary" || got[1].Used != 12 {
			t.Fatalf("first look: %+v", evs)
		}
		appendTo(t, path, lines([]byte(planLine), []byte(nullLimits)))
		if evs, _ := w.Step(); len(windowsOf(evs)) != 0 {
			t.Fatalf("the same windows again: %+v", evs)
		}
		// A window that reset an hour ago is not the account's now.
		past := time.Now().Add(-time.Hour).Unix()
		appendTo(t, path, lines([]byte(`{"timestamp":"2026-12-03T10:00:00Z","type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":{"used_percent":50,"window_minutes":300,"resets_at":`+
			strconv.FormatInt(past, 10)+`},"secondary":{"used_percent":13,"window_minutes":10080,"resets_at":1796641080}}}}`)))
		evs, _ = w.Step()
		if got := windowsOf(evs); len(got) != 1 || got[0].Kind != "secondary" || got[0].Used != 13 || evs[len(evs)-1].AgentSessionID != "th" {
			t.Fatalf("one window changed, one reset: %+v", evs)
		}
	})
}

func windowsOf(evs []sessions.Event) []sessions.RateWindow {
	var out []sessions.RateWindow
	for _, e := range evs {
		if e.RateWindow != nil {
			out = append(out, *e.RateWindow)
		}
	}
	return out
}
