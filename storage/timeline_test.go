package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestTimelineRoundTrip(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	in := []TimelineEvent{
		{SessionID: "s1", Time: base, Kind: "marked_suspect", TurnGeneration: 3,
			Detail: json.RawMessage(`{"silent_minutes":12.5,"open":["Bash"]}`)},
		// A non-UTC time is stored as the same instant and read back in UTC.
		{SessionID: "s1", Time: base.Add(time.Second).In(time.FixedZone("CEST", 2*3600)), Kind: "nudge_sent", TurnGeneration: 4},
		{SessionID: "s2", Time: base.Add(2 * time.Second), Kind: "escalated", TurnGeneration: 1, Detail: json.RawMessage(`[]`)},
	}
	var ids []int64
	for _, ev := range in {
		id, err := s.AppendEvent(ctx, ev)
		if err != nil {
			t.Fatalf("AppendEvent: %v", err)
		}
		ids = append(ids, id)
	}
	if !(ids[0] < ids[1] && ids[1] < ids[2]) {
		t.Errorf("ids %v are not increasing", ids)
	}
	got, err := s.Timeline(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []TimelineEvent{
		{ID: ids[1], SessionID: "s1", Time: base.Add(time.Second), Kind: "nudge_sent", TurnGeneration: 4,
			Detail: json.RawMessage(`{}`)}, // no detail is stored as an empty object
		{ID: ids[0], SessionID: "s1", Time: base, Kind: "marked_suspect", TurnGeneration: 3,
			Detail: json.RawMessage(`{"silent_minutes":12.5,"open":["Bash"]}`)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Timeline(s1):\n got %+v\nwant %+v", got, want)
	}
	// The JSON form is what the local API serves.
	b, err := json.Marshal(got[1])
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := fmt.Sprintf(`{"id":%d,"session_id":"s1","time":"2026-03-04T05:06:07.123456789Z","kind":"marked_suspect","turn_generation":3,"detail":{"silent_minutes":12.5,"open":["Bash"]}}`, ids[0])
	if string(b) != wantJSON {
		t.Errorf("JSON:\n got %s\nwant %s", b, wantJSON)
	}
}

func TestTimelineOrderAndLimit(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	whole := time.Date(2026, 1, 1, 0, 0, 7, 0, time.UTC)
	// Appended out of time order. "tie-1" and "tie-2" share a time and
	// must come newest id first; "half" vs "whole" is the case a trimmed
	// RFC3339Nano text would mis-sort.
	appendKindsAt(t, s, []string{"s"}, []kindAt{
		{"half", whole.Add(500 * time.Millisecond)},
		{"whole", whole},
		{"tie-1", whole.Add(time.Minute)},
		{"tie-2", whole.Add(time.Minute)},
		{"oldest", whole.Add(-time.Hour)},
		{"newest", whole.Add(time.Hour)},
	})
	appendKindsAt(t, s, []string{"other"}, []kindAt{{"other", whole.Add(2 * time.Hour)}})
	tests := []struct {
		session string
		limit   int
		want    string
	}{
		{"s", 0, "newest tie-2 tie-1 half whole oldest"},
		{"s", -1, "newest tie-2 tie-1 half whole oldest"},
		{"s", 3, "newest tie-2 tie-1"},
		{"s", 1, "newest"},
		{"s", 100, "newest tie-2 tie-1 half whole oldest"},
		{"", 2, "other newest"},
		{"nobody", 0, ""},
	}
	for _, tt := range tests {
		got, err := s.Timeline(ctx, tt.session, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		if kinds := eventKinds(got); kinds != tt.want {
			t.Errorf("Timeline(%q, %d) = %q, want %q", tt.session, tt.limit, kinds, tt.want)
		}
	}
}

func TestPruneEvents(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	cutoff := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	appendKindsAt(t, s, []string{"s1", "s2"}, []kindAt{
		{"old-a", cutoff.Add(-40 * 24 * time.Hour)},
		{"old-b", cutoff.Add(-time.Nanosecond)},
		{"boundary", cutoff}, // not older than the cutoff: kept
		{"new", cutoff.Add(500 * time.Millisecond)},
	})
	n, err := s.PruneEvents(ctx, cutoff)
	if err != nil || n != 4 {
		t.Fatalf("PruneEvents = %d, %v; want 4", n, err)
	}
	got, err := s.Timeline(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if kinds, want := eventKinds(got), "new new boundary boundary"; kinds != want {
		t.Errorf("after prune: %q, want %q", kinds, want)
	}
	if n, err := s.PruneEvents(ctx, cutoff); err != nil || n != 0 {
		t.Errorf("second PruneEvents = %d, %v; want 0", n, err)
	}
}

func TestAppendEventRejects(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	tests := []struct {
		name string
		ev   TimelineEvent
		want string
	}{
		{"empty session", TimelineEvent{Time: base, Kind: "k"}, "empty session id"},
		{"empty kind", TimelineEvent{SessionID: "s", Time: base}, "empty kind"},
		{"zero time", TimelineEvent{SessionID: "s", Kind: "k"}, "zero time"},
		{"invalid detail", TimelineEvent{SessionID: "s", Time: base, Kind: "k", Detail: json.RawMessage(`{"a":`)}, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.AppendEvent(ctx, tt.ev); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("AppendEvent = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	if all, _ := s.Timeline(ctx, "", 0); len(all) != 0 {
		t.Errorf("rejected events were stored: %+v", all)
	}
}

func TestSaveSessionWithEvents(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	sess := fullSession("s1", base)
	err := s.SaveSessionWithEvents(ctx, sess, []TimelineEvent{
		{Time: base, Kind: "marked_suspect", TurnGeneration: 7}, // filed under s1
		{SessionID: "s1", Time: base.Add(time.Second), Kind: "stall_interrupt", TurnGeneration: 7},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSession(ctx, "s1")
	if err != nil || !reflect.DeepEqual(got, sess) {
		t.Fatalf("GetSession = %+v, %v; want %+v", got, err, sess)
	}
	tl, err := s.Timeline(ctx, "s1", 0)
	if err != nil || len(tl) != 2 || tl[0].Kind != "stall_interrupt" || tl[1].Kind != "marked_suspect" || tl[1].SessionID != "s1" {
		t.Fatalf("Timeline = %+v, %v", tl, err)
	}
	// No events is a plain save.
	sess.State = sessions.Interrupted
	if err := s.SaveSessionWithEvents(ctx, sess, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSession(ctx, "s1"); got.State != sessions.Interrupted {
		t.Errorf("state = %v, want interrupted", got.State)
	}
}

// TestSaveSessionWithEventsIsAtomic makes the last insert of the
// transaction fail inside SQLite and checks that neither the session's new
// state nor the earlier event was kept.
func TestSaveSessionWithEventsIsAtomic(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	before := fullSession("s1", base)
	if err := s.SaveSession(ctx, before); err != nil {
		t.Fatal(err)
	}
	mustExec(t, s, `CREATE TRIGGER fail_boom BEFORE INSERT ON supervisor_events
		WHEN NEW.kind = 'boom' BEGIN SELECT RAISE(ABORT, 'boom refused'); END`)

	after := before.Clone()
	after.State = sessions.Interrupted
	after.UpdatedAt = base.Add(time.Minute)
	err := s.SaveSessionWithEvents(ctx, after, []TimelineEvent{
		{Time: base, Kind: "stall_interrupt"},
		{Time: base, Kind: "boom"},
	})
	if err == nil || !strings.Contains(err.Error(), "boom refused") {
		t.Fatalf("SaveSessionWithEvents = %v, want the trigger's error", err)
	}
	got, err := s.GetSession(ctx, "s1")
	if err != nil || !reflect.DeepEqual(got, before) {
		t.Errorf("session after a failed transaction = %+v, %v; want the old one", got, err)
	}
	if tl, _ := s.Timeline(ctx, "s1", 0); len(tl) != 0 {
		t.Errorf("events of a failed transaction were kept: %+v", tl)
	}
}

func TestSaveSessionWithEventsRejectsForeignEvent(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	err := s.SaveSessionWithEvents(ctx, fullSession("s1", base), []TimelineEvent{
		{Time: base, Kind: "ok"},
		{SessionID: "s2", Time: base, Kind: "misfiled"},
	})
	if err == nil || !strings.Contains(err.Error(), "belongs to session s2") {
		t.Fatalf("SaveSessionWithEvents = %v, want a misfiled-event error", err)
	}
	if _, err := s.GetSession(ctx, "s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("session was saved despite the error: %v", err)
	}
	if tl, _ := s.Timeline(ctx, "", 0); len(tl) != 0 {
		t.Errorf("events were saved despite the error: %+v", tl)
	}
}

func TestEventsByKind(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	for i, e := range []struct {
		sid, kind string
		at        time.Time
	}{
		{"a", "escalated", base.Add(-time.Hour)}, // before since
		{"a", "escalated", base},                 // at since: included
		{"b", "nudge_sent", base.Add(time.Minute)},
		{"b", "escalated", base.Add(2 * time.Minute)},
	} {
		if _, err := s.AppendEvent(ctx, TimelineEvent{SessionID: e.sid, Time: e.at, Kind: e.kind, TurnGeneration: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.EventsByKind(ctx, "escalated", base, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].SessionID != "b" || got[1].SessionID != "a" || got[1].TurnGeneration != 1 {
		t.Errorf("EventsByKind = %+v, want b's then a's second escalation", got)
	}
	if got, _ := s.EventsByKind(ctx, "escalated", base, 1); len(got) != 1 || got[0].SessionID != "b" {
		t.Errorf("EventsByKind limit 1 = %+v", got)
	}
}

// TestTimelineDetailStoredAsWritten: a typed detail is stored and read back
// byte for byte, an action's outcome set by SQLite (json_set) reads back as
// the detail the runtime publishes with it, and a row an older build wrote
// as a map decodes.
func TestTimelineDetailStoredAsWritten(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	intent := sessions.TimelineDetail{Message: "turn 3 was interrupted; sending the continuation nudge (1/2)", Action: "nudge", Outcome: OutcomePending}
	id, err := s.AppendEvent(ctx, TimelineEvent{SessionID: "s1", Time: base, Kind: "nudge_sent", TurnGeneration: 3, Detail: intent.JSON()})
	if err != nil {
		t.Fatal(err)
	}
	old := `{"action":"nudge","message":"an old row","outcome":"ok","pid":4242}`
	if _, err := s.AppendEvent(ctx, TimelineEvent{SessionID: "s1", Time: base.Add(time.Second), Kind: "nudge_sent", Detail: json.RawMessage(old)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetEventOutcome(ctx, id, "ok"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Timeline(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	intent.Outcome = "ok"
	if len(got) != 2 || string(got[1].Detail) != string(intent.JSON()) || string(got[0].Detail) != old {
		t.Fatalf("read back %+v; want %s and %s", got, intent.JSON(), old)
	}
	var d sessions.TimelineDetail
	if err := json.Unmarshal(got[0].Detail, &d); err != nil || d.Message != "an old row" || d.PID != 4242 || d.Outcome != "ok" {
		t.Errorf("the old row decoded as %+v (%v)", d, err)
	}
}

// kindAt is a timeline event a test appends: its kind, at a chosen time.
type kindAt struct {
	kind string
	at   time.Time
}

// appendKindsAt appends each event to each of the sessions, in order.
func appendKindsAt(t *testing.T, s *Store, sessionIDs []string, events []kindAt) {
	t.Helper()
	for _, e := range events {
		for _, sid := range sessionIDs {
			if _, err := s.AppendEvent(context.Background(), TimelineEvent{SessionID: sid, Time: e.at, Kind: e.kind}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// eventKinds is the events' kinds in order, space-separated.
func eventKinds(events []TimelineEvent) string {
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	return strings.Join(kinds, " ")
}
