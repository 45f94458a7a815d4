// Package claude is the Claude Code adapter: it builds the command line of a
// managed `claude -p` session speaking stream-json, decodes its stdout into
// normalized sessions.Events and builds the lines written to its stdin. It
// decides no state: that is sessions.Apply's job.
package claude

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// DefaultMaxLine is the line limit NewDecoder uses when given none. Claude
// Code prints a whole tool result on one line, so a generous bound keeps real
// lines while still capping what one line can cost.
const DefaultMaxLine = 16 << 20

// Counters are a decoder's running totals (agentkit's, shared by every
// line-framed adapter).
type Counters = agentkit.Counters

// Line is one stdout line: the events it produced and what it was. A
// skipped line has no events and Info.Skip set.
type Line = agentkit.EventLine[LineInfo]

// Decoder reads the NDJSON stdout of one Claude Code process. Next must be
// called from one goroutine; Stats and PendingInput may be called from any.
type Decoder struct {
	*agentkit.LineDecoder[state, Line]
}

// NewDecoder returns a Decoder reading r. A line longer than maxLine bytes
// (without its line ending) is never held in memory: it is skipped as it is
// read and reported as agentkit.SkipOversize. maxLine <= 0 means DefaultMaxLine.
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	return &Decoder{agentkit.NewEventDecoder(r, maxLine, DefaultMaxLine, "claude", (*state).decode)}
}

// PendingInput returns the tool input of the unanswered can_use_tool request
// requestID, or nil. Allowing a tool means sending this input back as
// PermissionResponse's updatedInput. Requests are forgotten when their turn's
// result line arrives or the CLI withdraws them.
func (d *Decoder) PendingInput(requestID string) json.RawMessage {
	st := d.Lock()
	defer d.Unlock()
	in, ok := st.pending[requestID]
	if !ok {
		return nil
	}
	return bytes.Clone(in)
}
