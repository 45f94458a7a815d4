package agentkit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// maxMaxLine caps a line limit so the limit arithmetic cannot overflow.
const maxMaxLine = 1 << 30

// readBufSize is the bufio buffer: a typical line fits, so it is decoded
// straight from the buffer without a copy.
const readBufSize = 64 << 10

// idleRelease is how many lines in a row must fit the read buffer before the
// line buffer grown for a long line is dropped: a burst of big tool results
// reuses one buffer, and a session that has gone back to small lines does not
// pin megabytes for good.
const idleRelease = 32

// Counters are a line decoder's running totals.
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

// RawLine is one non-blank line of an agent's stream, before its protocol
// decodes it.
type RawLine struct {
	// Bytes is the line without its line ending (nil when Oversize); it is
	// valid until the next call to Next.
	Bytes []byte
	// Number counts the non-blank lines from 1.
	Number int64
	// Size is the line's length in bytes, also when it was too long to keep.
	Size int
	// Oversize: the line was longer than the limit, consumed and not kept.
	Oversize bool
}

// LineReader frames an agent's line-delimited stdout (NDJSON, JSON-RPC on
// stdio): one line at a time, '\n' or "\r\n" endings, blank lines skipped,
// and a line longer than the limit never held in memory but reported with
// its size. Next must be called from one goroutine.
type LineReader struct {
	agent   string
	br      *bufio.Reader
	maxLine int
	// acc assembles a line longer than the bufio buffer; accIdle counts the
	// lines since it was last needed.
	acc     []byte
	accIdle int
	lineNo  int64
	// err is sticky: after EOF or a read error every Next returns it.
	err error
}

// NewLineReader reads agent's stream r with lines of at most maxLine bytes
// (without the line ending; capped at 1 GiB). maxLine must be positive:
// each adapter has its own default.
func NewLineReader(r io.Reader, maxLine int, agent string) *LineReader {
	maxLine = min(max(maxLine, 1), maxMaxLine)
	bufSize := readBufSize
	if maxLine < bufSize {
		bufSize = maxLine + 1 // room for the newline
	}
	return &LineReader{agent: agent, br: bufio.NewReaderSize(r, bufSize), maxLine: maxLine}
}

// MaxLine is the line limit in bytes.
func (lr *LineReader) MaxLine() int { return lr.maxLine }

// OversizeDetail is the skip detail every adapter gives an oversize line.
func (lr *LineReader) OversizeDetail(size int) string {
	return fmt.Sprintf("line of %d bytes exceeds the %d-byte limit", size, lr.maxLine)
}

// Next returns the next non-blank line, or an oversize one. At the end of
// the stream it returns io.EOF (a last line without a newline is still
// returned first); a read error is returned wrapped, naming the agent.
func (lr *LineReader) Next() (RawLine, error) {
	for {
		raw, size, oversize, err := lr.readLine()
		if err != nil {
			return RawLine{}, err
		}
		if !oversize && len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		lr.lineNo++
		return RawLine{Bytes: raw, Number: lr.lineNo, Size: size, Oversize: oversize}, nil
	}
}

// readLine returns the next line without its line ending; the slice is valid
// until the next call. An oversize line is consumed and reported with its
// size and no content.
func (lr *LineReader) readLine() (line []byte, size int, oversize bool, err error) {
	if lr.err != nil {
		return nil, 0, false, lr.err
	}
	if lr.accIdle >= idleRelease {
		lr.acc, lr.accIdle = nil, 0
	}
	lr.acc = lr.acc[:0]
	for {
		chunk, rerr := lr.br.ReadSlice('\n')
		complete := rerr == nil
		body := chunk
		if complete {
			body = chunk[:len(chunk)-1]
		}
		size += len(body)
		// One byte of slack for a '\r' whose '\n' has not been read yet;
		// the exact check runs once the line is complete.
		if !oversize && size > lr.maxLine+1 {
			// From here on the line is only counted, never kept.
			oversize = true
			lr.acc = nil
		}
		if !oversize {
			if complete && len(lr.acc) == 0 {
				// The whole line is in the read buffer: no copy.
				if lr.acc != nil {
					lr.accIdle++
				}
				return lr.finish(body)
			}
			lr.accIdle = 0
			lr.acc = append(lr.acc, body...)
		}
		switch {
		case complete:
			if oversize {
				return nil, size, true, nil
			}
			return lr.finish(lr.acc)
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		case errors.Is(rerr, io.EOF):
			lr.err = io.EOF
			if size == 0 {
				return nil, 0, false, io.EOF
			}
			// The stream ended mid-line (the process died while writing):
			// hand over what there is; an incomplete object decodes as
			// malformed.
			if oversize {
				return nil, size, true, nil
			}
			return lr.finish(lr.acc)
		default:
			lr.err = fmt.Errorf("%s stream: read line %d: %w", lr.agent, lr.lineNo+1, rerr)
			return nil, 0, false, lr.err
		}
	}
}

// finish strips a trailing '\r' and applies the exact length limit.
func (lr *LineReader) finish(line []byte) ([]byte, int, bool, error) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > lr.maxLine {
		return nil, len(line), true, nil
	}
	return line, len(line), false, nil
}

// Tally is what one decoded line adds to the Counters.
type Tally struct {
	Events             int
	Malformed, Unknown bool
}

// TallyOf is the Tally of a line that produced events and was skipped for
// skip (SkipNone when decoded).
func TallyOf(events []sessions.Event, skip SkipReason) Tally {
	return Tally{Events: len(events), Malformed: skip == SkipMalformed, Unknown: skip == SkipUnknown}
}

// NextLine reads lr's next line and counts it in stats while holding mu (a
// decoder's lock over its protocol state and its counters): an oversize
// line becomes oversize(raw), any other decode(raw), so each adapter's
// decoder only says what a line means.
func NextLine[L any](lr *LineReader, mu sync.Locker, stats *Counters, oversize func(RawLine) L, decode func(RawLine) (L, Tally)) (L, error) {
	raw, err := lr.Next()
	if err != nil {
		var none L
		return none, err
	}
	mu.Lock()
	defer mu.Unlock()
	stats.Lines++
	if raw.Oversize {
		stats.Oversize++
		return oversize(raw), nil
	}
	line, t := decode(raw)
	stats.Events += int64(t.Events)
	if t.Malformed {
		stats.Malformed++
	}
	if t.Unknown {
		stats.Unknown++
	}
	return line, nil
}
