package storage

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestSessionRoundTrip(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	minimal := sessions.Session{ID: "minimal", CreatedAt: base, UpdatedAt: base}
	full := fullSession("full", base)
	for _, want := range []sessions.Session{minimal, full} {
		if err := s.SaveSession(ctx, want); err != nil {
			t.Fatalf("SaveSession(%s): %v", want.ID, err)
		}
		got, err := s.GetSession(ctx, want.ID)
		if err != nil {
			t.Fatalf("GetSession(%s): %v", want.ID, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GetSession(%s):\n got %+v\nwant %+v", want.ID, got, want)
		}
	}

	// Upsert: a second save replaces every field, including the ones the
	// indexed columns copy.
	next := full.Clone()
	next.State = sessions.Working
	next.NeedsAttention = false
	next.Agent = "codex"
	delete(next.OpenTools, "toolu_1")
	next.Permission = nil
	next.UpdatedAt = base.Add(time.Hour)
	if err := s.SaveSession(ctx, next); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetSession(ctx, "full")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, next) {
		t.Errorf("after upsert:\n got %+v\nwant %+v", got, next)
	}
	var state, agent, updated string
	var attention bool
	if err := s.db.QueryRow(`SELECT state, agent, needs_attention, updated_at FROM sessions WHERE id = 'full'`).
		Scan(&state, &agent, &attention, &updated); err != nil {
		t.Fatal(err)
	}
	if state != "working" || agent != "codex" || attention || updated != formatTime(next.UpdatedAt) {
		t.Errorf("indexed columns = %q %q %v %q; want working codex false %q", state, agent, attention, updated, formatTime(next.UpdatedAt))
	}
	if all, _ := s.ListSessions(ctx); len(all) != 2 {
		t.Errorf("upsert created a duplicate: %d sessions", len(all))
	}
}

