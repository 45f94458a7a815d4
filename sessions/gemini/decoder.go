// Package gemini is the Gemini CLI adapter: it launches `gemini --acp` (the
// Agent Client Protocol: JSON-RPC lines on stdio, one long-lived process
// for many turns), drives one session through it, decodes its
// notifications and requests into normalized sessions.Events and builds
// the lines written to its stdin. It decides no state: that is
// sessions.Apply's job.
package gemini

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// DefaultMaxLine is the line limit NewDecoder uses when given none: a
// session/load replays whole tool outputs on single lines.
const DefaultMaxLine = 16 << 20

// Counters are a decoder's running totals (agentkit's, shared by every
// line-framed adapter).
type Counters = agentkit.Counters

// Line is one stdout line: the events it produced and what it was.
type Line struct {
	Events []sessions.Event
	Info   LineInfo
	// Reply, when set, must be written to the agent's stdin (the refusal
	// of a request this client does not serve).
	Reply []byte
	// TurnDone: the line answered a session/prompt (the turn is over).
	TurnDone bool
}

// Decoder reads the stdout of one `gemini --acp`. Next must be called from
// one goroutine; the other methods may be called from any.
type Decoder struct {
	*agentkit.LineDecoder[state, Line]
}

// NewDecoder returns a Decoder reading r. A line longer than maxLine bytes
// is never held in memory: it is skipped as it is read and reported as
// agentkit.SkipOversize. maxLine <= 0 means DefaultMaxLine.
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	return &Decoder{agentkit.NewLineDecoder(r, maxLine, DefaultMaxLine, "gemini", decodeLine, oversizeLine)}
}

// decodeLine is one stdout line decoded: a skip is not an error for a
// stream, info.Skip and info.Detail already carry what the error says.
func decodeLine(st *state, raw agentkit.RawLine) (Line, agentkit.Tally) {
	events, info, reply, _ := st.decode(raw.Bytes)
	done := st.turnDone
	info, tally := agentkit.Numbered(info, raw, events)
	return Line{Events: events, Info: info, Reply: reply, TurnDone: done}, tally
}

// oversizeLine is the Line for a line too long to keep: skipped, with its
// size.
func oversizeLine(raw agentkit.RawLine, detail string) Line {
	return Line{Info: agentkit.Oversize[LineInfo](raw, detail)}
}

// expect records that request id of method was sent.
func (d *Decoder) expect(id int64, method string) {
	st := d.Lock()
	defer d.Unlock()
	key := fmt.Sprint(id)
	st.calls = agentkit.Remember(st.calls, key, method)
	switch method {
	case methodPrompt:
		st.prompt = key
	}
}

// expectLoad records the session/load of sessionID: its history replay
// follows, and its answer carries no id.
func (d *Decoder) expectLoad(id int64, sessionID string) {
	d.expect(id, methodSessionLoad)
	st := d.Lock()
	defer d.Unlock()
	st.loadID, st.loading = sessionID, true
}

// session is the open session's id, or why it could not be opened.
func (d *Decoder) session() (id, failed string) {
	st := d.Lock()
	defer d.Unlock()
	return st.session, st.openErr
}

// inTurn reports whether a session/prompt is unanswered.
func (d *Decoder) inTurn() bool {
	st := d.Lock()
	defer d.Unlock()
	return st.prompt != ""
}

// answer forgets the pending permission request and returns it.
func (d *Decoder) answer(id string) (pendingRequest, bool) {
	st := d.Lock()
	defer d.Unlock()
	r, ok := st.pending[id]
	delete(st.pending, id)
	return r, ok
}

// setClock replaces the decoder's clock (tests).
func (d *Decoder) setClock(now func() time.Time) {
	st := d.Lock()
	defer d.Unlock()
	st.clock = now
}

// rawOf returns the id as the agent sent it when the request is unknown.
func rawOf(p pendingRequest, id string) json.RawMessage {
	if p.raw != nil {
		return p.raw
	}
	return agentkit.RawRPCID(id)
}
