package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/testdir"
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
	// s2 and s5 run on the machine devbox.
	list := []machineSession{
		{"local", mk("s1", "claude", day, sessions.Usage{"a-model": {Input: 1_000_000}, "b-model": {Output: 100_000}})}, // $1 + $2
		{"devbox", mk("s2", "codex", day, sessions.Usage{"a-model": {Output: 500_000}})},                                // $5
		{"local", mk("s3", "claude", day.Add(-48*time.Hour), sessions.Usage{"b-model": {Input: 1_000_000}})},            // $2, older
		{"local", mk("s4", "gemini", day, nil)},                                                                         // no usage: not counted
		{"devbox", mk("s5", "gemini", day, sessions.Usage{"unknown-model": {Input: 10}})},
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
		{byMachine, time.Time{}, []want{{"devbox", 2, 5_001_000, true}, {"local", 2, 5_000_000, false}},
			want{"total", 4, 10_001_000, true}},
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
		{[]string{"usage", "--by", "week"}, exitUsage, "--by takes one of session, model, agent, day"},
		{[]string{"usage", "--by", "day"}, 1, "not running"},
		{[]string{"recover", "maybe", "x"}, exitUsage, "recover takes off or on, then one session id"},
		{[]string{"recover", "off"}, exitUsage, "recover takes off or on, then one session id"},
		{[]string{"recover", "off", "x"}, 1, "not running"},
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

// usage --by day sums the history per day, oldest first, counting each
// session once a day and once in the total, and prices each day by model.
func TestUsageByDay(t *testing.T) {
	prices, err := pricing.Parse("a-model,1,10,0,0,https://example.com,2026-12-01\nfallback,100,100,0,0,https://example.com,2026-12-01\n")
	if err != nil {
		t.Fatal(err)
	}
	h := func(day, id, model string, in, out int64) localapi.UsageDay {
		return localapi.UsageDay{Day: day, SessionID: id, Model: model, Tokens: sessions.Tokens{Input: in, Output: out}}
	}
	tests := []struct {
		name    string
		history []localapi.UsageDay
		rows    []string // "day sessions cost"
		total   string
	}{
		{"nothing recorded", nil, nil, "total 0 $0.00"},
		{"two days, a session on both",
			[]localapi.UsageDay{
				h("2026-12-01", "s1", "a-model", 1_000_000, 0), // $1
				h("2026-12-01", "s2", "a-model", 0, 100_000),   // $1
				h("2026-12-02", "s1", "a-model", 0, 500_000),   // $5
				h("2026-12-02", "s1", "mystery", 10_000, 0),    // $1, fallback
			},
			[]string{"2026-12-01 2 $2.00", "2026-12-02 1 $6.00*"}, "total 2 $8.00*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, total := usageByDay(tt.history, prices)
			line := func(r usageRow) string {
				s := fmt.Sprintf("%s %d %s", r.Key, r.Sessions, r.Cost.Total)
				if r.Cost.Unknown {
					s += "*"
				}
				return s
			}
			var got []string
			for _, r := range rows {
				got = append(got, line(r))
			}
			if !slices.Equal(got, tt.rows) || line(total) != tt.total {
				t.Errorf("rows %q total %q, want %q and %q", got, line(total), tt.rows, tt.total)
			}
		})
	}
}

// Through the running app: recover off and on switch a stored session's
// recovery (show says so), and usage --by day reads the app's history.
func TestRecoverAndUsageByDayThroughTheApp(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	s := sessions.Session{ID: "5e5510a1-0000-4000-8000-000000000001", Name: "budgeted", Agent: "claude", State: sessions.Idle,
		Evidence: "nothing in flight", CreatedAt: now, UpdatedAt: now}
	dir := testdir.Short(t, "ss")
	rt := serveApp(t, dir, func(st *storage.Store) {
		if err := st.SaveSessionWithEvents(ctx, s, nil); err != nil {
			t.Fatal(err)
		}
		if err := st.AddUsage(ctx, []storage.UsageRow{
			{SessionID: s.ID, Day: "2026-11-30", Model: "claude-sonnet-4-5", Tokens: sessions.Tokens{Output: 100_000}, Time: now},
			{SessionID: s.ID, Day: "2026-12-01", Model: "claude-sonnet-4-5", Tokens: sessions.Tokens{Output: 200_000}, Time: now},
		}); err != nil {
			t.Fatal(err)
		}
	}).rt

	code, out, errOut := runCLI(t, "--data-dir", dir, "recover", "off", s.ID)
	if code != 0 || !strings.Contains(out, "budgeted: automatic recovery is off for this session") {
		t.Fatalf("recover off: %d %q %q", code, out, errOut)
	}
	if got, _ := rt.Session(s.ID); !got.RecoveryOff {
		t.Fatal("the app's session is not switched off")
	}
	if code, out, _ := runCLI(t, "--data-dir", dir, "show", s.ID); code != 0 || !strings.Contains(out, "switched off for this session") {
		t.Fatalf("show: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "--data-dir", dir, "recover", "on", s.ID); code != 0 || !strings.Contains(out, "applies to this session again") {
		t.Fatalf("recover on: %d %q", code, out)
	}
	if got, _ := rt.Session(s.ID); got.RecoveryOff {
		t.Fatal("the app's session is still switched off")
	}
	if code, _, errOut := runCLI(t, "--data-dir", dir, "recover", "off", "nosuchid"); code == 0 || !strings.Contains(errOut, "nosuchid") {
		t.Fatalf("an unknown session: %d %q", code, errOut)
	}

	code, out, errOut = runCLI(t, "--data-dir", dir, "usage", "--by", "day", "--since", "2026-12-01")
	if code != 0 || !strings.Contains(out, "2026-12-01") || strings.Contains(out, "2026-11-30") || !strings.Contains(out, "$3.00") ||
		!strings.Contains(out, "Per local calendar day") {
		t.Fatalf("usage --by day --since: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "--data-dir", dir, "usage", "--by", "day", "--json")
	var rep struct {
		By    string     `json:"by"`
		Rows  []usageRow `json:"rows"`
		Total usageRow   `json:"total"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("usage --by day --json: %d %v\n%s", code, err, out)
	}
	if rep.By != "day" || len(rep.Rows) != 2 || rep.Rows[0].Key != "2026-11-30" || rep.Total.Cost.Total != 4_500_000 || rep.Total.Sessions != 1 {
		t.Fatalf("usage --by day --json: %+v", rep)
	}
}
