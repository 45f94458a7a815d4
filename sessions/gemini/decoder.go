// Package gemini is the Gemini CLI adapter: it launches `gemini --acp` (the
// Agent Client Protocol: JSON-RPC lines on stdio, one long-lived process
// for many turns), drives one session through it, decodes its
// notifications and requests into normalized sessions.Events and builds
// the lines written to its stdin. It decides no state: that is
// sessions.Apply's job.
package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// DefaultMaxLine is the line limit NewDecoder uses when given none: a
// session/load replays whole tool outputs on single lines.
const DefaultMaxLine = 16 << 20

// Counters are a decoder's running totals.
type Counters struct {
	Lines     int64 `json:"lines"`
	Events    int64 `json:"events"`
	Malformed int64 `json:"malformed"`
	Unknown   int64 `json:"unknown"`
	Oversize  int64 `json:"oversize"`
}

// Skipped is the number of lines that produced nothing because they could
// not be used.
func (c Counters) Skipped() int64 { return c.Malformed + c.Unknown + c.Oversize }

// Line is one stdout line: the events it produced and what it was.
type Line struct {
	Events []sessions.Event
	Info   LineInfo
	// Reply, when set, must be written to the agent's stdin (the refusal
	// of a request this client does not serve).
	Reply []byte
	// TurnDone: the line answered a session/prompt (the turn is over).
	TurnDone bool
}

// Decoder reads the stdout of one `gemini --acp`. Next must be called from
// one goroutine; the other methods may be called from any.
type Decoder struct {
	br      *bufio.Reader
	maxLine int
	buf     []byte
	lineNo  int64
	err     error

	mu    sync.Mutex // guards st and stats
	st    state
	stats Counters
}

// NewDecoder returns a Decoder reading r. A line longer than maxLine bytes
// is never held in memory: it is skipped as it is read and reported as
// SkipOversize. maxLine <= 0 means DefaultMaxLine.
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &Decoder{br: bufio.NewReaderSize(r, 64<<10), maxLine: min(maxLine, 1<<30)}
}

// Next returns the next non-blank line, decoded or skipped (Info.Skip). A
// malformed, unknown or oversize line is not an error. At the end of the
// stream it returns io.EOF; a read error is returned wrapped.
func (d *Decoder) Next() (Line, error) {
	for {
		raw, size, oversize, err := d.readLine()
		if err != nil {
			return Line{}, err
		}
		if !oversize && len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		d.lineNo++
		d.mu.Lock()
		d.stats.Lines++
		if oversize {
			d.stats.Oversize++
			d.mu.Unlock()
			return Line{Info: LineInfo{Number: d.lineNo, Size: size, Skip: SkipOversize,
				Detail: fmt.Sprintf("line of %d bytes exceeds the %d-byte limit", size, d.maxLine)}}, nil
		}
		events, info, reply, _ := d.st.decode(raw)
		done := d.st.turnDone
		d.stats.Events += int64(len(events))
		switch info.Skip {
		case SkipMalformed:
			d.stats.Malformed++
		case SkipUnknown:
			d.stats.Unknown++
		}
		d.mu.Unlock()
		info.Number = d.lineNo
		return Line{Events: events, Info: info, Reply: reply, TurnDone: done}, nil
	}
}

// readLine returns the next line without its line ending (valid until the
// next call); an oversize line is consumed and only measured.
func (d *Decoder) readLine() (line []byte, size int, oversize bool, err error) {
	if d.err != nil {
		return nil, 0, false, d.err
	}
	d.buf = d.buf[:0]
	for {
		chunk, rerr := d.br.ReadSlice('\n')
		size += len(chunk)
		if !oversize && size > d.maxLine+2 {
			oversize, d.buf = true, nil
		}
		if !oversize {
			d.buf = append(d.buf, chunk...)
		}
		switch {
		case rerr == nil:
			if oversize {
				return nil, size - 1, true, nil
			}
			return d.finish()
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		case errors.Is(rerr, io.EOF):
			d.err = io.EOF
			if size == 0 {
				return nil, 0, false, io.EOF
			}
			if oversize {
				return nil, size, true, nil
			}
			// The stream ended mid-line (the process died while
			// writing): an incomplete object decodes as malformed.
			return d.finish()
		default:
			d.err = fmt.Errorf("gemini stream: read line %d: %w", d.lineNo+1, rerr)
			return nil, 0, false, d.err
		}
	}
}

func (d *Decoder) finish() ([]byte, int, bool, error) {
	b := bytes.TrimRight(d.buf, "\r\n")
	if len(b) > d.maxLine {
		return nil, len(b), true, nil
	}
	return b, len(b), false, nil
}

// Stats returns the running totals.
func (d *Decoder) Stats() Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// expect records that request id of method was sent.
func (d *Decoder) expect(id int64, method string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.st.calls == nil {
		d.st.calls = map[string]string{}
	}
	if len(d.st.calls) >= maxTracked {
		clear(d.st.calls)
	}
	key := fmt.Sprint(id)
	d.st.calls[key] = method
	switch method {
	case methodPrompt:
		d.st.prompt = key
	}
}

// expectLoad records the session/load of sessionID: its history replay
// follows, and its answer carries no id.
func (d *Decoder) expectLoad(id int64, sessionID string) {
	d.expect(id, methodSessionLoad)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.loadID, d.st.loading = sessionID, true
}

// session is the open session's id, or why it could not be opened.
func (d *Decoder) session() (id, failed string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.session, d.st.openErr
}

// inTurn reports whether a session/prompt is unanswered.
func (d *Decoder) inTurn() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.prompt != ""
}

// answer forgets the pending permission request and returns it.
func (d *Decoder) answer(id string) (pendingRequest, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.st.pending[id]
	delete(d.st.pending, id)
	return r, ok
}

// setClock replaces the decoder's clock (tests).
func (d *Decoder) setClock(now func() time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.st.clock = now
}

// rawOf returns the id as the agent sent it when the request is unknown.
func rawOf(p pendingRequest, id string) json.RawMessage {
	if p.raw != nil {
		return p.raw
	}
	return rawID(id)
}
