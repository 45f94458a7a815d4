package localapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// fakeSource plays a supervisor's API for a Remote: each connection is a
// script of messages, or an error when the supervisor is down.
type fakeSource struct {
	mu sync.Mutex
	// status is the health status while up ("" means ok).
	status string
	// apiVersion is the API version the supervisor says it speaks.
	apiVersion int
	conns      []fakeConn
	cursors    []string // the cursor each Watch was called with
	healths    []time.Time
}

type fakeConn struct {
	down bool // the supervisor is not running: Health fails
	msgs []Message
	// hold keeps the stream open after the messages until ctx is done.
	hold bool
}

func (f *fakeSource) next() (fakeConn, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.conns) == 0 {
		return fakeConn{hold: true}, false
	}
	return f.conns[0], true
}

func (f *fakeSource) Health(ctx context.Context) (Health, error) {
	f.mu.Lock()
	f.healths = append(f.healths, time.Now())
	f.mu.Unlock()
	c, ok := f.next()
	if ok && c.down {
		f.mu.Lock()
		f.conns = f.conns[1:]
		f.mu.Unlock()
		return Health{}, fmt.Errorf("%w (no answer)", ErrNotRunning)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status != "" {
		return Health{Status: f.status, APIVersion: f.apiVersion}, fmt.Errorf("%w: stalled", ErrUnavailable)
	}
	return Health{Status: "ok", APIVersion: f.apiVersion}, nil
}

func (f *fakeSource) WatchAsDesktop(ctx context.Context, cursor string, fn func(Message) error) error {
	f.mu.Lock()
	f.cursors = append(f.cursors, cursor)
	var c fakeConn
	if len(f.conns) > 0 {
		c, f.conns = f.conns[0], f.conns[1:]
	} else {
		c = fakeConn{hold: true}
	}
	f.mu.Unlock()
	for _, m := range c.msgs {
		if err := fn(m); err != nil {
			return err
		}
	}
	if c.hold {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func sess(id string, st sessions.State) sessions.Session {
	return sessions.Session{ID: id, State: st, CreatedAt: time.Unix(1, 0)}
}

func snapshotMsg(gen string, seq uint64, list ...sessions.Session) Message {
	return Message{Cursor: Cursor{Generation: gen, Seq: seq}, Type: MsgSnapshot, Sessions: list}
}

// TestRemoteReconnectsAndResyncs: the supervisor the desktop is attached to
// streams a snapshot and a change, then dies; it is down for two attempts;
// it comes back as a new run (new generation). The Remote says it is
// reconnecting (with a growing backoff), hands the last cursor back so the
// supervisor knows what was missed, and replaces its mirror with the new
// run's snapshot — all without being restarted.
func TestRemoteReconnectsAndResyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := sess("aaaa", sessions.Working)
		a2 := sess("aaaa", sessions.Suspect)
		a3 := sess("aaaa", sessions.Interrupted)
		b := sess("bbbb", sessions.Idle)
		src := &fakeSource{conns: []fakeConn{
			{msgs: []Message{snapshotMsg("g1", 4, a), {Cursor: Cursor{Generation: "g1", Seq: 5}, Type: MsgSession, Session: &a2}}},
			{down: true},
			{down: true},
			{msgs: []Message{{Cursor: Cursor{Generation: "g2", Seq: 0}, Type: MsgResync}, snapshotMsg("g2", 0, a3, b)}, hold: true},
		}}
		r := newRemote(nil, src, nil)
		sub := r.Bus().Subscribe(64)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		start := time.Now()
		go func() { r.Run(ctx); close(done) }()
		synctest.Wait()

		// After the first connection ended: reconnecting, attempt 1.
		if l := r.Link(); l.State != LinkReconnecting || l.Attempts != 1 {
			t.Fatalf("after the stream ended: link %+v, want reconnecting, attempt 1", l)
		}
		if s, _ := r.Session("aaaa"); s.State != sessions.Suspect {
			t.Fatalf("mirror holds %v, want the last change (suspect)", s.State)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if l := r.Link(); l.State != LinkConnected {
			t.Fatalf("after the supervisor came back: link %+v, want connected", l)
		}
		list := r.Sessions()
		if len(list) != 2 || list[0].State != sessions.Interrupted || list[1].ID != "bbbb" {
			t.Fatalf("mirror after resync: %+v, want the new run's aaaa (interrupted) and bbbb", list)
		}
		// Attempts at 0, +0.5 s (down), +1.5 s (down), +3.5 s (up).
		var offsets []time.Duration
		for _, h := range src.healths {
			offsets = append(offsets, h.Sub(start))
		}
		want := []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond, 3500 * time.Millisecond}
		if fmt.Sprint(offsets) != fmt.Sprint(want) {
			t.Errorf("health probes at %v, want %v", offsets, want)
		}
		if len(src.cursors) != 2 || src.cursors[0] != "" || src.cursors[1] != "g1:5" {
			t.Errorf("Watch cursors %q, want none then the last one seen (g1:5)", src.cursors)
		}
		cancel()
		<-done

		var kinds []string
		for {
			select {
			case m := <-sub.C:
				k := string(m.Type)
				if m.Link != nil {
					k += ":" + m.Link.State.String()
				}
				kinds = append(kinds, k)
				continue
			default:
			}
			break
		}
		want2 := []string{"link:connected", "snapshot", "session", "link:reconnecting", "link:reconnecting", "link:reconnecting", "link:connected", "resync", "snapshot"}
		if fmt.Sprint(kinds) != fmt.Sprint(want2) {
			t.Errorf("local bus carried %v, want %v", kinds, want2)
		}
	})
}

