// Package codex is the Codex CLI adapter: it launches `codex app-server`
// (JSON-RPC lines on stdio), drives one thread through it, decodes its
// notifications and requests into normalized sessions.Events and builds the
// lines written to its stdin. It decides no state: that is sessions.Apply's
// job.
package codex

import (
	"io"

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
	*agentkit.LineDecoder[state, Line]
}

// NewDecoder returns a Decoder reading r. A line longer than maxLine bytes
// (without its line ending) is never held in memory: it is skipped as it is
// read and reported as agentkit.SkipOversize. maxLine <= 0 means DefaultMaxLine.
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	return &Decoder{agentkit.NewLineDecoder(r, maxLine, DefaultMaxLine, "codex", decodeLine, oversizeLine)}
}

// decodeLine is one stdout line decoded: a skip is not an error for a
// stream, info.Skip and info.Detail already carry what the error says.
func decodeLine(st *state, raw agentkit.RawLine) (Line, agentkit.Tally) {
	events, info, reply, _ := st.decode(raw.Bytes)
	info, tally := agentkit.Numbered(info, raw, events)
	return Line{Events: events, Info: info, Reply: reply}, tally
}

// oversizeLine is the Line for a line too long to keep: skipped, with its
// size.
func oversizeLine(raw agentkit.RawLine, detail string) Line {
	return Line{Info: agentkit.Oversize[LineInfo](raw, detail)}
}
