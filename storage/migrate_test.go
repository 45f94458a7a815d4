package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestMigrationsAreSequential(t *testing.T) {
	for i, m := range migrations {
		if m.version != i+1 {
			t.Errorf("migrations[%d] has version %d, want %d", i, m.version, i+1)
		}
		if m.name == "" || len(m.stmts) == 0 {
			t.Errorf("migration %d has no name or no statements", m.version)
		}
	}
	if SupportedSchemaVersion() != len(migrations) {
		t.Errorf("SupportedSchemaVersion() = %d, want %d", SupportedSchemaVersion(), len(migrations))
	}
	// The runner itself refuses a gap rather than recording one.
	bad := []migration{migrations[0], {version: 3, name: "gap", stmts: []string{"SELECT 1"}}}
	_, err := openWith(context.Background(), t.TempDir(), bad)
	if err == nil || !strings.Contains(err.Error(), "out of sequence") {
		t.Fatalf("openWith(gap) = %v, want an out-of-sequence error", err)
	}
}

// schemaObjects lists the tables and indexes the store created.
func schemaObjects(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.db.Query(`SELECT type || ' ' || name FROM sqlite_schema
		WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMigrateEmptyDatabase(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	v, err := s.SchemaVersion(ctx)
	if err != nil || v != SupportedSchemaVersion() {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, SupportedSchemaVersion())
	}
	want := []string{
		"index sessions_state",
		"index sessions_updated_at",
		"index supervisor_events_kind_time",
		"index supervisor_events_pending",
		"index supervisor_events_session_time",
		"index supervisor_events_time",
		"index turn_usage_day",
		"table schema_migrations",
		"table sessions",
		"table settings",
		"table supervisor_events",
		"table turn_usage",
	}
	if got := schemaObjects(t, s); !slices.Equal(got, want) {
		t.Errorf("schema objects:\n got %q\nwant %q", got, want)
	}
	// Every step is recorded with a readable time.
	rows, err := s.db.Query(`SELECT version, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []int
	for rows.Next() {
		var v int
		var at string
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		if _, err := parseTime(at); err != nil {
			t.Errorf("version %d: %v", v, err)
		}
		versions = append(versions, v)
	}
	if !slices.Equal(versions, []int{1, 2, 3, 4}) {
		t.Errorf("applied versions %v, want [1 2 3 4]", versions)
	}
}

func TestReopenIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		s, err := Open(dir)
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		var n int
		if err := s.db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != len(migrations) {
			t.Errorf("open #%d: %d schema_migrations rows, want %d", i+1, n, len(migrations))
		}
		s.Close()
	}
}

// TestMigrateFromVersion1 builds a database the way the first release left
// it, with data in every table, and opens it with the current build.
func TestMigrateFromVersion1(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	old, err := openWith(ctx, dir, migrations[:1])
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := old.SchemaVersion(ctx); v != 1 {
		t.Fatalf("old database at version %d, want 1", v)
	}
	if slices.Contains(schemaObjects(t, old), "index supervisor_events_kind_time") {
		t.Fatal("version 1 already has migration 2's index; the test would prove nothing")
	}
	sessA, sessB := fullSession("aaaa", base), fullSession("bbbb", base.Add(time.Minute))
	if err := old.SaveSessionWithEvents(ctx, sessA, []TimelineEvent{
		{Time: base, Kind: "marked_suspect", TurnGeneration: 7, Detail: []byte(`{"silent_min":12}`)},
		{Time: base.Add(time.Second), Kind: "escalated", TurnGeneration: 7},
	}); err != nil {
		t.Fatal(err)
	}
	if err := old.SaveSession(ctx, sessB); err != nil {
		t.Fatal(err)
	}
	if err := old.WriteSettings(ctx, map[string]*string{"supervisor.stall_hard_minutes": ptr("240")}); err != nil {
		t.Fatal(err)
	}
	wantTimeline, err := old.Timeline(ctx, "aaaa", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open of a version-1 database: %v", err)
	}
	defer s.Close()
	if v, err := s.SchemaVersion(ctx); err != nil || v != SupportedSchemaVersion() {
		t.Fatalf("after Open SchemaVersion = %d, %v; want %d", v, err, SupportedSchemaVersion())
	}
	if !slices.Contains(schemaObjects(t, s), "index supervisor_events_kind_time") {
		t.Error("migration 2's index is missing after Open")
	}
	got, err := s.ListSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []sessions.Session{sessB, sessA}; !reflect.DeepEqual(got, want) {
		t.Errorf("sessions after migration:\n got %+v\nwant %+v", got, want)
	}
	tl, err := s.Timeline(ctx, "aaaa", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tl, wantTimeline) {
		t.Errorf("timeline after migration:\n got %+v\nwant %+v", tl, wantTimeline)
	}
	if v, err := storedSetting(ctx, s, "supervisor.stall_hard_minutes"); err != nil || v != "240" {
		t.Errorf("setting after migration = %q, %v; want 240", v, err)
	}
	// And the new index serves the query it was added for.
	esc, err := s.EventsByKind(ctx, "escalated", base, 0)
	if err != nil || len(esc) != 1 || esc[0].SessionID != "aaaa" {
		t.Errorf("EventsByKind(escalated) = %+v, %v; want the one escalation", esc, err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSession(ctx, fullSession("keep-me", base)); err != nil {
		t.Fatal(err)
	}
	// What a future build would leave: a step this build does not know.
	mustExec(t, s, `INSERT INTO schema_migrations(version, applied_at) VALUES (99, ?)`, formatTime(base))
	mustExec(t, s, `CREATE TABLE from_the_future(x)`)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	before, names := fileHash(t, path), dirNames(t, dir)

	s, err = Open(dir)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded on a database from a newer build")
	}
	if !errors.Is(err, ErrTooNew) {
		t.Fatalf("Open error %q does not wrap ErrTooNew", err)
	}
	for _, want := range []string{path, "version 99", fmt.Sprintf("up to version %d", SupportedSchemaVersion()), "upgrade"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if fileHash(t, path) != before {
		t.Error("Open modified the newer database")
	}
	if got := dirNames(t, dir); !slices.Equal(got, names) {
		t.Errorf("Open left files behind: before %q, after %q", names, got)
	}
}

// TestEventsByKindUsesIndex pins the reason migration 2 exists: without its
// index the query scans and sorts the whole timeline.
func TestEventsByKindUsesIndex(t *testing.T) {
	s, _ := openTemp(t)
	rows, err := s.db.Query(`EXPLAIN QUERY PLAN `+eventsByKindQuery, "escalated", formatTime(base), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(plan, " | ")
	if !strings.Contains(joined, "supervisor_events_kind_time") || strings.Contains(joined, "TEMP B-TREE") {
		t.Errorf("query plan %q: want a search of supervisor_events_kind_time with no sort step", joined)
	}
}
