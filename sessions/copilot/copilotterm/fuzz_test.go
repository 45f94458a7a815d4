package copilotterm

import (
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
)

// FuzzSummary feeds arbitrary lines (seeded with every real events line
// and the synthetic shapes): the reader never panics, keeps its bounds and
// its invariants, and the rule stack always decides a state with evidence.
func FuzzSummary(f *testing.F) {
	observetest.SeedLines(f)
	f.Add([]byte(`{"type":"user.message","data":{"content":"x"}}`),
		[]byte(`{"type":"permission.requested","data":{"requestId":"r","permissionRequest":{"kind":"shell"}}}`))
	f.Add([]byte(`{"type":"session.error","data":{"errorType":"rate_limit","statusCode":429}}`), []byte(`{"type":"abort","data":{}}`))
	f.Add([]byte(`{"type":"tool.execution_start","data":{"toolCallId":"c"}}`), []byte(`{"type":`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var s Summary
		for range 3 {
			s.Feed(a)
			s.Feed(b)
		}
		if len(s.Open) > maxOpen || len(s.Asks) > maxOpen || (s.InTurn && s.Ended) || s.Turns > 3*2 {
			t.Fatalf("invariants: %+v", s)
		}
		for _, alive := range []bool{true, false} {
			st, rule := Infer(Evidence{Liveness: observe.Liveness{PID: 1, Alive: alive, Known: true}, Events: true, Summary: s})
			if st.Evidence == "" || st.State.String() == "" || rule == "" {
				t.Fatalf("no decision: %+v (%s)", st, rule)
			}
			if st.State == sessions.Errored && st.Failure.Kind == sessions.NoFailure {
				t.Fatalf("errored without a failure: %+v", st)
			}
		}
	})
}
