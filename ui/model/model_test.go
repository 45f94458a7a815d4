package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func sess(id string, st sessions.State, changedAgo time.Duration) sessions.Session {
	return sessions.Session{ID: id, State: st, StateChangedAt: t0.Add(-changedAgo), UpdatedAt: t0.Add(-changedAgo)}
}

func ids(list []sessions.Session) string {
	var out []string
	for _, s := range list {
		out = append(out, s.ID+"="+s.State.String())
	}
	return strings.Join(out, " ")
}

func snapshot(seq uint64, list ...sessions.Session) localapi.Message {
	return localapi.Message{Cursor: localapi.Cursor{Generation: "g1", Seq: seq}, Type: localapi.MsgSnapshot, Sessions: list}
}

func sessionMsg(seq uint64, s sessions.Session) localapi.Message {
	return localapi.Message{Cursor: localapi.Cursor{Generation: "g1", Seq: seq}, Type: localapi.MsgSession, Session: &s}
}

func rowMsg(seq uint64, r localapi.TimelineRow) localapi.Message {
	return localapi.Message{Cursor: localapi.Cursor{Generation: "g1", Seq: seq}, Type: localapi.MsgTimeline, Event: &r}
}

func row(id int64, session string, ago time.Duration, msg string) localapi.TimelineRow {
	d, _ := json.Marshal(map[string]string{"message": msg})
	return localapi.TimelineRow{ID: id, SessionID: session, Time: t0.Add(-ago), Kind: "note", TurnGeneration: 1, Detail: d}
}

func messages(rows []localapi.TimelineRow) string {
	var out []string
	for _, r := range rows {
		var m map[string]string
		_ = json.Unmarshal(r.Detail, &m)
		out = append(out, m["message"])
	}
	return strings.Join(out, " ")
}

