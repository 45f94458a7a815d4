package observe

import (
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The emission rule, step by step: the first look is sent, a repeat is
// not, growth and a gone process are, a turn that started and ended
// between two looks is counted, a first read inside a turn is one turn,
// and the name is carried over.
func TestEmitter(t *testing.T) {
	working := sessions.ObservedState{State: sessions.Working, InTurn: true, Evidence: "w"}
	review := sessions.ObservedState{State: sessions.WaitingOnUser, Wait: sessions.WaitReview, Evidence: "r"}
	idle := sessions.ObservedState{State: sessions.Idle, Evidence: "i", Name: "named"}
	var e Emitter
	for i, step := range []struct {
		st         sessions.ObservedState
		turns      int
		grew, gone bool
		send       bool
		newTurns   int
		name       string
	}{
		{idle, 0, false, false, true, 0, "named"},
		{idle, 0, false, false, false, 0, "named"},
		{idle, 0, true, false, true, 0, "named"},
		{working, 1, true, false, true, 1, "named"},
		{working, 1, false, false, false, 0, "named"},
		{review, 2, true, false, true, 1, "named"}, // a whole turn between two looks
		{review, 2, false, true, true, 0, "named"},
	} {
		got, send := e.Next(step.st, step.turns, step.grew, step.gone)
		if send != step.send || got.NewTurns != step.newTurns || got.Name != step.name {
			t.Fatalf("step %d: %+v send %v", i, got, send)
		}
	}
	// Following began inside a turn the history already counted.
	var h Emitter
	h.SetTurns(3)
	if got, send := h.Next(working, 3, true, false); !send || got.NewTurns != 1 {
		t.Fatalf("%+v %v", got, send)
	}
}
