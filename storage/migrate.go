package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migration is one schema step. Steps are append-only: once released, a
// migration is never edited, because databases in the field already ran it;
// a fix is a new step.
type migration struct {
	version int
	name    string
	stmts   []string
}

// migrations is the schema history, in order, versions 1, 2, 3, …
var migrations = []migration{
	{
		version: 1,
		name:    "sessions, timeline and settings",
		stmts: []string{
			// data is the sessions.Session JSON, the public contract; the
			// other columns copy the fields queries filter and sort on.
			`CREATE TABLE sessions (
				id              TEXT PRIMARY KEY,
				agent           TEXT,
				state           TEXT NOT NULL,
				needs_attention INTEGER,
				updated_at      TEXT NOT NULL,
				data            TEXT NOT NULL
			)`,
			`CREATE INDEX sessions_state ON sessions(state)`,
			`CREATE INDEX sessions_updated_at ON sessions(updated_at)`,
			// No foreign key to sessions: the timeline is an audit log and
			// may record an observation about a session before (or after)
			// its row exists.
			`CREATE TABLE supervisor_events (
				id              INTEGER PRIMARY KEY AUTOINCREMENT,
				session_id      TEXT NOT NULL,
				time            TEXT NOT NULL,
				kind            TEXT NOT NULL,
				turn_generation INTEGER NOT NULL,
				detail          TEXT NOT NULL
			)`,
			`CREATE INDEX supervisor_events_session_time ON supervisor_events(session_id, time)`,
			// Pruning by age and the all-sessions view scan by time.
			`CREATE INDEX supervisor_events_time ON supervisor_events(time)`,
			`CREATE TABLE settings (
				key        TEXT PRIMARY KEY,
				value      TEXT NOT NULL,
				updated_at TEXT NOT NULL
			)`,
		},
	},
	{
		version: 2,
		name:    "index the timeline by kind",
		stmts: []string{
			// EventsByKind ("every escalation since yesterday", across
			// sessions) would otherwise scan the whole timeline.
			`CREATE INDEX supervisor_events_kind_time ON supervisor_events(kind, time)`,
		},
	},
	{
		version: 3,
		name:    "index unfinished action intents",
		stmts: []string{
			// Boot looks for actions whose intent was written but whose
			// outcome never was; a partial index keeps that instant however
			// long the timeline grows.
			`CREATE INDEX supervisor_events_pending ON supervisor_events(id)
				WHERE json_extract(detail, '$.outcome') = 'pending'`,
		},
	},
	{
		version: 4,
		name:    "usage per turn and day",
		stmts: []string{
			// One row per session, local calendar day, turn and model: the
			// tokens the session's whole-life usage grew by, added up as
			// they are saved (usage.go). Not the timeline: it is never
			// pruned, since the daily totals and budgets are read from it.
			`CREATE TABLE turn_usage (
				session_id      TEXT NOT NULL,
				day             TEXT NOT NULL,
				turn_generation INTEGER NOT NULL,
				model           TEXT NOT NULL,
				input           INTEGER NOT NULL,
				output          INTEGER NOT NULL,
				cache_write     INTEGER NOT NULL,
				cache_read      INTEGER NOT NULL,
				updated_at      TEXT NOT NULL,
				PRIMARY KEY (session_id, day, turn_generation, model)
			)`,
			`CREATE INDEX turn_usage_day ON turn_usage(day)`,
		},
	},
}

// SupportedSchemaVersion is the newest schema version this build knows; a
// database at a higher version is refused with ErrTooNew.
func SupportedSchemaVersion() int { return latestVersion(migrations) }

func latestVersion(list []migration) int {
	if len(list) == 0 {
		return 0
	}
	return list[len(list)-1].version
}

// SchemaVersion returns the database's schema version: the highest applied
// migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	v, _, err := readVersion(ctx, s.db)
	if err != nil {
		return 0, fmt.Errorf("read schema version of %s: %w", s.path, err)
	}
	return v, nil
}

// queryRower is what *sql.DB and *sql.Tx share for single-row reads.
type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readVersion returns the highest applied migration and whether the
// schema_migrations table exists at all (a new, empty database has none).
func readVersion(ctx context.Context, q queryRower) (int, bool, error) {
	var n int
	if err := q.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n); err != nil {
		return 0, false, err
	}
	if n == 0 {
		return 0, false, nil
	}
	var v int
	if err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, true, err
	}
	return v, true, nil
}

// migrate applies every migration in list that the database lacks, each in
// its own transaction together with its schema_migrations row, so a crash
// between steps leaves a database at a well-defined version. The version is
// re-read inside each transaction (which holds the write lock), so two
// processes opening a new database at once cannot both apply a step.
func migrate(ctx context.Context, db *sql.DB, path string, list []migration) error {
	for i, m := range list {
		if m.version != i+1 {
			// A programming error, caught by the tests; refuse rather than
			// record a history that later builds would misread.
			return fmt.Errorf("migration %d (%s) is out of sequence: want version %d", m.version, m.name, i+1)
		}
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate %s: create schema_migrations: %w", path, err)
	}
	supported := latestVersion(list)
	for _, m := range list {
		err := func() error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback() //nolint:errcheck // a no-op after Commit
			cur, _, err := readVersion(ctx, tx)
			if err != nil {
				return err
			}
			if cur > supported {
				// A newer build migrated the file after our preflight.
				return tooNewError(path, cur, supported)
			}
			if cur >= m.version {
				return nil
			}
			for _, stmt := range m.stmts {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?)`,
				m.version, formatTime(time.Now())); err != nil {
				return err
			}
			return tx.Commit()
		}()
		if err != nil {
			return fmt.Errorf("migrate %s to version %d (%s): %w", path, m.version, m.name, err)
		}
	}
	return nil
}
