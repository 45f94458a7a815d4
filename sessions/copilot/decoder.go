package copilot

import (
	"io"

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
	*agentkit.LineDecoder[turn, Line]
}

// NewDecoder returns a Decoder reading r. A line longer than maxLine bytes
// is skipped as it is read, never held, and reported as agentkit.SkipOversize.
// maxLine <= 0 means DefaultMaxLine.
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	return &Decoder{agentkit.NewLineDecoder(r, maxLine, DefaultMaxLine, "copilot", decodeLine, oversizeLine)}
}

// decodeLine is one stdout line decoded: a skip is not an error for a
// stream, info.Skip and info.Detail already carry what the error says.
func decodeLine(st *turn, raw agentkit.RawLine) (Line, agentkit.Tally) {
	events, info, _ := st.decode(raw.Bytes)
	info.Number = raw.Number
	return Line{Events: events, Info: info}, agentkit.TallyOf(events, info.Skip)
}

// oversizeLine is the Line for a line too long to keep: skipped, with its
// size.
func oversizeLine(raw agentkit.RawLine, detail string) Line {
	return Line{Info: LineInfo{Number: raw.Number, Size: raw.Size, Skip: agentkit.SkipOversize, Detail: detail}}
}
