package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// BenchmarkAppendEvent is the cost of one timeline row: one autocommit
// transaction in WAL mode.
func BenchmarkAppendEvent(b *testing.B) {
	s, _ := openTemp(b)
	ctx := context.Background()
	ev := TimelineEvent{SessionID: "bench", Time: base, Kind: "marked_suspect", TurnGeneration: 1,
		Detail: json.RawMessage(`{"silent_minutes":12,"open":"Bash"}`)}
	for b.Loop() {
		ev.Time = ev.Time.Add(time.Millisecond)
		if _, err := s.AppendEvent(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveSessionWithEvents is the cost of one state change as the
// supervisor records it: the session upsert plus two timeline rows in one
// transaction.
func BenchmarkSaveSessionWithEvents(b *testing.B) {
	s, _ := openTemp(b)
	ctx := context.Background()
	sess := fullSession("bench", base)
	events := []TimelineEvent{
		{Time: base, Kind: "marked_suspect", TurnGeneration: 7, Detail: json.RawMessage(`{"silent_minutes":12}`)},
		{Time: base, Kind: "stall_interrupt", TurnGeneration: 7},
	}
	for b.Loop() {
		sess.UpdatedAt = sess.UpdatedAt.Add(time.Millisecond)
		sess.State = sessions.Interrupted
		if err := s.SaveSessionWithEvents(ctx, sess, events); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveBatch is a burst as the supervisor's writer commits it: 50
// sessions changing at once, each with its upsert and three timeline rows,
// in one transaction. rows/s compares with BenchmarkAppendEvent's one row
// per transaction.
func BenchmarkSaveBatch(b *testing.B) {
	s, _ := openTemp(b)
	ctx := context.Background()
	const changes = 50
	items := make([]BatchItem, changes)
	for i := range items {
		sess := fullSession(fmt.Sprintf("bench-%02d", i), base)
		items[i] = BatchItem{Session: &sess, Events: []TimelineEvent{
			{Time: base, Kind: "marked_suspect", TurnGeneration: 7, Detail: json.RawMessage(`{"silent_minutes":12}`)},
			{Time: base, Kind: "stall_interrupt", TurnGeneration: 7},
			{Time: base, Kind: "state_changed", TurnGeneration: 7, Detail: json.RawMessage(`{"from":"working","to":"suspect"}`)},
		}}
	}
	rows := 0
	for b.Loop() {
		if _, err := s.SaveBatch(ctx, items); err != nil {
			b.Fatal(err)
		}
		rows += changes * 3
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// TestSaveBatchIsAllOrNothing: a batch with one row that the database
// refuses stores nothing, and a good batch stores every item in order with
// the ids it returns.
func TestSaveBatchIsAllOrNothing(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	a, c := fullSession("batch-a", base), fullSession("batch-c", base)
	good := []BatchItem{
		{Session: &a, Events: []TimelineEvent{{Time: base, Kind: "one"}, {Time: base, Kind: "two"}}},
		{Events: []TimelineEvent{{SessionID: "batch-a", Time: base, Kind: "intent", Detail: json.RawMessage(`{"outcome":"pending"}`)}}},
		{Session: &c},
	}
	ids, err := s.SaveBatch(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || len(ids[0]) != 2 || len(ids[1]) != 1 || ids[0][0] >= ids[0][1] || ids[0][1] >= ids[1][0] {
		t.Fatalf("ids %v: want 2, 1 and 0 increasing ids", ids)
	}
	if _, err := s.SaveBatch(ctx, []BatchItem{{OutcomeID: ids[1][0], Outcome: "ok"}}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Timeline(ctx, "batch-a", 0)
	if err != nil || len(rows) != 3 {
		t.Fatalf("timeline %v, %v: want 3 rows", rows, err)
	}
	if !strings.Contains(string(rows[0].Detail), `"outcome":"ok"`) {
		t.Errorf("the outcome was not recorded: %s", rows[0].Detail)
	}
	if _, err := s.GetSession(ctx, "batch-c"); err != nil {
		t.Errorf("batch-c not saved: %v", err)
	}

	b := fullSession("batch-b", base)
	bad := []BatchItem{
		{Session: &b, Events: []TimelineEvent{{Time: base, Kind: "fine"}}},
		{Events: []TimelineEvent{{SessionID: "batch-b", Time: base, Kind: "broken", Detail: json.RawMessage(`{not json`)}}},
	}
	if _, err := s.SaveBatch(ctx, bad); err == nil {
		t.Fatal("a batch with an invalid row was stored")
	}
	if _, err := s.GetSession(ctx, "batch-b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("part of a failed batch was stored: %v", err)
	}
}

// BenchmarkSaveBatchRowsOnly is a burst of timeline rows alone (a
// tool-heavy stream's rows for sessions whose value did not change), 150
// rows in one transaction: the writer's best case.
func BenchmarkSaveBatchRowsOnly(b *testing.B) {
	s, _ := openTemp(b)
	ctx := context.Background()
	items := make([]BatchItem, 50)
	for i := range items {
		items[i] = BatchItem{Events: []TimelineEvent{
			{SessionID: fmt.Sprintf("bench-%02d", i), Time: base, Kind: "marked_suspect", TurnGeneration: 7, Detail: json.RawMessage(`{"silent_minutes":12}`)},
			{SessionID: fmt.Sprintf("bench-%02d", i), Time: base, Kind: "stall_interrupt", TurnGeneration: 7},
			{SessionID: fmt.Sprintf("bench-%02d", i), Time: base, Kind: "state_changed", TurnGeneration: 7, Detail: json.RawMessage(`{"from":"working","to":"suspect"}`)},
		}}
	}
	rows := 0
	for b.Loop() {
		if _, err := s.SaveBatch(ctx, items); err != nil {
			b.Fatal(err)
		}
		rows += 150
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
