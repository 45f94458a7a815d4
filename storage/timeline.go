package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// TimelineEvent is one row of a session's supervisor timeline: an
// observation ("marked suspect") or an action ("nudge sent"), with the turn
// generation it was decided for and a JSON detail.
type TimelineEvent struct {
	ID             int64           `json:"id"`
	SessionID      string          `json:"session_id"`
	Time           time.Time       `json:"time"`
	Kind           string          `json:"kind"`
	TurnGeneration int64           `json:"turn_generation"`
	Detail         json.RawMessage `json:"detail"`
}

// emptyDetail is stored for an event without detail, so the column always
// holds valid JSON that a reader can decode into a struct.
const emptyDetail = "{}"

// validate checks an event before it is written. A zero time or an empty
// kind is a bug in the caller, and an audit row that cannot be placed or
// read is worse than an error.
func (e TimelineEvent) validate() error { return e.Validate() }

// Validate checks an event before it is written (exported so a writer that
// batches many callers' rows can reject a bad one alone instead of failing
// the whole batch).
func (e TimelineEvent) Validate() error {
	switch {
	case e.SessionID == "":
		return errors.New("timeline event: empty session id")
	case e.Kind == "":
		return fmt.Errorf("timeline event for session %s: empty kind", e.SessionID)
	case e.Time.IsZero():
		return fmt.Errorf("timeline event %s for session %s: zero time", e.Kind, e.SessionID)
	case len(e.Detail) > 0 && !json.Valid(e.Detail):
		return fmt.Errorf("timeline event %s for session %s: detail is not valid JSON", e.Kind, e.SessionID)
	}
	return nil
}

// AppendEvent adds one event to the timeline and returns its id. The event's
// ID field is ignored: ids are assigned by the database, increasing.
func (s *Store) AppendEvent(ctx context.Context, ev TimelineEvent) (int64, error) {
	return appendEvent(ctx, s.db, ev)
}

const insertEventSQL = `
		INSERT INTO supervisor_events(session_id, time, kind, turn_generation, detail)
		VALUES (?, ?, ?, ?, ?)`

func appendEvent(ctx context.Context, db execer, ev TimelineEvent) (int64, error) {
	if err := ev.validate(); err != nil {
		return 0, err
	}
	detail := string(ev.Detail)
	if detail == "" {
		detail = emptyDetail
	}
	res, err := db.ExecContext(ctx, insertEventSQL,
		ev.SessionID, formatTime(ev.Time), ev.Kind, ev.TurnGeneration, detail)
	if err != nil {
		return 0, fmt.Errorf("append timeline event %s for session %s: %w", ev.Kind, ev.SessionID, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("append timeline event %s for session %s: %w", ev.Kind, ev.SessionID, err)
	}
	return id, nil
}

// SaveSessionWithEvents saves the session and appends its timeline events in
// one transaction, so a state change is never persisted without the rows
// that explain it, or the other way round. An event with an empty SessionID
// is filed under the session; one naming a different session is an error.
func (s *Store) SaveSessionWithEvents(ctx context.Context, sess sessions.Session, events []TimelineEvent) error {
	evs := make([]TimelineEvent, len(events))
	for i, ev := range events {
		switch ev.SessionID {
		case "":
			ev.SessionID = sess.ID
		case sess.ID:
		default:
			return fmt.Errorf("save session %s: event %d (%s) belongs to session %s", sess.ID, i, ev.Kind, ev.SessionID)
		}
		if err := ev.validate(); err != nil {
			return fmt.Errorf("save session %s: %w", sess.ID, err)
		}
		evs[i] = ev
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := saveSession(ctx, tx, sess); err != nil {
			return err
		}
		for _, ev := range evs {
			if _, err := appendEvent(ctx, tx, ev); err != nil {
				return err
			}
		}
		return nil
	})
}

// Timeline returns a session's events, newest first (ties by id, newest
// first). limit <= 0 returns them all. An empty sessionID returns every
// session's events.
func (s *Store) Timeline(ctx context.Context, sessionID string, limit int) ([]TimelineEvent, error) {
	if limit <= 0 {
		limit = -1 // SQLite: a negative LIMIT means no limit
	}
	what := fmt.Sprintf("timeline of session %q", sessionID)
	if sessionID == "" {
		return s.queryEvents(ctx, what, `
			SELECT id, session_id, time, kind, turn_generation, detail FROM supervisor_events
			ORDER BY time DESC, id DESC LIMIT ?`, limit)
	}
	return s.queryEvents(ctx, what, `
		SELECT id, session_id, time, kind, turn_generation, detail FROM supervisor_events
		WHERE session_id = ? ORDER BY time DESC, id DESC LIMIT ?`, sessionID, limit)
}

// queryEvents runs a query for timeline rows and reads them; what names
// them in an error ("read <what>: …").
func (s *Store) queryEvents(ctx context.Context, what, query string, args ...any) ([]TimelineEvent, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return evs, nil
}

// EventsByKind returns the events of one kind across all sessions at or
// after since, newest first; limit <= 0 returns them all. It is the "what
// happened while I was away" query (every escalation, every nudge).
func (s *Store) EventsByKind(ctx context.Context, kind string, since time.Time, limit int) ([]TimelineEvent, error) {
	if limit <= 0 {
		limit = -1
	}
	return s.queryEvents(ctx, kind+" events", eventsByKindQuery, kind, formatTime(since), limit)
}

// eventsByKindQuery is served by the supervisor_events_kind_time index
// (migration 2), without a sort step; a test checks the query plan.
const eventsByKindQuery = `
	SELECT id, session_id, time, kind, turn_generation, detail FROM supervisor_events
	WHERE kind = ? AND time >= ? ORDER BY time DESC, id DESC LIMIT ?`

