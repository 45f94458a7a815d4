package localapi

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
)

// Subscription is one subscriber's bounded queue. When it overflows, the
// subscriber misses incremental messages until the next snapshot, which is
// always delivered (older queued messages make room for it).
type Subscription struct {
	C       <-chan Message
	ch      chan Message
	lagging bool // guarded by Bus.mu
	// dropped is atomic: Dropped may be read while Publish runs.
	dropped atomic.Uint64
}

// Dropped returns how many messages this subscriber missed.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Bus fans messages out to subscribers without ever blocking the publisher.
type Bus struct {
	mu   sync.Mutex
	gen  string
	seq  uint64
	subs map[*Subscription]struct{}
}

// NewBus returns a bus with a fresh random generation.
func NewBus() *Bus {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Bus{gen: hex.EncodeToString(b[:]), subs: map[*Subscription]struct{}{}}
}

// Generation is this run's generation.
func (b *Bus) Generation() string { return b.gen }

// Cursor is the cursor of the last message published.
func (b *Bus) Cursor() Cursor {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Cursor{b.gen, b.seq}
}

// Subscribe registers a subscriber with a queue of size buf.
func (b *Bus) Subscribe(buf int) *Subscription {
	if buf < 1 {
		buf = 1
	}
	ch := make(chan Message, buf)
	s := &Subscription{C: ch, ch: ch}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Unsubscribe removes a subscriber and closes its channel.
func (b *Bus) Unsubscribe(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		close(s.ch)
	}
}

// Publish stamps m with the next cursor and offers it to every subscriber.
// A full or lagging subscriber drops it; a snapshot is forced through and
// ends the lag.
func (b *Bus) Publish(m Message) Cursor {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	m.Cursor = Cursor{b.gen, b.seq}
	snapshot := m.Type == MsgSnapshot
	for s := range b.subs {
		if snapshot {
			forceSend(s, m)
			s.lagging = false
			continue
		}
		if s.lagging {
			s.dropped.Add(1)
			continue
		}
		select {
		case s.ch <- m:
		default:
			s.lagging = true
			s.dropped.Add(1)
		}
	}
	return m.Cursor
}

// SendTo delivers m to one subscriber only (a resync notice and the snapshot
// that answers a reconnect), stamped with the current cursor.
func (b *Bus) SendTo(s *Subscription, m Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m.Cursor = Cursor{b.gen, b.seq}
	if _, ok := b.subs[s]; ok {
		forceSend(s, m)
		if m.Type == MsgSnapshot {
			s.lagging = false
		}
	}
}

// forceSend queues m, discarding the oldest queued messages to make room.
// Called with Bus.mu held, so only the subscriber's reader competes.
func forceSend(s *Subscription, m Message) {
	for {
		select {
		case s.ch <- m:
			return
		default:
		}
		select {
		case <-s.ch:
			s.dropped.Add(1)
		default:
		}
	}
}

// Stats reports the number of subscribers and the messages they missed in
// all (each subscriber's drops, summed).
func (b *Bus) Stats() (subscribers int, dropped uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		dropped += s.dropped.Load()
	}
	return len(b.subs), dropped
}

// Subscribers lists the current subscriptions, so a caller that cannot hold
// the one a connection made (a test driving the server over a raw socket)
// can still find it and read its drops.
func (b *Bus) Subscribers() []*Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*Subscription, 0, len(b.subs))
	for s := range b.subs {
		out = append(out, s)
	}
	return out
}