func TestSaveSessionRejects(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	tests := []struct {
		name string
		sess sessions.Session
		want string
	}{
		{"empty id", sessions.Session{}, "empty id"},
		{"invalid state", sessions.Session{ID: "x", State: sessions.State(42)}, "invalid state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.SaveSession(ctx, tt.sess)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("SaveSession = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
	if all, _ := s.ListSessions(ctx); len(all) != 0 {
		t.Errorf("rejected sessions were stored: %+v", all)
	}
}

func TestGetSessionNotFound(t *testing.T) {
	s, _ := openTemp(t)
	_, err := s.GetSession(context.Background(), "nope")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("GetSession(nope) = %v, want ErrNotFound naming the id", err)
	}
}

func TestListSessionsNewestFirst(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	// Saved in an order unrelated to the expected one; "b" and "c" tie
	// on updated_at and fall back to id order. The half-second case is the
	// one a trimmed RFC3339Nano text would mis-sort ("…07Z" > "…07.5Z").
	whole := time.Date(2026, 1, 1, 0, 0, 7, 0, time.UTC)
	for _, x := range []struct {
		id string
		at time.Time
	}{
		{"c", whole.Add(time.Hour)},
		{"old", whole.Add(-time.Hour)},
		{"half", whole.Add(500 * time.Millisecond)},
		{"b", whole.Add(time.Hour)},
		{"whole", whole},
	} {
		if err := s.SaveSession(ctx, sessions.Session{ID: x.id, UpdatedAt: x.at}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ListSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range got {
		ids = append(ids, g.ID)
	}
	if want := "b c half whole old"; strings.Join(ids, " ") != want {
		t.Errorf("ListSessions order = %q, want %q", strings.Join(ids, " "), want)
	}
}

func TestFindSession(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	for _, id := range []string{"ab", "ab12", "ab34", "cd5678", "ef1", "ef2", "ef3", "ef4", "ef5", "ef6", "ef7"} {
		if err := s.SaveSession(ctx, sessions.Session{ID: id, UpdatedAt: base}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		query   string
		want    string // the id found, or "" for an error
		wantErr error
		msg     []string // substrings of the error
	}{
		{query: "cd5678", want: "cd5678"},
		{query: "cd", want: "cd5678"},
		{query: "c", want: "cd5678"},
		{query: "ab", want: "ab"}, // an exact id wins over the longer ids it prefixes
		{query: "ab1", want: "ab12"},
		{query: "a", wantErr: ErrAmbiguous, msg: []string{`"a"`, "ab, ab12, ab34"}},
		{query: "ef", wantErr: ErrAmbiguous, msg: []string{"ef1, ef2, ef3, ef4, ef5, …"}},
		{query: "zz", wantErr: ErrNotFound, msg: []string{`"zz"`}},
		{query: "cd56789", wantErr: ErrNotFound},
		{query: "", msg: []string{"empty id"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got, err := s.FindSession(ctx, tt.query)
			if tt.want != "" {
				if err != nil || got.ID != tt.want {
					t.Fatalf("FindSession(%q) = %q, %v; want %q", tt.query, got.ID, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("FindSession(%q) = %q, want an error", tt.query, got.ID)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("FindSession(%q) error %q does not wrap %v", tt.query, err, tt.wantErr)
			}
			for _, m := range tt.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("FindSession(%q) error %q does not mention %q", tt.query, err, m)
				}
			}
		})
	}
}

// TestDeleteSession: the session goes, and its timeline goes with it or
// stays as the user chose (forget, issue 20 item 11), directly or in its
// place in a batch.
func TestDeleteSession(t *testing.T) {
	for _, tc := range []struct {
		name     string
		choice   TimelineChoice
		batch    bool
		wantRows int
	}{
		{"drop", DropTimeline, false, 0},
		{"keep", KeepTimeline, false, 1},
		{"drop in a batch", DropTimeline, true, 0},
		{"keep in a batch", KeepTimeline, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTemp(t)
			ctx := context.Background()
			for _, id := range []string{"gone", "kept"} {
				if err := s.SaveSessionWithEvents(ctx, fullSession(id, base), []TimelineEvent{{Time: base, Kind: "k"}}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.batch {
				// A save decided before the forget is written before it;
				// the forget's own row stays when the timeline does.
				gone := fullSession("gone", base)
				if _, err := s.SaveBatch(ctx, []BatchItem{{Session: &gone},
					{Events: []TimelineEvent{{SessionID: "gone", Time: base, Kind: "forgotten"}}, Forget: &Forget{ID: "gone", Timeline: tc.choice}}}); err != nil {
					t.Fatalf("SaveBatch: %v", err)
				}
			} else if err := s.DeleteSession(ctx, "gone", tc.choice); err != nil {
				t.Fatalf("DeleteSession: %v", err)
			}
			if _, err := s.GetSession(ctx, "gone"); !errors.Is(err, ErrNotFound) {
				t.Errorf("deleted session still readable: %v", err)
			}
			if tl, _ := s.Timeline(ctx, "gone", 0); len(tl) != tc.wantRows {
				t.Errorf("deleted session's timeline has %d events, want %d (%s)", len(tl), tc.wantRows, tc.choice)
			}
			if tl, _ := s.Timeline(ctx, "kept", 0); len(tl) != 1 {
				t.Errorf("other session's timeline has %d events, want 1", len(tl))
			}
			if err := s.DeleteSession(ctx, "gone", tc.choice); !errors.Is(err, ErrNotFound) {
				t.Errorf("second DeleteSession = %v, want ErrNotFound", err)
			}
			// A batch forgetting what is gone already is not an error: a
			// retried batch must not wedge every later write.
			if _, err := s.SaveBatch(ctx, []BatchItem{{Forget: &Forget{ID: "gone", Timeline: tc.choice}}}); err != nil {
				t.Errorf("forgetting a session already gone in a batch: %v", err)
			}
		})
	}
}