func TestSessionsFollowTheMessages(t *testing.T) {
	cases := []struct {
		name string
		msgs []localapi.Message
		want string
	}{
		{"empty", nil, ""},
		{"snapshot in view order", []localapi.Message{snapshot(1, sess("idle", sessions.Idle, 0), sess("wait", sessions.WaitingOnUser, time.Hour), sess("work", sessions.Working, 0))},
			"wait=waiting_on_user work=working idle=idle"},
		{"a session message replaces one", []localapi.Message{snapshot(1, sess("a", sessions.Working, 0), sess("b", sessions.Idle, 0)), sessionMsg(2, sess("b", sessions.Errored, 0))},
			"b=errored a=working"},
		{"a session message adds a new one", []localapi.Message{snapshot(1, sess("a", sessions.Idle, 0)), sessionMsg(2, sess("b", sessions.Working, 0))},
			"b=working a=idle"},
		{"a snapshot is the authority: a session absent from it is gone", []localapi.Message{snapshot(1, sess("a", sessions.Idle, 0), sess("b", sessions.Idle, 0)), snapshot(2, sess("a", sessions.Working, 0))},
			"a=working"},
		{"an escalation carries the session", []localapi.Message{snapshot(1, sess("a", sessions.Interrupted, 0)), {Cursor: localapi.Cursor{Generation: "g1", Seq: 2}, Type: localapi.MsgEscalation, Session: func() *sessions.Session {
			s := sess("a", sessions.Interrupted, 0)
			s.NeedsAttention = true
			return &s
		}()}}, "a=interrupted"},
		{"an archived session leaves the views (issue 20, item 11)", []localapi.Message{snapshot(1, sess("a", sessions.Idle, 0), sess("b", sessions.Idle, 0)), sessionMsg(2, func() sessions.Session {
			s := sess("b", sessions.Idle, 0)
			s.ArchivedAt = t0
			return s
		}())}, "a=idle"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			for _, msg := range tc.msgs {
				m.Apply(msg)
			}
			if got := ids(m.Sessions()); got != tc.want {
				t.Fatalf("sessions %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSessionIsACopyAndFoundByPrefix(t *testing.T) {
	m := New()
	a := sess("abc-1", sessions.Working, 0)
	a.OpenTools = map[string]sessions.OpenCall{"t": {Name: "Bash"}}
	m.Apply(snapshot(1, a, sess("abd-2", sessions.Idle, 0)))
	cases := []struct {
		id, want, err string
	}{
		{"abc-1", "abc-1", ""},
		{"abc", "abc-1", ""},
		{"ab", "", "ambiguous"},
		{"zz", "", "no such session"},
		{"", "", "no such session"},
	}
	for _, tc := range cases {
		s, err := m.Session(tc.id)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Session(%q) err = %v, want %q", tc.id, err, tc.err)
			}
			continue
		}
		if err != nil || s.ID != tc.want {
			t.Errorf("Session(%q) = %s, %v", tc.id, s.ID, err)
		}
	}
	if _, err := m.Session("zz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("not found must wrap ErrNotFound: %v", err)
	}
	s, _ := m.Session("abc-1")
	delete(s.OpenTools, "t")
	if again, _ := m.Session("abc-1"); len(again.OpenTools) != 1 {
		t.Fatal("a caller's change reached the model")
	}
	list := m.Sessions()
	list[0].State = sessions.Errored
	if ids(m.Sessions()) != "abc-1=working abd-2=idle" {
		t.Fatal("Sessions must return the caller's slice")
	}
}

func TestPutIgnoresAnOlderCopy(t *testing.T) {
	m := New()
	newer := sess("a", sessions.Idle, 0)
	m.Apply(sessionMsg(1, newer))
	older := sess("a", sessions.Working, time.Minute)
	m.Put(older)
	if s, _ := m.Session("a"); s.State != sessions.Idle {
		t.Fatalf("an older command result overwrote the message: %s", s.State)
	}
	m.Put(sess("b", sessions.Working, 0)) // a session just launched
	if _, err := m.Session("b"); err != nil {
		t.Fatal(err)
	}
	m.Put(sessions.Session{}) // a failed command's empty session
	if len(m.Sessions()) != 2 {
		t.Fatal("an empty session was kept")
	}
}

// The followed timeline: the history is loaded once, live rows that
// arrive while it loads are merged once each, later rows are added, and
// rows of other sessions are not kept.
func TestTimelineFollow(t *testing.T) {
	m := New()
	if !m.Follow("a") {
		t.Fatal("the first follow must ask for the history")
	}
	if m.Follow("a") {
		t.Fatal("a load is already out: no second one")
	}
	// While loading: a row the history will also hold (published before
	// its id was known) and one it will not.
	stored := row(0, "a", 2*time.Minute, "two")
	m.Apply(rowMsg(1, stored))
	m.Apply(rowMsg(2, row(0, "a", time.Minute, "three")))
	m.Apply(rowMsg(3, row(0, "b", time.Minute, "other session")))
	if rows, _ := m.Timeline("a"); len(rows) != 0 {
		t.Fatalf("rows before the history: %q", messages(rows))
	}
	storedCopy := stored
	storedCopy.ID = 2
	m.SetTimeline("a", []localapi.TimelineRow{storedCopy, row(1, "a", 3*time.Minute, "one")})
	rows, v1 := m.Timeline("a")
	if got := messages(rows); got != "three two one" {
		t.Fatalf("after load: %q", got)
	}
	if m.Follow("a") {
		t.Fatal("a loaded timeline needs no second load")
	}
	// An action's row comes again with its outcome: replaced, not doubled.
	outcome := row(2, "a", 2*time.Minute, "two, done")
	m.Apply(rowMsg(4, outcome))
	m.Apply(rowMsg(5, row(0, "a", 0, "four")))
	rows, v2 := m.Timeline("a")
	if got := messages(rows); got != "four three two, done one" || v2 == v1 {
		t.Fatalf("live rows: %q (version %d → %d)", got, v1, v2)
	}
	if rows, _ := m.Timeline("b"); rows != nil {
		t.Fatal("only the followed session's rows are kept")
	}
	// Following another session drops the first one's rows.
	if !m.Follow("b") {
		t.Fatal("another session needs its history")
	}
	if rows, _ := m.Timeline("a"); rows != nil {
		t.Fatal("the previous session's rows were kept")
	}
	// A late load of the session left behind is ignored.
	m.SetTimeline("a", []localapi.TimelineRow{row(9, "a", 0, "late")})
	if rows, _ := m.Timeline("b"); len(rows) != 0 {
		t.Fatalf("a late load leaked: %q", messages(rows))
	}
}

func TestTimelineReloadsAfterMissedMessages(t *testing.T) {
	cases := []struct {
		name   string
		next   localapi.Message
		reload bool
	}{
		{"the next message", rowMsg(2, row(0, "x", 0, "n")), false},
		{"a one-subscriber snapshot repeats the number", snapshot(1), false},
		{"a gap", rowMsg(5, row(0, "x", 0, "n")), true},
		{"a new generation", localapi.Message{Cursor: localapi.Cursor{Generation: "g2", Seq: 1}, Type: localapi.MsgSnapshot}, true},
		{"a resync notice", localapi.Message{Type: localapi.MsgResync}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			m.Apply(snapshot(1, sess("a", sessions.Idle, 0)))
			m.Follow("a")
			m.SetTimeline("a", []localapi.TimelineRow{row(1, "a", time.Minute, "one")})
			m.Apply(tc.next)
			if got := m.Follow("a"); got != tc.reload {
				t.Fatalf("reload asked: %t, want %t", got, tc.reload)
			}
			if rows, _ := m.Timeline("a"); len(rows) != 1 {
				t.Fatal("the rows shown must stay until the reload replaces them")
			}
		})
	}
}

func TestLoadFailedAllowsARetry(t *testing.T) {
	m := New()
	m.Follow("a")
	m.LoadFailed("a")
	if !m.Follow("a") {
		t.Fatal("after a failed load the next follow must try again")
	}
}

func TestTimelineIsCapped(t *testing.T) {
	m := New()
	m.Follow("a")
	var rows []localapi.TimelineRow
	for i := range TimelineLimit {
		rows = append(rows, row(int64(TimelineLimit-i), "a", time.Duration(i+1)*time.Second, fmt.Sprint(i)))
	}
	m.SetTimeline("a", rows)
	m.Apply(rowMsg(1, row(0, "a", 0, "newest")))
	got, _ := m.Timeline("a")
	if len(got) != TimelineLimit || !strings.HasPrefix(messages(got), "newest 0 1") {
		t.Fatalf("%d rows, first %q", len(got), messages(got[:3]))
	}
}

func TestWatchSignalsChangesUntilCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		ctx, cancel := context.WithCancel(context.Background())
		ch := m.Watch(ctx)
		for range 5 { // a burst leaves one pending signal
			m.Apply(sessionMsg(1, sess("a", sessions.Working, 0)))
		}
		select {
		case <-ch:
		default:
			t.Fatal("no signal after a change")
		}
		select {
		case <-ch:
			t.Fatal("a burst must leave one signal")
		default:
		}
		m.Apply(rowMsg(2, row(0, "nobody-follows", 0, "x")))
		select {
		case <-ch:
			t.Fatal("a row nobody follows changed nothing")
		default:
		}
		m.SetPrefs(Prefs{Paused: true})
		if _, ok := <-ch; !ok || !m.Prefs().Paused {
			t.Fatal("prefs change not signalled")
		}
		cancel()
		synctest.Wait() // context.AfterFunc has run
		m.mu.Lock()
		n := len(m.watchers)
		m.mu.Unlock()
		if n != 0 {
			t.Fatal("a cancelled watcher is still registered")
		}
	})
}

func TestRunAppliesUntilDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		in := make(chan localapi.Message, 4)
		ctx, cancel := context.WithCancel(context.Background())
		snapshots := 0
		done := make(chan struct{})
		go func() { m.Run(ctx, in, func() { snapshots++ }); close(done) }()
		in <- snapshot(1, sess("a", sessions.Idle, 0))
		in <- sessionMsg(2, sess("a", sessions.Working, 0))
		synctest.Wait()
		if ids(m.Sessions()) != "a=working" || snapshots != 1 {
			t.Fatalf("sessions %q, snapshots %d", ids(m.Sessions()), snapshots)
		}
		cancel()
		<-done

		// A closed feed ends Run too.
		in2 := make(chan localapi.Message)
		done2 := make(chan struct{})
		go func() { m.Run(context.Background(), in2, nil); close(done2) }()
		close(in2)
		<-done2
	})
}

// The model is fed the real runtime's messages: what a subscriber gets is
// what the model shows, and the row keys tell stored rows apart.
func TestFedByARealRuntime(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := sess("r1", sessions.WaitingOnUser, time.Minute)
	s.WaitReason = sessions.WaitReview
	if err := st.SaveSessionWithEvents(ctx, s, []storage.TimelineEvent{row(0, "r1", time.Minute, "turn 1 finished")}); err != nil {
		t.Fatal(err)
	}
	rt := supervisor.New(supervisor.Options{Store: st, Agents: map[string]supervisor.Agent{}})
	if err := rt.Boot(ctx); err != nil {
		t.Fatal(err)
	}
	m := New()
	sub := rt.Subscribe(64, false)
	defer rt.Bus().Unsubscribe(sub)
	m.Apply(<-sub.C)
	if !m.Follow("r1") {
		t.Fatal("no load asked")
	}
	hist, err := rt.Timeline(ctx, "r1", TimelineLimit)
	if err != nil {
		t.Fatal(err)
	}
	m.SetTimeline("r1", hist)
	if _, err := rt.Ack(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	for len(sub.C) > 0 {
		m.Apply(<-sub.C)
	}
	got, _ := m.Session("r1")
	rows, _ := m.Timeline("r1")
	if got.State != sessions.Idle || len(rows) < 2 {
		t.Fatalf("after ack: %s, %d rows", got.State, len(rows))
	}
	keys := map[string]bool{}
	for _, r := range rows {
		if keys[RowKey(r)] {
			t.Fatalf("two rows share the key %s", RowKey(r))
		}
		keys[RowKey(r)] = true
	}
}

// The day's usage is what the supervisor last told, by a usage message or
// a snapshot; a snapshot without it (a Remote republishing its own) keeps
// the last.
func TestTodayFollowsTheMessages(t *testing.T) {
	m := New()
	if _, ok := m.Today(); ok {
		t.Fatal("a new model knows today's usage")
	}
	steps := []struct {
		msg  localapi.Message
		want int64 // micro-dollars
	}{
		{localapi.Message{Type: localapi.MsgSnapshot, Usage: &localapi.DayUsage{Day: "2026-12-02", Cost: 1_000_000}}, 1_000_000},
		{localapi.Message{Type: localapi.MsgUsage, Usage: &localapi.DayUsage{Day: "2026-12-02", Cost: 3_120_000}}, 3_120_000},
		{localapi.Message{Type: localapi.MsgSnapshot}, 3_120_000},
		{localapi.Message{Type: localapi.MsgUsage}, 3_120_000},
		{localapi.Message{Type: localapi.MsgUsage, Usage: &localapi.DayUsage{Day: "2026-12-03"}}, 0},
	}
	for i, st := range steps {
		m.Apply(st.msg)
		got, ok := m.Today()
		if !ok || int64(got.Cost) != st.want {
			t.Fatalf("step %d (%s): today %+v (%v), want cost %d", i, st.msg.Type, got, ok, st.want)
		}
	}
}

// A snapshot is applied as a diff: one that repeats what the model holds
// (every machine sends one at least once a minute) wakes no view and keeps
// the view order; a session changed, added or gone does. A session message
// that repeats the session held wakes none either.
func TestSnapshotAppliedAsADiff(t *testing.T) {
	base := func() []sessions.Session {
		return []sessions.Session{sess("a", sessions.Working, time.Minute), sess("b", sessions.Idle, time.Hour)}
	}
	remote := func(list ...sessions.Session) localapi.Message {
		for i := range list {
			list[i].ID = Key("devbox", list[i].ID)
		}
		return localapi.Message{Type: localapi.MsgSnapshot, Machine: "devbox", Sessions: list}
	}
	changedB := base()
	changedB[1].State = sessions.Errored
	// Another machine's, through JSON, its times in a zone not this
	// machine's: each decoding makes a zone of its own.
	decoded := func() []sessions.Session {
		list := base()
		for i := range list {
			list[i].StateChangedAt = list[i].StateChangedAt.In(time.FixedZone("", 5*3600+1800))
		}
		b, _ := json.Marshal(list)
		var out []sessions.Session
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []struct {
		name string
		msg  localapi.Message
		wake bool
	}{
		{"the same snapshot", snapshot(2, base()...), false},
		{"a session changed", snapshot(2, changedB...), true},
		{"a session gone", snapshot(2, base()[0]), true},
		{"a session added", snapshot(2, append(base(), sess("c", sessions.Idle, time.Hour))...), true},
		{"the same session", sessionMsg(2, base()[0]), false},
		{"another machine's same snapshot", remote(decoded()...), false},
		{"another machine's session gone", remote(base()[0]), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New()
			m.SetMachines([]string{"devbox"})
			m.Apply(snapshot(1, base()...))
			m.Apply(remote(decoded()...))
			before := m.Sessions()
			ch := m.Watch(t.Context())
			m.Apply(c.msg)
			woke := false
			select {
			case <-ch:
				woke = true
			default:
			}
			if woke != c.wake {
				t.Fatalf("the views woke: %t, want %t", woke, c.wake)
			}
			if !c.wake && ids(m.Sessions()) != ids(before) {
				t.Fatalf("sessions %s, want them unchanged: %s", ids(m.Sessions()), ids(before))
			}
		})
	}
}
