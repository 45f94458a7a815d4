package agentkit

import (
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// TestJudge: what Alive answers for a sequence of observations. Unknown is
// never "alive"; gone is unknown for ExitGrace (the exit event is due),
// then known dead; the same pid with another start stamp is someone else's.
func TestJudge(t *testing.T) {
	type obs struct {
		stamp string
		state procscan.State
	}
	type step struct {
		at           time.Duration
		obs          obs
		alive, known bool
	}
	running := func(stamp string) obs { return obs{stamp, procscan.Running} }
	gone := obs{state: procscan.Gone}
	unknown := obs{}
	cases := []struct {
		name  string
		steps []step
	}{
		{"running", []step{{0, running("10"), true, true}, {time.Minute, running("10"), true, true}}},
		{"running without identity", []step{{0, running(""), true, true}}},
		{"unknown is never alive", []step{{0, unknown, false, false}, {time.Hour, unknown, false, false}}},
		{"gone: grace, then dead", []step{
			{0, running("10"), true, true},
			{time.Second, gone, false, false},
			{time.Second + ExitGrace - time.Millisecond, gone, false, false},
			{time.Second + ExitGrace, gone, false, true},
		}},
		{"back from gone resets the grace", []step{
			{0, gone, false, false},
			{time.Second, running(""), true, true},
			{ExitGrace + time.Second, gone, false, false},
		}},
		{"unknown between gone keeps the grace clock", []step{
			{0, gone, false, false},
			{time.Second, unknown, false, false},
			{ExitGrace, gone, false, true},
		}},
		{"pid reused by another process", []step{
			{0, running("10"), true, true},
			{time.Second, running("99"), false, false},
			{time.Second + ExitGrace, running("99"), false, true},
		}},
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &Liveness{}
			for i, s := range tc.steps {
				alive, known := l.judge(s.obs.stamp, s.obs.state, base.Add(s.at))
				if alive != s.alive || known != s.known {
					t.Fatalf("step %d (%v at %v): Alive = %v, %v; want %v, %v", i, s.obs.state, s.at, alive, known, s.alive, s.known)
				}
			}
		})
	}
}
