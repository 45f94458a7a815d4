package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestLoadSessionsQuarantinesUnreadableRows: a row a newer build wrote (a
// state this build does not know), one with a failure kind it does not
// know, one with broken JSON and one holding JSON null must not stop the
// others from loading, and must be reported with a reason and left exactly
// as they are, in a real SQLite file that is closed and reopened.
func TestLoadSessionsQuarantinesUnreadableRows(t *testing.T) {
	ctx := context.Background()
	s, dir := openTemp(t)
	for _, id := range []string{"good1", "good2", "newer-state", "newer-failure", "broken", "null"} {
		if err := s.SaveSession(ctx, fullSession(id, base)); err != nil {
			t.Fatal(err)
		}
	}
	var goodData string
	if err := s.db.QueryRow(`SELECT data FROM sessions WHERE id = 'good1'`).Scan(&goodData); err != nil {
		t.Fatal(err)
	}
	damage := map[string]struct{ state, data string }{
		"newer-state":   {"hibernating", strings.Replace(goodData, `"state":"suspect"`, `"state":"hibernating"`, 1)},
		"newer-failure": {"suspect", strings.Replace(goodData, `"kind":"rate_limit"`, `"kind":"quota_exhausted"`, 1)},
		"broken":        {"working", goodData[:len(goodData)/2]},
		"null":          {"idle", "null"},
	}
	for id, d := range damage {
		if d.data == goodData {
			t.Fatalf("%s: the replacement did not apply; the fixture changed shape", id)
		}
		if _, err := s.db.Exec(`UPDATE sessions SET state = ?, data = ? WHERE id = ?`, d.state, d.data, id); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	got, bad, err := s.LoadSessions(ctx)
	if err != nil {
		t.Fatalf("LoadSessions: %v", err)
	}
	var ids []string
	for _, g := range got {
		ids = append(ids, g.ID)
	}
	if strings.Join(ids, " ") != "good1 good2" {
		t.Errorf("loaded %q, want good1 good2", ids)
	}
	want := map[string]struct {
		reason QuarantineReason
		says   string
	}{
		"newer-state":   {QuarantineNewer, `unknown state "hibernating"`},
		"newer-failure": {QuarantineNewer, `unknown failure kind "quota_exhausted"`},
		"broken":        {QuarantineCorrupt, "unexpected end of JSON input"},
		"null":          {QuarantineCorrupt, "not a JSON object"},
	}
	if len(bad) != len(want) {
		t.Fatalf("quarantined %+v, want %d rows", bad, len(want))
	}
	for _, q := range bad {
		w, ok := want[q.ID]
		if !ok {
			t.Errorf("unexpected quarantined row %+v", q)
			continue
		}
		msg := q.Message()
		if q.Reason != w.reason || !strings.Contains(msg, w.says) || !strings.Contains(msg, q.ID) ||
			!strings.Contains(msg, "left untouched") || q.State != damage[q.ID].state || q.Agent != "claude" {
			t.Errorf("%s: reason %v, state %q, agent %q, message %q; want %v saying %q", q.ID, q.Reason, q.State, q.Agent, msg, w.reason, w.says)
		}
	}

	// ListSessions (the old shape) loads the same readable sessions.
	if list, err := s.ListSessions(ctx); err != nil || len(list) != 2 {
		t.Errorf("ListSessions = %d sessions, %v; want 2, nil", len(list), err)
	}
	// Reading one directly says it is unreadable, as an error.
	if _, err := s.GetSession(ctx, "newer-state"); !errors.Is(err, ErrUnreadable) {
		t.Errorf("GetSession(newer-state) = %v, want ErrUnreadable", err)
	}
	// Nothing was changed or deleted.
	for id, d := range damage {
		var state, data string
		if err := s.db.QueryRow(`SELECT state, data FROM sessions WHERE id = ?`, id).Scan(&state, &data); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if state != d.state || data != d.data {
			t.Errorf("%s was changed: state %q, data %q", id, state, data)
		}
	}
}

func TestQuarantineReasonString(t *testing.T) {
	for r, want := range map[QuarantineReason]string{
		QuarantineCorrupt:   "corrupt",
		QuarantineNewer:     "written by a newer build",
		QuarantineReason(9): "QuarantineReason(9)",
	} {
		if r.String() != want {
			t.Errorf("%d: %q, want %q", int(r), r.String(), want)
		}
	}
}

// A session with no agent column still gets a readable message.
func TestQuarantinedMessageWithoutAgent(t *testing.T) {
	q := Quarantined{ID: "x", State: "working", Reason: QuarantineCorrupt, Err: errors.New("boom")}
	if m := q.Message(); !strings.Contains(m, "agent unknown") || !strings.Contains(m, "corrupt") {
		t.Errorf("message %q", m)
	}
}
