package supervisor

import "testing"

// The tick's probe of a terminal session tells Reconcile whether its
// source can reach it at all (Codex's cannot), so recovery escalates
// instead of sending what could never arrive.
func TestProbeExternalNoWayIn(t *testing.T) {
	for _, can := range []bool{true, false} {
		p := probeExternal(&extHandle{src: &nudgeRecorder{canNudge: can}})
		if p.NoWayIn == can {
			t.Errorf("CanNudge %v: NoWayIn %v", can, p.NoWayIn)
		}
	}
}
