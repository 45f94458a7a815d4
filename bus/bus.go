// Package bus fans a live stream of messages out to subscribers without ever
// blocking the publisher, and stamps each message with a cursor that tells a
// client which run of the app it came from. It knows nothing of what the
// messages say beyond whether one is a snapshot (the authoritative whole
// state, which is always delivered and repairs what a slow subscriber
// missed): the wire's message type lives in localapi.
package bus

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Cursor orders the live event stream. Generation changes at every start of
// the app, so a client holding a cursor from an earlier run knows its view is
// stale and must resync; Seq increases within a generation.
type Cursor struct {
	Generation string `json:"generation"`
	Seq        uint64 `json:"seq"`
}

// String is the cursor's wire form, "generation:seq".
func (c Cursor) String() string { return c.Generation + ":" + strconv.FormatUint(c.Seq, 10) }

// ParseCursor parses "generation:seq".
func ParseCursor(s string) (Cursor, error) {
	gen, seq, ok := strings.Cut(s, ":")
	if !ok || gen == "" {
		return Cursor{}, fmt.Errorf("invalid cursor %q (want generation:seq)", s)
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return Cursor{}, fmt.Errorf("invalid cursor %q: %w", s, err)
	}
	return Cursor{Generation: gen, Seq: n}, nil
}

// Message is what a Bus carries: a value that takes the cursor the bus
// stamps it with, and says whether it is a snapshot.
type Message[M any] interface {
	// WithCursor returns the message stamped with c.
	WithCursor(c Cursor) M
	// IsSnapshot reports whether the message is a whole state: it is
	// forced through a full queue and ends a subscriber's lag.
	IsSnapshot() bool
}

// Subscription is one subscriber's bounded queue. When it overflows, the
// subscriber misses incremental messages until the next snapshot, which is
// always delivered (older queued messages make room for it).
type Subscription[M Message[M]] struct {
	C       <-chan M
	ch      chan M
	lagging bool // guarded by Bus.mu
	// dropped is atomic: Dropped may be read while Publish runs.
	dropped atomic.Uint64
}

// Dropped returns how many messages this subscriber missed.
func (s *Subscription[M]) Dropped() uint64 { return s.dropped.Load() }

// Bus fans messages out to subscribers without ever blocking the publisher.
type Bus[M Message[M]] struct {
	mu   sync.Mutex
	gen  string
	seq  uint64
	subs map[*Subscription[M]]struct{}
}

// New returns a bus with a fresh random generation.
func New[M Message[M]]() *Bus[M] {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Bus[M]{gen: hex.EncodeToString(b[:]), subs: map[*Subscription[M]]struct{}{}}
}

// Generation is this run's generation.
func (b *Bus[M]) Generation() string { return b.gen }

// Cursor is the cursor of the last message published.
func (b *Bus[M]) Cursor() Cursor {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Cursor{b.gen, b.seq}
}

// Subscribe registers a subscriber with a queue of size buf.
func (b *Bus[M]) Subscribe(buf int) *Subscription[M] {
	if buf < 1 {
		buf = 1
	}
	ch := make(chan M, buf)
	s := &Subscription[M]{C: ch, ch: ch}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Unsubscribe removes a subscriber and closes its channel.
func (b *Bus[M]) Unsubscribe(s *Subscription[M]) {
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
func (b *Bus[M]) Publish(m M) Cursor {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	c := Cursor{b.gen, b.seq}
	m = m.WithCursor(c)
	snapshot := m.IsSnapshot()
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
	return c
}

// SendTo delivers m to one subscriber only (a resync notice and the snapshot
// that answers a reconnect), stamped with the current cursor.
func (b *Bus[M]) SendTo(s *Subscription[M], m M) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m = m.WithCursor(Cursor{b.gen, b.seq})
	if _, ok := b.subs[s]; ok {
		forceSend(s, m)
		if m.IsSnapshot() {
			s.lagging = false
		}
	}
}

// forceSend queues m, discarding the oldest queued messages to make room.
// Called with Bus.mu held, so only the subscriber's reader competes.
func forceSend[M Message[M]](s *Subscription[M], m M) {
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
func (b *Bus[M]) Stats() (subscribers int, dropped uint64) {
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
func (b *Bus[M]) Subscribers() []*Subscription[M] {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*Subscription[M], 0, len(b.subs))
	for s := range b.subs {
		out = append(out, s)
	}
	return out
}