// PruneEvents deletes events older than olderThan (every session's) and
// returns how many it deleted.
func (s *Store) PruneEvents(ctx context.Context, olderThan time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM supervisor_events WHERE time < ?`, formatTime(olderThan))
	if err != nil {
		return 0, fmt.Errorf("prune timeline before %s: %w", formatTime(olderThan), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune timeline before %s: %w", formatTime(olderThan), err)
	}
	return n, nil
}

func scanEvents(rows *sql.Rows) ([]TimelineEvent, error) {
	defer rows.Close()
	var out []TimelineEvent
	for rows.Next() {
		var ev TimelineEvent
		var t, detail string
		if err := rows.Scan(&ev.ID, &ev.SessionID, &t, &ev.Kind, &ev.TurnGeneration, &detail); err != nil {
			return nil, err
		}
		tm, err := parseTime(t)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", ev.ID, err)
		}
		ev.Time = tm
		ev.Detail = json.RawMessage(detail)
		out = append(out, ev)
	}
	return out, rows.Err()
}

// OutcomePending marks an action's intent row before the action is
// dispatched; SetEventOutcome replaces it with what happened.
const OutcomePending = "pending"

// SetEventOutcome records an action's outcome in its intent row's detail.
func (s *Store) SetEventOutcome(ctx context.Context, id int64, outcome string) error {
	res, err := s.db.ExecContext(ctx,
		`UPDATE supervisor_events SET detail = json_set(detail, '$.outcome', ?) WHERE id = ?`, outcome, id)
	if err != nil {
		return fmt.Errorf("record outcome of event %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("record outcome of event %d: %w", id, ErrNotFound)
	}
	return nil
}

// PendingIntents returns intent rows whose outcome is still pending, oldest
// first: actions the app decided but may have died dispatching.
func (s *Store) PendingIntents(ctx context.Context) ([]TimelineEvent, error) {
	return s.queryEvents(ctx, "pending action intents", `
		SELECT id, session_id, time, kind, turn_generation, detail FROM supervisor_events
		WHERE json_extract(detail, '$.outcome') = 'pending' ORDER BY id`)
}

// BatchItem is one caller's share of a batched write: optionally a session
// to save, the timeline rows that explain it, and optionally an action
// outcome to record.
type BatchItem struct {
	// Session, when set, is saved (inserted or replaced).
	Session *sessions.Session
	// Events are appended in order; an empty SessionID is filed under
	// Session's id.
	Events []TimelineEvent
	// OutcomeID, when non-zero, is an intent row whose outcome is set to Outcome.
	OutcomeID int64
	Outcome   string
	// Usage is what the session's usage grew by, added to its rows of the
	// usage history (AddUsage's rows, in the same transaction).
	Usage []UsageRow
	// Forget, when set, deletes that session after this item's rows are
	// written (a session already gone is no error: a retried batch must
	// not fail for good).
	Forget *Forget
}

// SaveBatch writes many callers' changes in one transaction, in order, and
// returns the ids assigned to each item's events. It is how the supervisor
// turns a burst (a tool-heavy stream, a tick that moves many sessions) into
// one commit instead of one per row. A session saved by several items is
// written once, with its last value. Either every item is committed or none
// is. Events must already be valid (see Validate): one bad row fails the batch.
func (s *Store) SaveBatch(ctx context.Context, items []BatchItem) ([][]int64, error) {
	last := map[string]int{}
	for i, it := range items {
		if it.Session != nil {
			last[it.Session.ID] = i
		}
	}
	ids := make([][]int64, len(items))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// Prepared once per batch: parsing the SQL again for every row
		// was most of a row's cost.
		ins, err := tx.PrepareContext(ctx, insertEventSQL)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		defer ins.Close()
		up, err := tx.PrepareContext(ctx, upsertSessionSQL)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		defer up.Close()
		insert, upsert := stmtExecer{ins}, stmtExecer{up}
		for i, it := range items {
			if it.Session != nil && last[it.Session.ID] == i {
				if err := saveSession(ctx, upsert, *it.Session); err != nil {
					return err
				}
			}
			if len(it.Events) > 0 {
				ids[i] = make([]int64, len(it.Events))
			}
			for j, ev := range it.Events {
				if ev.SessionID == "" && it.Session != nil {
					ev.SessionID = it.Session.ID
				}
				id, err := appendEvent(ctx, insert, ev)
				if err != nil {
					return err
				}
				ids[i][j] = id
			}
			if err := addUsage(ctx, tx, it.Usage); err != nil {
				return err
			}
			if it.OutcomeID != 0 {
				if _, err := tx.ExecContext(ctx,
					`UPDATE supervisor_events SET detail = json_set(detail, '$.outcome', ?) WHERE id = ?`,
					it.Outcome, it.OutcomeID); err != nil {
					return fmt.Errorf("record outcome of event %d: %w", it.OutcomeID, err)
				}
			}
			if f := it.Forget; f != nil {
				if _, err := deleteSession(ctx, tx, f.ID, f.Timeline); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("saving a batch of %d changes: %w", len(items), err)
	}
	return ids, nil
}

// stmtExecer runs one prepared statement whatever SQL it is handed: the
// callers pass the same SQL the statement was prepared from.
type stmtExecer struct{ st *sql.Stmt }

func (e stmtExecer) ExecContext(ctx context.Context, _ string, args ...any) (sql.Result, error) {
	return e.st.ExecContext(ctx, args...)
}
