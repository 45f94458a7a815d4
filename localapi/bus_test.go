package localapi

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// waitLimit bounds a wait for something that must happen; a test that
// reaches it has found a hang.
const waitLimit = 30 * time.Second

func TestBusSeqIncreases(t *testing.T) {
	b := NewBus()
	sub := b.Subscribe(100)
	if c := b.Cursor(); c.Generation != b.Generation() || c.Seq != 0 {
		t.Fatalf("fresh bus cursor = %+v", c)
	}
	var published []Cursor
	for range 50 {
		published = append(published, b.Publish(Message{Type: MsgSession, Session: &sessions.Session{ID: "x"}}))
	}
	for i, c := range published {
		if c.Generation != b.Generation() || c.Seq != uint64(i+1) {
			t.Fatalf("publish %d got cursor %+v, want seq %d", i, c, i+1)
		}
		m := <-sub.C
		if m.Cursor != c {
			t.Fatalf("message %d delivered with cursor %+v, published as %+v", i, m.Cursor, c)
		}
	}
	if c := b.Cursor(); c != published[len(published)-1] {
		t.Errorf("Cursor() = %+v, want the last published %+v", c, published[len(published)-1])
	}
	if sub.Dropped() != 0 {
		t.Errorf("a keeping-up subscriber dropped %d", sub.Dropped())
	}
}

// TestBusSlowSubscriber: a subscriber that never reads cannot block
// Publish; it lags (missing incremental messages), gets the next snapshot,
// and incremental delivery resumes after it.
func TestBusSlowSubscriber(t *testing.T) {
	const n, buf = 10_000, 4
	b := NewBus()
	slow := b.Subscribe(buf)
	fast := b.Subscribe(n + 10)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			b.Publish(Message{Type: MsgTimeline, Event: &TimelineRow{ID: int64(i)}})
		}
	}()
	// Dropped may be read while the publisher runs.
	deadline := time.Now().Add(waitLimit)
	for slow.Dropped() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("Publish blocked on a subscriber that never reads")
	}
	if got := slow.Dropped(); got != n-buf {
		t.Errorf("slow subscriber dropped %d, want %d", got, n-buf)
	}
	if fast.Dropped() != 0 || len(fast.C) != n {
		t.Errorf("the fast subscriber was affected: dropped %d, queued %d of %d", fast.Dropped(), len(fast.C), n)
	}

	// Lagging: even with room again, incremental messages are not delivered
	// (the subscriber would see a gap it cannot detect); only a snapshot ends
	// the lag.
	<-slow.C
	b.Publish(Message{Type: MsgTimeline, Event: &TimelineRow{ID: -1}})
	if got := len(slow.C); got != buf-1 {
		t.Errorf("a lagging subscriber got an incremental message: %d queued, want %d", got, buf-1)
	}

	snap := b.Publish(Message{Type: MsgSnapshot, Sessions: []sessions.Session{{ID: "s1"}}})
	var last Message
	for len(slow.C) > 0 {
		last = <-slow.C
	}
	if last.Type != MsgSnapshot || last.Cursor != snap {
		t.Fatalf("last queued message = %s %+v, want the snapshot %+v", last.Type, last.Cursor, snap)
	}
	next := b.Publish(Message{Type: MsgSession, Session: &sessions.Session{ID: "s1"}})
	select {
	case m := <-slow.C:
		if m.Cursor != next {
			t.Errorf("after the snapshot got %+v, want %+v", m.Cursor, next)
		}
	default:
		t.Error("incremental delivery did not resume after the snapshot")
	}
	// The message published while lagging counts too (the snapshot found
	// room: one message had been read).
	if got, want := slow.Dropped(), uint64(n-buf+1); got != want {
		t.Errorf("Dropped = %d, want %d", got, want)
	}
}

// TestBusSnapshotFitsAFullQueue: a snapshot is delivered even into a full
// queue of a subscriber that is not lagging yet, pushing the oldest out.
func TestBusSnapshotFitsAFullQueue(t *testing.T) {
	b := NewBus()
	sub := b.Subscribe(2)
	b.Publish(Message{Type: MsgSession, Session: &sessions.Session{ID: "a"}})
	second := b.Publish(Message{Type: MsgSession, Session: &sessions.Session{ID: "b"}})
	snap := b.Publish(Message{Type: MsgSnapshot})
	if m := <-sub.C; m.Cursor != second {
		t.Errorf("first queued %+v, want %+v (the oldest is dropped)", m.Cursor, second)
	}
	if m := <-sub.C; m.Cursor != snap || m.Type != MsgSnapshot {
		t.Errorf("second queued %s %+v, want the snapshot", m.Type, m.Cursor)
	}
	if sub.Dropped() != 1 {
		t.Errorf("Dropped = %d, want 1", sub.Dropped())
	}
}

func TestBusSendToOneSubscriber(t *testing.T) {
	b := NewBus()
	a, other := b.Subscribe(4), b.Subscribe(4)
	c := b.Publish(Message{Type: MsgSession, Session: &sessions.Session{ID: "x"}})
	<-a.C
	<-other.C
	b.SendTo(a, Message{Type: MsgResync})
	if m := <-a.C; m.Type != MsgResync || m.Cursor != c {
		t.Errorf("SendTo delivered %s %+v, want resync at the current cursor %+v", m.Type, m.Cursor, c)
	}
	if len(other.C) != 0 {
		t.Error("SendTo reached another subscriber")
	}
	if b.Cursor() != c {
		t.Errorf("SendTo moved the cursor to %+v", b.Cursor())
	}
}

func TestBusUnsubscribeClosesChannel(t *testing.T) {
	b := NewBus()
	sub := b.Subscribe(4)
	b.Publish(Message{Type: MsgSnapshot})
	b.Unsubscribe(sub)
	b.Unsubscribe(sub) // twice is harmless
	b.Publish(Message{Type: MsgSnapshot})
	b.SendTo(sub, Message{Type: MsgResync})
	var got int
	for range sub.C { // ends only if the channel is closed
		got++
	}
	if got != 1 {
		t.Errorf("received %d messages, want only the one published before Unsubscribe", got)
	}
}

func TestBusGenerationsDiffer(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		g := NewBus().Generation()
		if len(g) != 16 {
			t.Errorf("generation %q is not 16 hex digits", g)
		}
		if _, err := hex.DecodeString(g); err != nil {
			t.Errorf("generation %q: %v", g, err)
		}
		if seen[g] {
			t.Fatalf("generation %q repeated", g)
		}
		seen[g] = true
	}
}
