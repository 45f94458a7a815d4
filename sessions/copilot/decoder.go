package copilot

import (
	"io"
	"sync"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// DefaultMaxLine is the line limit NewDecoder uses when given none. Copilot
// prints a tool's whole result (tool.execution_complete) on one line, so the
// bound is generous while still capping what one line can cost.
const DefaultMaxLine = 16 << 20

// Counters are a decoder's running totals (agentkit's, shared by every
// line-framed adapter).
type Counters = agentkit.Counters

// Line is one stdout line: the events it produced and what it was.
type Line struct {
	Events []sessions.Event
	Info   LineInfo
}

// Decoder reads the JSONL stdout of one turn's `copilot -p` process. Next
// must be called from one goroutine; Stats from any.
type Decoder struct {
	lines *agentkit.LineReader
	t     turn

	mu    sync.Mutex // guards t and stats
	stats Counters
}

// NewDecoder returns a Decoder reading r. A line longer than maxLine bytes
// is skipped as it is read, never held, and reported as agentkit.SkipOversize.
// maxLine <= 0 means DefaultMaxLine.
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &Decoder{lines: agentkit.NewLineReader(r, maxLine, "copilot")}
}

// Next returns the next non-blank line, decoded or skipped (Info.Skip). At
// the end of the stream it returns io.EOF; a read error is returned wrapped.
func (d *Decoder) Next() (Line, error) {
	return agentkit.NextLine(d.lines, &d.mu, &d.stats, d.oversize, func(raw agentkit.RawLine) (Line, agentkit.Tally) {
		// A skip is not an error for a stream: info.Skip and info.Detail
		// already carry what the error says.
		events, info, _ := d.t.decode(raw.Bytes)
		info.Number = raw.Number
		return Line{Events: events, Info: info}, agentkit.TallyOf(events, info.Skip)
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
