package copilot

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// DefaultMaxLine is the line limit NewDecoder uses when given none. Copilot
// prints a tool's whole result (tool.execution_complete) on one line, so the
// bound is generous while still capping what one line can cost.
const DefaultMaxLine = 16 << 20

// readBufSize is the bufio buffer: a typical line (the largest measured is
// the skills catalogue, about 1.5 KB) is decoded straight from it.
const readBufSize = 64 << 10

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
}

// Decoder reads the JSONL stdout of one turn's `copilot -p` process. Next
// must be called from one goroutine; Stats from any.
type Decoder struct {
	br      *bufio.Reader
	maxLine int
	acc     []byte
	lineNo  int64
	err     error
	t       turn

	mu    sync.Mutex // guards stats
	stats Counters
}

// NewDecoder returns a Decoder reading r. A line longer than maxLine bytes
// is skipped as it is read, never held, and reported as SkipOversize.
// maxLine <= 0 means DefaultMaxLine.
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &Decoder{br: bufio.NewReaderSize(r, min(readBufSize, maxLine+1)), maxLine: maxLine}
}

// Next returns the next non-blank line, decoded or skipped (Info.Skip). At
// the end of the stream it returns io.EOF; a read error is returned wrapped.
func (d *Decoder) Next() (Line, error) {
	for {
		raw, size, err := d.readLine()
		if err != nil {
			return Line{}, err
		}
		if raw == nil && size > 0 {
			d.lineNo++
			d.count(func(c *Counters) { c.Lines++; c.Oversize++ })
			return Line{Info: LineInfo{Number: d.lineNo, Size: size, Skip: SkipOversize,
				Detail: fmt.Sprintf("line of %d bytes exceeds the %d-byte limit", size, d.maxLine)}}, nil
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		d.lineNo++
		events, info, _ := d.t.decode(raw)
		info.Number = d.lineNo
		d.count(func(c *Counters) {
			c.Lines++
			c.Events += int64(len(events))
			switch info.Skip {
			case SkipMalformed:
				c.Malformed++
			case SkipUnknown:
				c.Unknown++
			}
		})
		return Line{Events: events, Info: info}, nil
	}
}

func (d *Decoder) count(f func(*Counters)) {
	d.mu.Lock()
	f(&d.stats)
	d.mu.Unlock()
}

// Stats returns the running totals.
func (d *Decoder) Stats() Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// readLine returns the next line without its ending (valid until the next
// call), or nil and its size for an oversize line, which is consumed
// without being kept. A last line without a newline is returned before EOF.
func (d *Decoder) readLine() ([]byte, int, error) {
	if d.err != nil {
		return nil, 0, d.err
	}
	d.acc = d.acc[:0]
	size, oversize := 0, false
	for {
		chunk, rerr := d.br.ReadSlice('\n')
		body := bytes.TrimSuffix(chunk, []byte("\n"))
		size += len(body)
		if size > d.maxLine+1 && !oversize {
			oversize, d.acc = true, d.acc[:0]
		}
		if !oversize {
			if rerr == nil && len(d.acc) == 0 {
				return d.finish(body)
			}
			d.acc = append(d.acc, body...)
		}
		switch {
		case rerr == nil:
			if oversize {
				return nil, size, nil
			}
			return d.finish(d.acc)
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		case errors.Is(rerr, io.EOF):
			d.err = io.EOF
			if size == 0 {
				return nil, 0, io.EOF
			}
			if oversize {
				return nil, size, nil
			}
			return d.finish(d.acc)
		default:
			d.err = fmt.Errorf("copilot stream: read line %d: %w", d.lineNo+1, rerr)
			return nil, 0, d.err
		}
	}
}

// finish strips a trailing '\r' and applies the exact limit.
func (d *Decoder) finish(line []byte) ([]byte, int, error) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > d.maxLine {
		return nil, len(line), nil
	}
	return line, len(line), nil
}
