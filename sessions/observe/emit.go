package observe

import "github.com/session-supervisor/session-supervisor/sessions"

// Emitter decides what an observer that tails a file sends, the same way
// for every source: an EvObserved on every change of the inferred state,
// on every growth of the file (activity: the stall clock) and when the
// process is gone, with the turns started since the last one (NewTurns) —
// a turn can start and end between two reads. Its zero value is ready.
type Emitter struct {
	last    sessions.ObservedState
	emitted bool
	// turns is the source's turn count at the last observation.
	turns int
}

// SetTurns sets the turn count the next observation is counted from: 0
// when a new file is followed or the file was truncated, the count of the
// first read when that read is the past (history, not news).
func (e *Emitter) SetTurns(n int) { e.turns = n }

// Next completes the inferred state st (its NewTurns, and its name carried
// over when st has none) from the source's turn count, and says whether
// to send it: a first observation, a change of state, a grown file or a
// gone process. A sent state is the one the next call compares with.
func (e *Emitter) Next(st sessions.ObservedState, turns int, grew, gone bool) (sessions.ObservedState, bool) {
	if st.Name == "" {
		st.Name = e.last.Name
	}
	delta := turns - e.turns
	e.turns = turns
	if st.InTurn && !e.last.InTurn && delta == 0 {
		// The first read began inside a turn: it is the one in flight.
		delta = 1
	}
	st.NewTurns = delta
	// A change of state is news; the turn count of the last one is not.
	same := st
	same.NewTurns = e.last.NewTurns
	if e.emitted && same == e.last && !grew && !gone {
		return st, false
	}
	e.last, e.emitted = st, true
	return st, true
}
