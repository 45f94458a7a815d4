package storage

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestIntentOutcomes(t *testing.T) {
	ctx := context.Background()
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	add := func(kind, detail string) int64 {
		id, err := st.AppendEvent(ctx, TimelineEvent{SessionID: "s1", Time: now, Kind: kind, TurnGeneration: 2, Detail: json.RawMessage(detail)})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	done := add("nudge_sent", `{"message":"nudge","outcome":"pending"}`)
	open := add("stall_interrupt", `{"message":"interrupt","outcome":"pending"}`)
	add("state_changed", `{"message":"x"}`)

	if err := st.SetEventOutcome(ctx, done, "ok"); err != nil {
		t.Fatal(err)
	}
	pending, err := st.PendingIntents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].ID != open || pending[0].Kind != "stall_interrupt" || pending[0].TurnGeneration != 2 {
		t.Fatalf("pending = %+v, want only the stall_interrupt intent %d", pending, open)
	}
	evs, err := st.Timeline(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.ID == done {
			var d map[string]string
			if err := json.Unmarshal(e.Detail, &d); err != nil {
				t.Fatal(err)
			}
			if d["outcome"] != "ok" || d["message"] != "nudge" {
				t.Fatalf("detail after outcome = %v", d)
			}
		}
	}
	if err := st.SetEventOutcome(ctx, 9999, "ok"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("outcome of a missing row: err = %v, want ErrNotFound", err)
	}
}
