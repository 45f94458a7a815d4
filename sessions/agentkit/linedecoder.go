package agentkit

import (
	"io"
	"sync"
)

// LineDecoder is what a line-framed adapter's Decoder shares whatever its
// protocol: the LineReader over the agent's stdout, the protocol's state S
// under one lock (held while a line is decoded, so the adapter's other
// methods may read or change the state from any goroutine, through Lock)
// and the running totals. The adapter gives how one line becomes its line
// type L, and the L of a line too long to keep. Next must be called from
// one goroutine.
type LineDecoder[S, L any] struct {
	lines    *LineReader
	decode   func(st *S, raw RawLine) (L, Tally)
	oversize func(raw RawLine, detail string) L

	mu    sync.Mutex // guards st and stats
	st    S
	stats Counters
}

// NewLineDecoder returns a LineDecoder reading agent's stream r. A line
// longer than maxLine bytes (without its line ending; def when maxLine <= 0)
// is never held in memory: it is skipped as it is read and becomes
// oversize(raw, detail), detail being the skip's words. Any other line
// becomes decode(state, raw): a skip is not an error for a stream, so decode
// says it in its L.
func NewLineDecoder[S, L any](r io.Reader, maxLine, def int, agent string,
	decode func(st *S, raw RawLine) (L, Tally), oversize func(raw RawLine, detail string) L) *LineDecoder[S, L] {
	if maxLine <= 0 {
		maxLine = def
	}
	return &LineDecoder[S, L]{lines: NewLineReader(r, maxLine, agent), decode: decode, oversize: oversize}
}

// Next returns the next non-blank line, decoded, or skipped with the reason
// in it. A malformed, unknown or oversize line is not an error. At the end
// of the stream it returns io.EOF (a last line without a newline is still
// returned first); a read error is returned wrapped.
func (d *LineDecoder[S, L]) Next() (L, error) {
	return NextLine(d.lines, &d.mu, &d.stats,
		func(raw RawLine) L { return d.oversize(raw, d.lines.OversizeDetail(raw.Size)) },
		func(raw RawLine) (L, Tally) { return d.decode(&d.st, raw) })
}

// Stats returns the running totals.
func (d *LineDecoder[S, L]) Stats() Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Lock locks the decoder's state (lines wait) and returns it, for the
// adapter's own methods that read or change it while lines are decoded;
// Unlock releases it.
func (d *LineDecoder[S, L]) Lock() *S {
	d.mu.Lock()
	return &d.st
}

// Unlock releases the state Lock locked.
func (d *LineDecoder[S, L]) Unlock() { d.mu.Unlock() }
