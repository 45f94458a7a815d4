// Package opencode is the OpenCode adapter: it launches `opencode serve`
// (an HTTP server on 127.0.0.1 with a server-sent event stream), drives one
// OpenCode session through it, and decodes the bus events of that session
// into normalized sessions.Events. It decides no state: that is
// sessions.Apply's job.
package opencode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// DefaultMaxEvent is the bound on one event's data NewDecoder uses when
// given none. A tool part carries a command's whole output, so it is
// generous while still capping what one event can cost.
const DefaultMaxEvent = 16 << 20

// readBufSize is the bufio buffer: a typical event fits, so its data is
// copied once, from the buffer.
const readBufSize = 64 << 10

// idleRelease is how many events in a row must fit the read buffer before
// the buffers grown for a big event are dropped: a burst of big tool parts
// reuses them, and a session back to small events does not pin megabytes.
const idleRelease = 32

// maxMaxEvent caps maxEvent so the limit arithmetic cannot overflow.
const maxMaxEvent = 1 << 30

// Counters are a decoder's running totals.
type Counters struct {
	// Frames counts every non-empty event read, decoded or skipped.
	Frames int64 `json:"frames"`
	// Events counts the events produced.
	Events    int64 `json:"events"`
	Malformed int64 `json:"malformed"`
	Unknown   int64 `json:"unknown"`
	Oversize  int64 `json:"oversize"`
}

// Skipped is the number of events that produced nothing because they could
// not be used (malformed, unknown or oversize).
func (c Counters) Skipped() int64 { return c.Malformed + c.Unknown + c.Oversize }

// Frame is one server-sent event: the events it produced and what it was.
type Frame struct {
	Events []sessions.Event
	Info   EventInfo
}

// Decoder reads the server-sent event stream of `opencode serve` (GET
// /event): "data:" lines up to a blank line make one event. Next must be
// called from one goroutine; the other methods may be called from any.
type Decoder struct {
	br       *bufio.Reader
	maxEvent int
	// data assembles the event being read; acc a line longer than the
	// read buffer.
	data, acc []byte
	// small counts the events in a row that fit the read buffer: after
	// idleRelease of them, buffers grown for a big event are dropped.
	small int
	// oversize: the event being read passed maxEvent; the rest of it is
	// dropped.
	oversize bool
	err      error

	mu    sync.Mutex // guards st and stats
	st    state
	stats Counters
}

// NewDecoder reads events from r; maxEvent bounds one event's data (0:
// DefaultMaxEvent). session, when set, is the OpenCode session whose events
// are ours (it can also be set later, with SetSession).
func NewDecoder(r io.Reader, maxEvent int, session string) *Decoder {
	if maxEvent <= 0 {
		maxEvent = DefaultMaxEvent
	}
	maxEvent = min(maxEvent, maxMaxEvent)
	return &Decoder{br: bufio.NewReaderSize(r, readBufSize), maxEvent: maxEvent, st: state{session: session, now: time.Now}}
}

// SetSession names our session: events of other sessions are ignored.
func (d *Decoder) SetSession(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.session = id
}

// Stats are the running totals.
func (d *Decoder) Stats() Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Model is the model our session's assistant messages last used.
func (d *Decoder) Model() Model {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.model
}

// Busy reports whether OpenCode said our session is working.
func (d *Decoder) Busy() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.busy
}

// Answered records that the app answered request id.
func (d *Decoder) Answered(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.forget(id)
}

// Next returns the next event's frame. A malformed, unknown or oversize
// event is a frame with Info.Skip set (and counted), never an error; the
// error is the stream's end (io.EOF) or a read failure, and it is sticky.
func (d *Decoder) Next() (Frame, error) {
	for {
		if d.err != nil {
			return Frame{}, d.err
		}
		line, long, tooLong, err := d.readLine()
		if err != nil {
			d.err = err
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case tooLong:
			d.oversize = true
		case len(trimmed) == 0:
			if err == nil {
				if f, ok := d.flush(); ok {
					return f, nil
				}
				continue
			}
		default:
			// event:, id:, retry: and comments carry nothing the decoder
			// uses (the type is in the data).
			if field, value, _ := bytes.Cut(trimmed, []byte(":")); string(field) == "data" {
				value = bytes.TrimPrefix(value, []byte(" "))
				if long && len(d.data) == 0 && !d.oversize {
					// A big event's line was assembled in acc already:
					// it becomes the event's data without a second copy,
					// and the data buffer is the next line's acc.
					d.acc, d.data = d.data[:0], value
					d.small = 0
				} else {
					d.add(value)
				}
			}
		}
		if err != nil {
			// A last event without its blank line is still an event.
			if f, ok := d.flush(); ok {
				return f, nil
			}
			return Frame{}, err
		}
	}
}

// readLine reads one line; a line over maxEvent is reported too long and
// not kept. A line that fits the read buffer is returned without a copy.
func (d *Decoder) readLine() (line []byte, long, tooLong bool, err error) {
	d.acc = d.acc[:0]
	for {
		var chunk []byte
		chunk, err = d.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull || len(d.acc) > 0 || tooLong {
			if !tooLong && len(d.acc)+len(chunk) > d.maxEvent {
				tooLong, d.acc = true, d.acc[:0]
			}
			if !tooLong {
				d.acc = append(d.acc, chunk...)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			return d.acc, true, tooLong, err
		}
		return chunk, false, false, err
	}
}

// add appends one data line to the event being read.
func (d *Decoder) add(b []byte) {
	if d.oversize {
		return
	}
	extra := len(b)
	if len(d.data) > 0 {
		extra++
	}
	if len(d.data)+extra > d.maxEvent {
		d.oversize, d.data = true, d.data[:0]
		return
	}
	if len(d.data) > 0 {
		d.data = append(d.data, '\n')
	}
	d.data = append(d.data, b...)
}

// flush decodes the event assembled so far.
func (d *Decoder) flush() (Frame, bool) {
	defer func() {
		d.oversize = false
		d.data = d.data[:0]
		if d.small++; d.small == idleRelease {
			if cap(d.data) > readBufSize {
				d.data = nil
			}
			if cap(d.acc) > readBufSize {
				d.acc = nil
			}
		}
	}()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.oversize {
		d.stats.Frames++
		d.stats.Oversize++
		return Frame{Info: EventInfo{Skip: agentkit.SkipOversize, Detail: fmt.Sprintf("event over %d bytes", d.maxEvent)}}, true
	}
	if len(bytes.TrimSpace(d.data)) == 0 {
		return Frame{}, false
	}
	d.stats.Frames++
	evs, info, err := d.st.decode(d.data)
	switch {
	case errors.Is(err, ErrMalformed):
		d.stats.Malformed++
	case errors.Is(err, ErrUnknown):
		d.stats.Unknown++
	}
	d.stats.Events += int64(len(evs))
	return Frame{Events: evs, Info: info}, true
}
