package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// ErrAmbiguous: an id prefix matches more than one session.
var ErrAmbiguous = errors.New("ambiguous session id prefix")

// SaveSession inserts or replaces the session. The whole Session is stored as
// its JSON (the public contract), so a field added to sessions.Session is
// persisted without a migration.
func (s *Store) SaveSession(ctx context.Context, sess sessions.Session) error {
	return saveSession(ctx, s.db, sess)
}

const upsertSessionSQL = `
		INSERT INTO sessions(id, agent, state, needs_attention, updated_at, data)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET
			agent = excluded.agent,
			state = excluded.state,
			needs_attention = excluded.needs_attention,
			updated_at = excluded.updated_at,
			data = excluded.data`

func saveSession(ctx context.Context, db execer, sess sessions.Session) error {
	if sess.ID == "" {
		return errors.New("save session: empty id")
	}
	data, err := json.Marshal(sess)
	if err != nil {
		return fmt.Errorf("save session %s: encode: %w", sess.ID, err)
	}
	_, err = db.ExecContext(ctx, upsertSessionSQL,
		sess.ID, sess.Agent, sess.State.String(), sess.NeedsAttention, formatTime(sess.UpdatedAt), string(data))
	if err != nil {
		return fmt.Errorf("save session %s: %w", sess.ID, err)
	}
	return nil
}

// GetSession returns the session with exactly this id; the error wraps
// ErrNotFound if there is none.
func (s *Store) GetSession(ctx context.Context, id string) (sessions.Session, error) {
	var data string
	err := s.db.QueryRowContext(ctx, `SELECT data FROM sessions WHERE id = ?`, id).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return sessions.Session{}, fmt.Errorf("session %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return sessions.Session{}, fmt.Errorf("get session %s: %w", id, err)
	}
	return decodeSession(id, data)
}

// FindSession returns the session whose id is idOrPrefix or, failing that,
// the one session whose id starts with it, so the CLI can accept the short
// ids it prints. No match wraps ErrNotFound; several wrap ErrAmbiguous and
// name them.
func (s *Store) FindSession(ctx context.Context, idOrPrefix string) (sessions.Session, error) {
	if idOrPrefix == "" {
		return sessions.Session{}, errors.New("find session: empty id")
	}
	// Ids sharing a prefix are contiguous in the primary key's (binary)
	// order, so this is a short index range scan from the prefix on; an
	// exact id sorts first.
	rows, err := s.db.QueryContext(ctx, `SELECT id, data FROM sessions WHERE id >= ? ORDER BY id`, idOrPrefix)
	if err != nil {
		return sessions.Session{}, fmt.Errorf("find session %q: %w", idOrPrefix, err)
	}
	defer rows.Close()
	const maxListed = 5
	var ids []string
	var first string
	for rows.Next() {
		var id, data string
		if err := rows.Scan(&id, &data); err != nil {
			return sessions.Session{}, fmt.Errorf("find session %q: %w", idOrPrefix, err)
		}
		if !strings.HasPrefix(id, idOrPrefix) {
			break
		}
		if id == idOrPrefix {
			return decodeSession(id, data)
		}
		if len(ids) == 0 {
			first = data
		}
		ids = append(ids, id)
		if len(ids) > maxListed {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return sessions.Session{}, fmt.Errorf("find session %q: %w", idOrPrefix, err)
	}
	switch {
	case len(ids) == 0:
		return sessions.Session{}, fmt.Errorf("no session id starts with %q: %w", idOrPrefix, ErrNotFound)
	case len(ids) == 1:
		return decodeSession(ids[0], first)
	}
	listed := strings.Join(ids[:min(len(ids), maxListed)], ", ")
	if len(ids) > maxListed {
		listed += ", …"
	}
	return sessions.Session{}, fmt.Errorf("%w: %q matches %s; type more of the id", ErrAmbiguous, idOrPrefix, listed)
}

// ListSessions returns every session, most recently updated first (ties by
// id, so the order is stable).
func (s *Store) ListSessions(ctx context.Context) ([]sessions.Session, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, data FROM sessions ORDER BY updated_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []sessions.Session
	for rows.Next() {
		var id, data string
		if err := rows.Scan(&id, &data); err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		sess, err := decodeSession(id, data)
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// DeleteSession removes the session and its timeline in one transaction: a
// timeline whose session is gone can no longer be shown anywhere. The error
// wraps ErrNotFound if there was no such session.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("delete session %s: %w", id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("delete session %s: %w", id, err)
		}
		if n == 0 {
			return fmt.Errorf("delete session %q: %w", id, ErrNotFound)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM supervisor_events WHERE session_id = ?`, id); err != nil {
			return fmt.Errorf("delete timeline of session %s: %w", id, err)
		}
		return nil
	})
}

func decodeSession(id, data string) (sessions.Session, error) {
	var sess sessions.Session
	if err := json.Unmarshal([]byte(data), &sess); err != nil {
		return sessions.Session{}, fmt.Errorf("decode stored session %s: %w", id, err)
	}
	return sess, nil
}
