package localapi

import "github.com/session-supervisor/session-supervisor/bus"

// The live stream's bus: bus.Bus carrying Message.
type (
	// Bus fans messages out to subscribers without ever blocking the
	// publisher (see bus.Bus).
	Bus = bus.Bus[Message]
	// Subscription is one subscriber's bounded queue (see bus.Subscription).
	Subscription = bus.Subscription[Message]
	// Cursor orders the live stream (see bus.Cursor).
	Cursor = bus.Cursor
)

// NewBus returns a bus for the live stream with a fresh random generation.
func NewBus() *Bus { return bus.New[Message]() }

// ParseCursor parses a cursor's wire form, "generation:seq".
func ParseCursor(s string) (Cursor, error) { return bus.ParseCursor(s) }

// WithCursor is m stamped with c (the bus stamps every message it sends).
func (m Message) WithCursor(c Cursor) Message {
	m.Cursor = c
	return m
}

// IsSnapshot reports whether m is a snapshot: the whole state, which the
// bus always delivers and which ends a slow subscriber's lag.
func (m Message) IsSnapshot() bool { return m.Type == MsgSnapshot }
