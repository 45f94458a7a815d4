// Package codex is the Codex CLI adapter: it launches `codex app-server`
// (JSON-RPC lines on stdio), drives one thread through it, decodes its
// notifications and requests into normalized sessions.Events and builds the
// lines written to its stdin. It decides no state: that is sessions.Apply's
// job.
package codex

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// DefaultMaxLine is the line limit NewDecoder uses when given none. Codex
// prints a whole command output (item/completed) on one line, so a generous bound keeps real
// lines while still capping what one line can cost.
const DefaultMaxLine = 16 << 20

// maxMaxLine caps maxLine so the limit arithmetic cannot overflow.
const maxMaxLine = 1 << 30

// readBufSize is the bufio buffer: a typical line fits, so it is decoded
// straight from the buffer without a copy.
const readBufSize = 64 << 10

// idleRelease is how many lines in a row must fit the read buffer before the
// line buffer grown for a long line is dropped: a burst of big tool results
// reuses one buffer, and a session that has gone back to small lines does not
// pin megabytes for good.
const idleRelease = 32

// Counters are a decoder's running totals.
type Counters struct {
	// Lines counts every non-blank line read, decoded or skipped.
	Lines int64 `json:"lines"`
	// Events counts the events produced.
	Events    int64 `json:"events"`
	Malformed int64 `json:"malformed"`
	Unknown   int64 `json:"unknown"`
	Oversize  int64 `json:"oversize"`
}

// Skipped is the number of lines that produced nothing because they could not
// be used (malformed, unknown or oversize).
func (c Counters) Skipped() int64 { return c.Malformed + c.Unknown + c.Oversize }

// Line is one stdout line: the events it produced and what it was. A skipped
// line has no events and Info.Skip set.
type Line struct {
	Events []sessions.Event
	Info   LineInfo
	// Reply, when set, must be written to the agent's stdin: the answer to
	// a server request this client does not serve (a JSON-RPC error), so
	// the agent never waits on it.
	Reply []byte
}

// Decoder reads the JSON-RPC stdout of one `codex app-server`. Next must be
// called from one goroutine; the other methods may be called from any.
type Decoder struct {
	br      *bufio.Reader
	maxLine int
	// acc assembles a line longer than the bufio buffer; accIdle counts the
	// lines since it was last needed.
	acc     []byte
	accIdle int
	lineNo  int64
	// err is sticky: after EOF or a read error every Next returns it.
	err error

	mu    sync.Mutex // guards st and stats
	st    state
	stats Counters
}

// NewDecoder returns a Decoder reading r. A line longer than maxLine bytes
// (without its line ending) is never held in memory: it is skipped as it is
// read and reported as SkipOversize. maxLine <= 0 means DefaultMaxLine.
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	maxLine = min(maxLine, maxMaxLine)
	bufSize := readBufSize
	if maxLine < bufSize {
		bufSize = maxLine + 1 // room for the newline
	}
	return &Decoder{br: bufio.NewReaderSize(r, bufSize), maxLine: maxLine}
}

// Next returns the next non-blank line, decoded, or skipped with the reason
// in Info.Skip. A malformed, unknown or oversize line is not an error. At the
// end of the stream it returns io.EOF (a last line without a newline is
// still returned first); a read error is returned wrapped.
func (d *Decoder) Next() (Line, error) {
	for {
		raw, size, oversize, err := d.readLine()
		if err != nil {
			return Line{}, err
		}
		if oversize {
			d.lineNo++
			d.mu.Lock()
			d.stats.Lines++
			d.stats.Oversize++
			d.mu.Unlock()
			return Line{Info: LineInfo{
				Number: d.lineNo,
				Size:   size,
				Skip:   SkipOversize,
				Detail: fmt.Sprintf("line of %d bytes exceeds the %d-byte limit", size, d.maxLine),
			}}, nil
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		d.lineNo++
		d.mu.Lock()
		// A skip is not an error for a stream: info.Skip and info.Detail
		// already carry what the error says.
		events, info, reply, _ := d.st.decode(raw)
		d.stats.Lines++
		d.stats.Events += int64(len(events))
		switch info.Skip {
		case SkipMalformed:
			d.stats.Malformed++
		case SkipUnknown:
			d.stats.Unknown++
		}
		d.mu.Unlock()
		info.Number = d.lineNo
		return Line{Events: events, Info: info, Reply: reply}, nil
	}
}

// Stats returns the running totals.
func (d *Decoder) Stats() Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// readLine returns the next line without its line ending; the slice is valid
// until the next call. An oversize line is consumed and reported with its
// size and no content.
func (d *Decoder) readLine() (line []byte, size int, oversize bool, err error) {
	if d.err != nil {
		return nil, 0, false, d.err
	}
	if d.accIdle >= idleRelease {
		d.acc, d.accIdle = nil, 0
	}
	d.acc = d.acc[:0]
	for {
		chunk, rerr := d.br.ReadSlice('\n')
		complete := rerr == nil
		body := chunk
		if complete {
			body = chunk[:len(chunk)-1]
		}
		size += len(body)
		// One byte of slack for a '\r' whose '\n' has not been read yet;
		// the exact check runs once the line is complete.
		if !oversize && size > d.maxLine+1 {
			// From here on the line is only counted, never kept.
			oversize = true
			d.acc = nil
		}
		if !oversize {
			if complete && len(d.acc) == 0 {
				// The whole line is in the read buffer: no copy.
				if d.acc != nil {
					d.accIdle++
				}
				return d.finish(body)
			}
			d.accIdle = 0
			d.acc = append(d.acc, body...)
		}
		switch {
		case complete:
			if oversize {
				return nil, size, true, nil
			}
			return d.finish(d.acc)
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		case errors.Is(rerr, io.EOF):
			d.err = io.EOF
			if size == 0 {
				return nil, 0, false, io.EOF
			}
			// The stream ended mid-line (the process died while writing):
			// hand over what there is; an incomplete object decodes as
			// malformed.
			if oversize {
				return nil, size, true, nil
			}
			return d.finish(d.acc)
		default:
			d.err = fmt.Errorf("codex stream: read line %d: %w", d.lineNo+1, rerr)
			return nil, 0, false, d.err
		}
	}
}

// finish strips a trailing '\r' and applies the exact length limit.
func (d *Decoder) finish(line []byte) ([]byte, int, bool, error) {
	line = trimCR(line)
	if len(line) > d.maxLine {
		return nil, len(line), true, nil
	}
	return line, len(line), false, nil
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}
