package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// UsageRow is one share of a session's usage history: the tokens one model
// used for the session on one local calendar day, in one turn. Written as
// the session's whole-life usage (sessions.SessionUsage.Total) grows, each
// row adds to the row of the same key, so the history sums to what was
// saved with the session since the history began (migration 4).
type UsageRow struct {
	SessionID      string          `json:"session_id"`
	Day            string          `json:"day"` // YYYY-MM-DD, local time when it was recorded
	TurnGeneration int64           `json:"turn_generation"`
	Model          string          `json:"model"`
	Tokens         sessions.Tokens `json:"tokens"`
	// Time is when it was last added to (written, not read back by sums).
	Time time.Time `json:"-"`
}

func (u UsageRow) validate() error {
	switch {
	case u.SessionID == "":
		return errors.New("usage row: empty session id")
	case !validDay(u.Day):
		return fmt.Errorf("usage row for session %s: day %q is not YYYY-MM-DD", u.SessionID, u.Day)
	case u.Tokens.Input < 0 || u.Tokens.Output < 0 || u.Tokens.CacheWrite < 0 || u.Tokens.CacheRead < 0:
		return fmt.Errorf("usage row for session %s: negative tokens %+v", u.SessionID, u.Tokens)
	case u.Time.IsZero():
		return fmt.Errorf("usage row for session %s: zero time", u.SessionID)
	}
	return nil
}

func validDay(s string) bool {
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

// AddUsage adds rows to the usage history in one transaction.
func (s *Store) AddUsage(ctx context.Context, rows []UsageRow) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return addUsage(ctx, tx, rows) })
}

func addUsage(ctx context.Context, db execer, rows []UsageRow) error {
	for _, u := range rows {
		if err := u.validate(); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, `
			INSERT INTO turn_usage(session_id, day, turn_generation, model, input, output, cache_write, cache_read, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (session_id, day, turn_generation, model) DO UPDATE SET
				input = input + excluded.input, output = output + excluded.output,
				cache_write = cache_write + excluded.cache_write, cache_read = cache_read + excluded.cache_read,
				updated_at = excluded.updated_at`,
			u.SessionID, u.Day, u.TurnGeneration, u.Model,
			u.Tokens.Input, u.Tokens.Output, u.Tokens.CacheWrite, u.Tokens.CacheRead, formatTime(u.Time)); err != nil {
			return fmt.Errorf("add usage of session %s on %s: %w", u.SessionID, u.Day, err)
		}
	}
	return nil
}

// UsageSince returns the usage history from day since (YYYY-MM-DD; "" for
// all of it) on, summed per day, session and model (the turns added up),
// oldest day first.
func (s *Store) UsageSince(ctx context.Context, since string) ([]UsageRow, error) {
	if since != "" && !validDay(since) {
		return nil, fmt.Errorf("usage since %q: not a day (YYYY-MM-DD)", since)
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT day, session_id, model, SUM(input), SUM(output), SUM(cache_write), SUM(cache_read)
		FROM turn_usage WHERE day >= ? GROUP BY day, session_id, model ORDER BY day, session_id, model`, since)
	if err != nil {
		return nil, fmt.Errorf("read usage since %q: %w", since, err)
	}
	defer rows.Close()
	var out []UsageRow
	for rows.Next() {
		var u UsageRow
		if err := rows.Scan(&u.Day, &u.SessionID, &u.Model, &u.Tokens.Input, &u.Tokens.Output, &u.Tokens.CacheWrite, &u.Tokens.CacheRead); err != nil {
			return nil, fmt.Errorf("read usage since %q: %w", since, err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read usage since %q: %w", since, err)
	}
	return out, nil
}

// RecoveriesSince counts, per session, the automatic actions among kinds
// (their action names: "nudge", "continue", …) whose intent was recorded
// at or after since: what a recovery budget has spent today, read again at
// boot. An action's intent row carries its outcome; a row without one (a
// failed nudge's record) is not an action taken.
func (s *Store) RecoveriesSince(ctx context.Context, since time.Time, kinds []string) (map[string]int, error) {
	out := map[string]int{}
	if len(kinds) == 0 {
		return out, nil
	}
	q := `SELECT session_id, count(*) FROM supervisor_events
		WHERE time >= ? AND json_extract(detail, '$.outcome') IS NOT NULL AND json_extract(detail, '$.action') IN (?` +
		strings.Repeat(", ?", len(kinds)-1) + `) GROUP BY session_id`
	args := []any{formatTime(since)}
	for _, k := range kinds {
		args = append(args, k)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("count recoveries since %s: %w", formatTime(since), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("count recoveries since %s: %w", formatTime(since), err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count recoveries since %s: %w", formatTime(since), err)
	}
	return out, nil
}
