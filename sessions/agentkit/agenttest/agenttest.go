// Package agenttest holds what the agent adapters' tests share: helpers that
// drive an agent process (real, scripted or a stand-in) and its decoder the
// same way whatever its protocol.
package agenttest

import (
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// Process is the part of an agent process these helpers drive.
type Process interface {
	PID() int
	Alive() (alive, known bool)
}

// KillReadsDead checks that p, mid-turn, reads as alive; SIGKILLs the agent
// alone (its group and its tools left running, and not reaped); and waits
// until p reads as known dead, failing t if that takes longer than the exit
// grace and 30 s more.
func KillReadsDead(t testing.TB, p Process) {
	t.Helper()
	if alive, known := p.Alive(); !alive || !known {
		t.Fatalf("mid-turn: Alive = %v, %v; want alive", alive, known)
	}
	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	limit := time.After(agentkit.ExitGrace + 30*time.Second)
	for alive, known := p.Alive(); alive || !known; alive, known = p.Alive() {
		select {
		case <-poll.C:
		case <-limit:
			t.Fatalf("killed mid-turn: Alive = %v, %v; want known dead", alive, known)
		}
	}
}

// Serve runs start (a fake API package's StartRefusingProxy, say), fails t
// if it fails, closes what it started when t ends, and returns its URL.
func Serve(t testing.TB, start func() (url string, closeFn func(), err error)) string {
	t.Helper()
	url, closeFn, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	return url
}
