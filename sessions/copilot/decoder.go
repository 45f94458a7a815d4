package copilot

import (
	"io"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// DefaultMaxLine is the line limit NewDecoder uses when given none. Copilot
// prints a tool's whole result (tool.execution_complete) on one line, so the
// bound is generous while still capping what one line can cost.
const DefaultMaxLine = 16 << 20

// Counters are a decoder's running totals (agentkit's, shared by every
// line-framed adapter).
type Counters = agentkit.Counters

// Line is one stdout line: the events it produced and what it was. A
// skipped line has no events and Info.Skip set.
type Line = agentkit.EventLine[LineInfo]

// Decoder reads the JSONL stdout of one turn's `copilot -p` process. Next
// must be called from one goroutine; Stats from any.
type Decoder struct {
	*agentkit.LineDecoder[turn, Line]
}

// NewDecoder returns a Decoder reading r. A line longer than maxLine bytes
// is skipped as it is read, never held, and reported as agentkit.SkipOversize.
// maxLine <= 0 means DefaultMaxLine.
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	return &Decoder{agentkit.NewEventDecoder(r, maxLine, DefaultMaxLine, "copilot", (*turn).decode)}
}
