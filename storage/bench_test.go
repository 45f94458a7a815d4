package storage

import (
	"context"
	"encoding/json"
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
