package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
)

// usage groups the sessions' tokens and prices each group by model and
// rate class on a known table: costliest first, each session counted once
// per group, the total over all, and an unknown model flagged.
func TestUsageReport(t *testing.T) {
	prices, err := pricing.Parse("a-model,1,10,0,0,https://example.com,2026-12-01\nb-model,2,20,0,0,https://example.com,2026-12-01\nfallback,100,100,0,0,https://example.com,2026-12-01\n")
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 12, 2, 12, 0, 0, 0, time.Local)
	mk := func(id, agent string, updated time.Time, u sessions.Usage) sessions.Session {
		return sessions.Session{ID: id + "-0000", Name: id, Agent: agent, UpdatedAt: updated, Usage: sessions.SessionUsage{Total: u}}
	}
	list := []sessions.Session{
		mk("s1", "claude", day, sessions.Usage{"a-model": {Input: 1_000_000}, "b-model": {Output: 100_000}}), // $1 + $2
		mk("s2", "codex", day, sessions.Usage{"a-model": {Output: 500_000}}),                                 // $5
		mk("s3", "claude", day.Add(-48*time.Hour), sessions.Usage{"b-model": {Input: 1_000_000}}),            // $2, older
		mk("s4", "gemini", day, nil), // no usage: not counted
		mk("s5", "gemini", day, sessions.Usage{"unknown-model": {Input: 10}}),
	}
	type want struct {
		key      string
		sessions int
		cost     pricing.Micros
		unknown  bool
	}
	tests := []struct {
		by    usageGroup
		since time.Time
		rows  []want
		total want
	}{
		{bySession, time.Time{}, []want{{"s2-0000 s2", 1, 5_000_000, false}, {"s1-0000 s1", 1, 3_000_000, false}, {"s3-0000 s3", 1, 2_000_000, false}, {"s5-0000 s5", 1, 1_000, true}},
			want{"total", 4, 10_001_000, true}},
		{byModel, time.Time{}, []want{{"a-model", 2, 6_000_000, false}, {"b-model", 2, 4_000_000, false}, {"unknown-model", 1, 1_000, true}},
			want{"total", 4, 10_001_000, true}},
		// A tie in cost is ordered by name.
		{byAgent, time.Time{}, []want{{"claude", 2, 5_000_000, false}, {"codex", 1, 5_000_000, false}, {"gemini", 1, 1_000, true}},
			want{"total", 4, 10_001_000, true}},
		{byAgent, day.Add(-time.Hour), []want{{"codex", 1, 5_000_000, false}, {"claude", 1, 3_000_000, false}, {"gemini", 1, 1_000, true}},
			want{"total", 3, 8_001_000, true}},
	}
	for _, tt := range tests {
		t.Run(tt.by.String(), func(t *testing.T) {
			rows, total := usageReport(list, tt.by, tt.since, prices)
			var got []want
			for _, r := range rows {
				got = append(got, want{r.Key, r.Sessions, r.Cost.Total, r.Cost.Unknown})
			}
			if !slices.Equal(got, tt.rows) {
				t.Errorf("rows %+v, want %+v", got, tt.rows)
			}
			if g := (want{total.Key, total.Sessions, total.Cost.Total, total.Cost.Unknown}); g != tt.total {
				t.Errorf("total %+v, want %+v", g, tt.total)
			}
		})
	}
}

// The command checks its flags before it asks the app.
func TestUsageFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"usage", "--by", "day"}, exitUsage, "--by takes one of session, model, agent"},
		{[]string{"usage", "--since", "yesterday"}, exitUsage, "--since takes a day as YYYY-MM-DD"},
		{[]string{"usage", "extra"}, exitUsage, "usage takes no arguments"},
		{[]string{"usage", "--by", "model", "--since", "2026-12-01"}, 1, "not running"},
	} {
		code, _, stderr := runCLI(t, append([]string{"--data-dir", dir}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
