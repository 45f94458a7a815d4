package storage

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// The settings table holds each setting's value as the user set it, by key.
// What the keys are, their defaults, validation and the values in force are
// the settings package's (settings.Registry); the store only keeps the rows
// (it is a settings.Rows).

// WriteSettings stores (non-nil) or deletes (nil) values in one transaction,
// so a change of several keys is applied whole or not at all.
func (s *Store) WriteSettings(ctx context.Context, changes map[string]*string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("saving settings: %w", err)
	}
	defer tx.Rollback()
	now := formatTime(time.Now())
	keys := make([]string, 0, len(changes))
	for k := range changes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		v := changes[key]
		if v == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM settings WHERE key = ?`, key)
		} else {
			_, err = tx.ExecContext(ctx, `
				INSERT INTO settings(key, value, updated_at) VALUES (?, ?, ?)
				ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
				key, *v, now)
		}
		if err != nil {
			return fmt.Errorf("saving %s: %w", key, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("saving settings: %w", err)
	}
	return nil
}

// StoredSettings reads every stored row. Rows for keys this build does not
// know (a newer build's, or typos made by hand) are returned too and simply
// never looked up.
func (s *Store) StoredSettings(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT key, value FROM settings`)
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("read settings: %w", err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	return out, nil
}
