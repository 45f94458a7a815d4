// Package codex is the Codex CLI adapter: it launches `codex app-server`
// (JSON-RPC lines on stdio), drives one thread through it, decodes its
// notifications and requests into normalized sessions.Events and builds the
// lines written to its stdin. It decides no state: that is sessions.Apply's
// job.
package codex

import (
	"io"
	"sync"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// DefaultMaxLine is the line limit NewDecoder uses when given none. Codex
// prints a whole command output (item/completed) on one line, so a generous bound keeps real
// lines while still capping what one line can cost.
const DefaultMaxLine = 16 << 20

// Counters are a decoder's running totals (agentkit's, shared by every
// line-framed adapter).
type Counters = agentkit.Counters

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
	lines *agentkit.LineReader

	mu    sync.Mutex // guards st and stats
	st    state
	stats Counters
}

// NewDecoder returns a Decoder reading r. A line longer than maxLine bytes
// (without its line ending) is never held in memory: it is skipped as it is
// read and reported as agentkit.SkipOversize. maxLine <= 0 means DefaultMaxLine.
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &Decoder{lines: agentkit.NewLineReader(r, maxLine, "codex")}
}

// Next returns the next non-blank line, decoded, or skipped with the reason
// in Info.Skip. A malformed, unknown or oversize line is not an error. At the
// end of the stream it returns io.EOF (a last line without a newline is
// still returned first); a read error is returned wrapped.
func (d *Decoder) Next() (Line, error) {
	return agentkit.NextLine(d.lines, &d.mu, &d.stats, d.oversize, func(raw agentkit.RawLine) (Line, agentkit.Tally) {
		// A skip is not an error for a stream: info.Skip and info.Detail
		// already carry what the error says.
		events, info, reply, _ := d.st.decode(raw.Bytes)
		info.Number = raw.Number
		return Line{Events: events, Info: info, Reply: reply}, agentkit.TallyOf(events, info.Skip)
	})
}

// oversize is the Line for a line too long to keep: skipped, with its size.
func (d *Decoder) oversize(raw agentkit.RawLine) Line {
	return Line{Info: LineInfo{Number: raw.Number, Size: raw.Size, Skip: agentkit.SkipOversize, Detail: d.lines.OversizeDetail(raw.Size)}}
}

// Stats returns the running totals.
func (d *Decoder) Stats() Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}
