package sessions

import (
	"testing"
	"time"
)

// An observed session whose hook events arrive becomes Hooked, and stays
// so; a managed session is never relabelled by an observation.
func TestApplyObservedHooked(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	plain := ObservedState{State: Idle, Evidence: "nothing in flight"}
	hooked := ObservedState{State: Idle, Evidence: "nothing in flight", Hooked: true}
	cases := []struct {
		name string
		from Source
		seq  []ObservedState
		want Source
	}{
		{"files only", Observed, []ObservedState{plain, plain}, Observed},
		{"a hook event arrives", Observed, []ObservedState{plain, hooked}, Hooked},
		{"hooked stays hooked", Observed, []ObservedState{hooked, plain}, Hooked},
		{"managed stays managed", Managed, []ObservedState{hooked}, Managed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Session{ID: "x", Source: tc.from, State: Idle}
			for _, o := range tc.seq {
				s = Apply(s, Event{Kind: EvObserved, Observed: &o}, now)
			}
			if s.Source != tc.want {
				t.Fatalf("source %v, want %v", s.Source, tc.want)
			}
		})
	}
}
