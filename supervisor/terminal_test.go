package supervisor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/termloc"
	"github.com/session-supervisor/session-supervisor/storage"
)

// A terminal session's location is looked at again every terminalRefresh
// (not at every tick), a change is saved and published, a failed look
// keeps the last known place, and a managed session is never located.
func TestRefreshTerminals(t *testing.T) {
	st, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	for _, s := range []sessions.Session{
		{ID: "term", Agent: "claude", Source: sessions.Observed, State: sessions.Idle},
		{ID: "managed", Agent: "claude", Source: sessions.Managed, State: sessions.Idle},
	} {
		if err := st.SaveSessionWithEvents(ctx, s, nil); err != nil {
			t.Fatal(err)
		}
	}
	pane := func(w int) *termloc.Location {
		return &termloc.Location{Kind: termloc.KindTmux, TTY: "/dev/pts/4", Tmux: &termloc.Tmux{Socket: "/s", Session: "work", Window: w, Pane: 1}}
	}
	var asked []int
	next, nextErr := pane(2), error(nil)
	rt := New(Options{Store: st, LocateTerminal: func(_ context.Context, pid int) (*termloc.Location, error) {
		asked = append(asked, pid)
		return next, nextErr
	}})
	if err := rt.Boot(ctx); err != nil {
		t.Fatal(err)
	}
	rec := recordBus(rt.Bus())
	rt.mu.Lock()
	for _, id := range []string{"term", "managed"} {
		rt.sess[id].s.PID, rt.sess[id].s.ProcessAlive = 4242, true // as the source found it
	}
	rt.mu.Unlock()
	where := func() *termloc.Location {
		s, err := rt.Session("term")
		if err != nil {
			t.Fatal(err)
		}
		return s.Terminal
	}

	now := time.Now()
	rt.refreshTerminals(ctx, now)
	if got := where(); got.String() != "tmux work:2.1, not attached" || len(asked) != 1 || asked[0] != 4242 {
		t.Fatalf("after the first look: %s, asked %v", got, asked)
	}
	rt.refreshTerminals(ctx, now.Add(time.Second))
	if len(asked) != 1 {
		t.Fatalf("looked again after a second: %v", asked)
	}
	next = pane(3) // moved to another window
	rt.refreshTerminals(ctx, now.Add(terminalRefresh))
	if got := where(); got.String() != "tmux work:3.1, not attached" {
		t.Fatalf("the move is not seen: %s", got)
	}
	rec.catchUp(t, rt.Bus().Cursor())
	published := 0
	for _, m := range rec.messages() {
		if m.Type == localapi.MsgSession && m.Session.ID == "term" && m.Session.Terminal != nil {
			published++
		}
	}
	if published != 2 {
		t.Errorf("published %d located sessions, want 2 (one per change)", published)
	}
	next, nextErr = nil, errors.New("gone")
	rt.refreshTerminals(ctx, now.Add(2*terminalRefresh))
	if got := where(); got.String() != "tmux work:3.1, not attached" {
		t.Fatalf("a failed look lost the last known place: %s", got)
	}
	if len(asked) != 3 {
		t.Errorf("looks %v, want 3 (the managed session never)", asked)
	}
}
