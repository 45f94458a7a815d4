package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// openTemp opens a store in a fresh temporary directory and closes it when
// the test ends.
func openTemp(t testing.TB) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// base is a fixed instant with a full nanosecond fraction, in UTC, so that
// values survive the JSON and text round trips exactly and compare with
// reflect.DeepEqual.
var base = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)

// fullSession returns a session with every field set, maps and pointers
// included, so a round trip that drops anything is caught.
func fullSession(id string, updated time.Time) sessions.Session {
	code := 137
	return sessions.Session{
		ID:             id,
		Name:           "refactor " + id,
		Agent:          "claude",
		AgentSessionID: "agent-" + id,
		Source:         sessions.Hooked,
		Cwd:            "/home/u/src/project with space",
		PID:            4242,
		State:          sessions.Suspect,
		Evidence:       "Suspect: 12 min silent, Bash open, pid 4242 alive",
		WaitReason:     sessions.WaitPermission,
		Failure: sessions.Failure{
			Kind:    sessions.RateLimit,
			RetryAt: base.Add(time.Hour),
			Message: "rate limited",
		},
		NeedsAttention: true,
		TurnGeneration: 7,
		InTurn:         true,
		TurnStarted:    base.Add(-time.Minute),
		LastEventAt:    base.Add(-30 * time.Second),
		OpenTools: map[string]sessions.OpenCall{
			"toolu_1": {Name: "Bash", Started: base.Add(-20 * time.Second)},
			"toolu_2": {Name: "Read", Started: base.Add(-10 * time.Second)},
		},
		OpenTasks: map[string]sessions.OpenCall{
			"task_1": {Name: "build", Started: base.Add(-5 * time.Second)},
		},
		CompactionStarted: base.Add(-2 * time.Second),
		Permission:        &sessions.Permission{RequestID: "req-1", Tool: "Bash"},
		InterruptBy:       new(sessions.BySupervisor),
		Nudge:             sessions.NudgeBudget{Attempts: 1, LastNudge: base.Add(-3 * time.Minute)},
		ProcessAlive:      true,
		LastExitCode:      &code,
		PermissionMode:    "acceptEdits",
		SkippedLines:      3,
		StateChangedAt:    base.Add(-time.Second),
		CreatedAt:         base.Add(-24 * time.Hour),
		UpdatedAt:         updated,
	}
}

// fileHash returns the hex SHA-256 of a file's bytes.
func fileHash(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// dirNames lists a directory's entries, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read dir %s: %v", dir, err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

// mustExec runs raw SQL against the store, for tests that must put the database
// into a state the API refuses to produce.
func mustExec(t *testing.T, s *Store, query string, args ...any) {
	t.Helper()
	if _, err := s.db.ExecContext(context.Background(), query, args...); err != nil {
		t.Fatalf("exec %q: %v", query, err)
	}
}

func ptr[T any](v T) *T { return &v }

// storedSetting is key's stored row (the settings package resolves it).
func storedSetting(ctx context.Context, s *Store, key string) (string, error) {
	rows, err := s.StoredSettings(ctx)
	return rows[key], err
}
