package codexterm

import (
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
)

// FuzzSummary feeds arbitrary lines (seeded with every real rollout line
// and the synthetic shapes): the reader never panics, keeps its bounds and
// its invariants, and the rule stack always decides a state with evidence.
func FuzzSummary(f *testing.F) {
	observetest.SeedLines(f)
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"task_started"}}`),
		[]byte(`{"type":"response_item","payload":{"type":"function_call","name":"request_user_input","call_id":"c"}}`))
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"task_complete","error":{"codex_error_info":{"http_connection_failed":{"http_status_code":429}}}}}`),
		[]byte(`{"type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":{"used_percent":100,"resets_at":1}}}}`))
	f.Add([]byte(`{"type":"session_meta","payload":{"source":{"subagent":{"thread_spawn":{}}}}}`), []byte(`{"type":`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var s Summary
		for range 3 {
			s.Feed(a)
			s.Feed(b)
		}
		if len(s.Open) > maxOpen || (s.InTurn && s.Ended) || s.Turns > 3*2 {
			t.Fatalf("invariants: %+v", s)
		}
		for _, alive := range []bool{true, false} {
			st, rule := Infer(Evidence{Liveness: observe.Liveness{PID: 1, Alive: alive, Known: true}, Rollout: true, Summary: s})
			if st.Evidence == "" || st.State.String() == "" || rule == "" {
				t.Fatalf("no decision: %+v (%s)", st, rule)
			}
			if st.State == sessions.Errored && st.Failure.Kind == sessions.NoFailure {
				t.Fatalf("errored without a failure: %+v", st)
			}
		}
		// The same bytes as a rollout's first line.
		if m, err := ParseMeta(a); err == nil && s.HasMeta && m != s.Meta && len(b) == 0 {
			t.Fatalf("ParseMeta %+v, Feed %+v", m, s.Meta)
		}
	})
}
