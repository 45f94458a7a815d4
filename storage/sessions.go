package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/session-supervisor/session-supervisor/enum"
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

// ListSessions returns every session that can be read, most recently
// updated first (ties by id, so the order is stable). A row this build
// cannot read is left out: use LoadSessions to learn which, and why.
func (s *Store) ListSessions(ctx context.Context) ([]sessions.Session, error) {
	out, _, err := s.LoadSessions(ctx)
	return out, err
}

// QuarantineReason says why a stored session could not be loaded.
type QuarantineReason int

const (
	// QuarantineCorrupt: the stored JSON does not parse, or is not a session.
	QuarantineCorrupt QuarantineReason = iota
	// QuarantineNewer: the JSON parses but names a value this build does
	// not know (a state or failure kind added by a newer build).
	QuarantineNewer
)

var quarantineReasonNames = [...]string{
	QuarantineCorrupt: "corrupt",
	QuarantineNewer:   "written by a newer build",
}

func (r QuarantineReason) String() string {
	return enum.Name(r, "QuarantineReason", quarantineReasonNames[:])
}

// Quarantined is a stored session LoadSessions could not read. Its row is
// left exactly as it is: a newer build (or a repair by hand) can still read
// it, and deleting a user's session because this build does not understand
// it would lose their data.
type Quarantined struct {
	ID    string
	Agent string
	// State is the state column as stored (the name a newer build wrote).
	State  string
	Reason QuarantineReason
	// Err is the decoding error, with the offending value in it.
	Err error
}

// Message is the sentence to log and show: which session, what is wrong,
// and that it is kept but not supervised.
func (q Quarantined) Message() string {
	what := "its stored data is corrupt"
	if q.Reason == QuarantineNewer {
		what = "it was written by a newer Session Supervisor"
	}
	return fmt.Sprintf("session %s (agent %s, state %q) cannot be loaded: %s (%v); it is left untouched in the database and is not supervised by this build",
		q.ID, orUnknown(q.Agent), q.State, what, q.Err)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// LoadSessions returns every session it can read, most recently updated
// first, and the rows it cannot read as quarantined, so that one session a
// newer build wrote (or a damaged row) does not stop the app for every
// other session. The caller reports the quarantined ones; nothing here
// changes or deletes them. The error is for failures to query at all.
func (s *Store) LoadSessions(ctx context.Context) ([]sessions.Session, []Quarantined, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, COALESCE(agent, ''), state, data FROM sessions ORDER BY updated_at DESC, id`)
	if err != nil {
		return nil, nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []sessions.Session
	var bad []Quarantined
	for rows.Next() {
		var id, agent, state, data string
		if err := rows.Scan(&id, &agent, &state, &data); err != nil {
			return nil, nil, fmt.Errorf("list sessions: %w", err)
		}
		sess, err := unmarshalSession(data)
		if err != nil {
			bad = append(bad, Quarantined{ID: id, Agent: agent, State: state, Reason: quarantineReason(err), Err: err})
			continue
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, bad, nil
}

// quarantineReason tells a value this build does not know (the JSON is
// well formed; an enum's UnmarshalText refused a name) from damage.
func quarantineReason(err error) QuarantineReason {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) || errors.Is(err, errNotObject) {
		return QuarantineCorrupt
	}
	return QuarantineNewer
}

// TimelineChoice is what becomes of a forgotten session's timeline.
type TimelineChoice int

const (
	// KeepTimeline leaves the rows in the audit log (pruned by age like
	// every other), readable by the session's full id.
	KeepTimeline TimelineChoice = iota
	// DropTimeline deletes them with the session.
	DropTimeline
)

var timelineChoiceNames = [...]string{KeepTimeline: "keep timeline", DropTimeline: "drop timeline"}

func (c TimelineChoice) String() string {
	return enum.Name(c, "TimelineChoice", timelineChoiceNames[:])
}

// Forget deletes a session in its place in a batch (BatchItem.Forget).
type Forget struct {
	ID       string
	Timeline TimelineChoice
}

// DeleteSession removes the session, and its timeline too unless the
// choice keeps it, in one transaction. The error wraps ErrNotFound if there
// was no such session.
func (s *Store) DeleteSession(ctx context.Context, id string, timeline TimelineChoice) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		n, err := deleteSession(ctx, tx, id, timeline)
		if err == nil && n == 0 {
			err = fmt.Errorf("delete session %q: %w", id, ErrNotFound)
		}
		return err
	})
}

// deleteSession deletes the session's row (and its timeline unless kept)
// and reports how many session rows went.
func deleteSession(ctx context.Context, db execer, id string, timeline TimelineChoice) (int64, error) {
	res, err := db.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
	if err != nil {
		return 0, fmt.Errorf("delete session %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete session %s: %w", id, err)
	}
	if timeline == DropTimeline {
		if _, err := db.ExecContext(ctx, `DELETE FROM supervisor_events WHERE session_id = ?`, id); err != nil {
			return n, fmt.Errorf("delete timeline of session %s: %w", id, err)
		}
		// Its usage history goes with its timeline: the user asked for
		// nothing of it to stay.
		if _, err := db.ExecContext(ctx, `DELETE FROM turn_usage WHERE session_id = ?`, id); err != nil {
			return n, fmt.Errorf("delete usage history of session %s: %w", id, err)
		}
	}
	return n, nil
}

// ErrUnreadable: a stored session this build cannot decode (see
// LoadSessions, which quarantines such rows instead of failing).
var ErrUnreadable = errors.New("stored session cannot be read")

// errNotObject: the stored data is valid JSON but not an object (null, a
// number): damage, not a newer build.
var errNotObject = errors.New("not a JSON object")

func decodeSession(id, data string) (sessions.Session, error) {
	sess, err := unmarshalSession(data)
	if err != nil {
		return sessions.Session{}, fmt.Errorf("decode stored session %s: %w: %w", id, ErrUnreadable, err)
	}
	return sess, nil
}

// unmarshalSession decodes a row's data. JSON that is valid but not an
// object (null decodes to an empty session without an error) is refused.
func unmarshalSession(data string) (sessions.Session, error) {
	var sess sessions.Session
	if t := strings.TrimSpace(data); !strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		return sessions.Session{}, errNotObject
	}
	if err := json.Unmarshal([]byte(data), &sess); err != nil {
		return sessions.Session{}, err
	}
	return sess, nil
}
