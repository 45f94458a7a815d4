package supervisor

import (
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// livenessRecorder is a nudgeRecorder whose process probe says alive.
type livenessRecorder struct {
	nudgeRecorder
	alive bool
}

func (f *livenessRecorder) Alive(sessions.ExternalSession) (alive, known bool) { return f.alive, true }

// The tick's probe of a terminal session tells Reconcile whether its
// source can reach it at all (Codex's cannot), so recovery escalates
// instead of sending what could never arrive; a dead session is the
// liveness rule's, whatever its source offers.
func TestProbeExternalUnreachable(t *testing.T) {
	for _, tc := range []struct {
		alive, canNudge, want bool
	}{
		{true, true, false},
		{true, false, true},
		{false, false, false},
	} {
		p := probeExternal(&extHandle{src: &livenessRecorder{nudgeRecorder: nudgeRecorder{canNudge: tc.canNudge}, alive: tc.alive}})
		if p.Unreachable != tc.want {
			t.Errorf("alive %v, CanNudge %v: Unreachable %v, want %v", tc.alive, tc.canNudge, p.Unreachable, tc.want)
		}
	}
}
