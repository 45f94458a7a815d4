package storage

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The usage history is saved with the session in one batch, adds up rows of
// the same day, turn and model, survives a reopen of the real file, and is
// summed per day, session and model from a day on.
func TestUsageHistoryAcrossReopen(t *testing.T) {
	ctx := context.Background()
	st, dir := openTemp(t)
	s1, s2 := fullSession("s1", base), fullSession("s2", base)
	row := func(id, day string, gen int64, model string, in, out int64) UsageRow {
		return UsageRow{SessionID: id, Day: day, TurnGeneration: gen, Model: model, Tokens: sessions.Tokens{Input: in, Output: out}, Time: base}
	}
	batches := [][]BatchItem{
		{{Session: &s1, Usage: []UsageRow{row("s1", "2026-03-03", 1, "claude-sonnet-4-5", 100, 10)}}},
		{
			{Session: &s1, Usage: []UsageRow{row("s1", "2026-03-03", 1, "claude-sonnet-4-5", 50, 5), row("s1", "2026-03-04", 2, "claude-sonnet-4-5", 7, 1)}},
			{Session: &s2, Usage: []UsageRow{row("s2", "2026-03-04", 1, "gpt-5", 1000, 100)}},
		},
	}
	for _, b := range batches {
		if _, err := st.SaveBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tests := []struct {
		since string
		want  []UsageRow
	}{
		{"", []UsageRow{
			{SessionID: "s1", Day: "2026-03-03", Model: "claude-sonnet-4-5", Tokens: sessions.Tokens{Input: 150, Output: 15}},
			{SessionID: "s1", Day: "2026-03-04", Model: "claude-sonnet-4-5", Tokens: sessions.Tokens{Input: 7, Output: 1}},
			{SessionID: "s2", Day: "2026-03-04", Model: "gpt-5", Tokens: sessions.Tokens{Input: 1000, Output: 100}},
		}},
		{"2026-03-04", []UsageRow{
			{SessionID: "s1", Day: "2026-03-04", Model: "claude-sonnet-4-5", Tokens: sessions.Tokens{Input: 7, Output: 1}},
			{SessionID: "s2", Day: "2026-03-04", Model: "gpt-5", Tokens: sessions.Tokens{Input: 1000, Output: 100}},
		}},
		{"2026-03-05", nil},
	}
	for _, tt := range tests {
		got, err := st.UsageSince(ctx, tt.since)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("UsageSince(%q) =\n%+v\nwant\n%+v", tt.since, got, tt.want)
		}
	}
	if _, err := st.UsageSince(ctx, "yesterday"); err == nil || !strings.Contains(err.Error(), "YYYY-MM-DD") {
		t.Errorf("a bad day: err = %v", err)
	}

	// Forgetting a session with its timeline drops its history; keeping the
	// timeline keeps it.
	if _, err := st.SaveBatch(ctx, []BatchItem{{Forget: &Forget{ID: "s2", Timeline: DropTimeline}}, {Forget: &Forget{ID: "s1", Timeline: KeepTimeline}}}); err != nil {
		t.Fatal(err)
	}
	got, err := st.UsageSince(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].SessionID != "s1" || got[1].SessionID != "s1" {
		t.Errorf("after forgetting: %+v, want s1's two rows", got)
	}
}

// A bad row is refused with the batch, naming what is wrong.
func TestUsageRowRefused(t *testing.T) {
	st, _ := openTemp(t)
	for _, tt := range []struct {
		row  UsageRow
		want string
	}{
		{UsageRow{Day: "2026-03-04", Time: base}, "empty session id"},
		{UsageRow{SessionID: "s", Day: "4 March", Time: base}, "not YYYY-MM-DD"},
		{UsageRow{SessionID: "s", Day: "2026-03-04", Tokens: sessions.Tokens{Output: -1}, Time: base}, "negative"},
		{UsageRow{SessionID: "s", Day: "2026-03-04"}, "zero time"},
	} {
		err := st.AddUsage(context.Background(), []UsageRow{tt.row})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want %q", tt.row, err, tt.want)
		}
	}
}

// Recoveries are counted from the actions' intent rows since a time, per
// session and only for the kinds asked.
func TestRecoveriesSince(t *testing.T) {
	ctx := context.Background()
	st, _ := openTemp(t)
	ev := func(id string, at time.Time, detail string) TimelineEvent {
		return TimelineEvent{SessionID: id, Time: at, Kind: "k", Detail: []byte(detail)}
	}
	for _, e := range []TimelineEvent{
		ev("a", base.Add(-time.Hour), `{"action":"nudge","outcome":"ok"}`), // before since
		ev("a", base, `{"action":"nudge","outcome":"ok"}`),
		ev("a", base.Add(time.Minute), `{"action":"continue","outcome":"failed: x"}`),
		ev("a", base.Add(time.Minute), `{"action":"escalate","outcome":"ok"}`), // not a recovery
		ev("a", base.Add(time.Minute), `{"action":"nudge"}`),                   // a failed nudge's record, no intent
		ev("b", base.Add(time.Minute), `{"action":"resume","outcome":"pending"}`),
	} {
		if _, err := st.AppendEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.RecoveriesSince(ctx, base, []string{"nudge", "continue", "resume"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"a": 2, "b": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("RecoveriesSince = %v, want %v", got, want)
	}
}