// TestRemoteSessionLookup: exact ids, unique prefixes, ambiguity and absence.
func TestRemoteSessionLookup(t *testing.T) {
	r := newRemote(nil, &fakeSource{}, nil)
	r.apply(snapshotMsg("g", 1, sess("abc1", sessions.Idle), sess("abc2", sessions.Idle), sess("zzz9", sessions.Working)))
	for _, tc := range []struct {
		id, want string
		err      error
	}{
		{"abc1", "abc1", nil}, {"zz", "zzz9", nil}, {"abc", "", ErrInvalid}, {"nope", "", ErrNotFound},
	} {
		s, err := r.Session(tc.id)
		if s.ID != tc.want || !errors.Is(err, tc.err) && !(err == nil && tc.err == nil) {
			t.Errorf("Session(%q) = %q, %v; want %q, %v", tc.id, s.ID, err, tc.want, tc.err)
		}
	}
}

func TestLinkSentence(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		l    LinkStatus
		want string
	}{
		{LinkStatus{State: LinkConnecting}, "Connecting to the supervisor…"},
		{LinkStatus{State: LinkConnected, Health: &Health{Status: "ok"}}, "Connected to the supervisor"},
		{LinkStatus{State: LinkConnected, Health: &Health{Status: "stalled"}}, "Supervisor stalled"},
		{LinkStatus{State: LinkReconnecting, Attempts: 3, NextAttempt: now.Add(4 * time.Second)}, "Supervisor not running — reconnecting in 4s (attempt 3)"},
	} {
		if got := tc.l.Sentence(now); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.l, got, tc.want)
		}
	}
}

// TestRemoteFollowsHealthWhileConnected: a supervisor whose loop stalls
// still streams; the connected desktop re-reads its health and says so,
// and says it is fine again when it recovers.
func TestRemoteFollowsHealthWhileConnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{conns: []fakeConn{{msgs: []Message{snapshotMsg("g", 1, sess("aaaa", sessions.Working))}, hold: true}}}
		r := newRemote(nil, src, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		synctest.Wait()
		now := func() string { return r.Link().Sentence(time.Now()) }
		if got := now(); got != "Connected to the supervisor" {
			t.Fatalf("after connecting: %q", got)
		}
		for _, step := range []struct{ status, want, after string }{
			{"stalled", "Supervisor stalled", "the loop stalled"},
			{"", "Connected to the supervisor", "the loop recovered"},
		} {
			src.mu.Lock()
			src.status = step.status
			src.mu.Unlock()
			time.Sleep(healthEvery)
			synctest.Wait()
			if got := now(); got != step.want {
				t.Fatalf("after %s: %q", step.after, got)
			}
		}
		cancel()
		<-done
	})
}

// TestRemoteDropsArchived: an archived session leaves the mirror, as it
// leaves the app's list (issue 20, item 11).
func TestRemoteDropsArchived(t *testing.T) {
	r := newRemote(nil, &fakeSource{}, nil)
	r.apply(snapshotMsg("g", 1, sess("abc1", sessions.Idle), sess("abc2", sessions.Idle)))
	archived := sess("abc2", sessions.Idle)
	archived.ArchivedAt = time.Now()
	r.apply(Message{Type: MsgSession, Session: &archived})
	if got := r.Sessions(); len(got) != 1 || got[0].ID != "abc1" {
		t.Fatalf("mirror after archiving abc2: %+v", got)
	}
}

// TestMachineRemoteLinkStates: another machine's supervisor that speaks
// another API version is reported incompatible and not streamed from, and
// asked again a minute later; once it speaks ours it streams. A link that
// drops keeps, over its failed attempts, when it went down (Since) and
// when it was last up (Up): "reconnecting since 12:03", not "unreachable".
func TestMachineRemoteLinkStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{apiVersion: APIVersion + 1, conns: []fakeConn{
			{msgs: []Message{snapshotMsg("g1", 1, sess("aaaa", sessions.Working))}},
			{down: true},
			{down: true},
		}}
		r := newRemote(nil, src, nil)
		r.checkVersion = true
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { r.Run(ctx); close(done) }()
		synctest.Wait()
		l := r.Link()
		if l.State != LinkIncompatible || !strings.Contains(l.Error, fmt.Sprintf("speaks API version %d", APIVersion+1)) || !l.Up.IsZero() {
			t.Fatalf("link %+v, want incompatible naming the version, never up", l)
		}
		if len(src.cursors) != 0 {
			t.Fatal("streamed from a supervisor of another API version")
		}
		src.mu.Lock()
		src.apiVersion = APIVersion
		src.mu.Unlock()
		time.Sleep(incompatibleRetry)
		synctest.Wait()
		// It streamed its snapshot and ended; then it is down twice.
		dropped := time.Now()
		l = r.Link()
		if l.State != LinkReconnecting || !l.Since.Equal(dropped) || l.Up.IsZero() {
			t.Fatalf("after the drop: %+v, want reconnecting since %v, up before", l, dropped)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		l = r.Link()
		if l.State != LinkReconnecting || l.Attempts < 3 || !l.Since.Equal(dropped) {
			t.Errorf("after more failed attempts: %+v, want still reconnecting since %v", l, dropped)
		}
		cancel()
		<-done
	})
}
