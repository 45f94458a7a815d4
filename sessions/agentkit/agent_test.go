package agentkit

import (
	"context"
	"errors"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// testProcess is an adapter's process type: a pointer, so a failed start's
// nil is a typed nil.
type testProcess struct{ sessions.Process }

var errTestStart = errors.New("test start failed")

type testAdapter struct{}

// The adapter's Adapter is what Agent's methods call (staticcheck does not
// see a use through a type argument).
var _ Definer[*testProcess] = testAdapter{}

func (testAdapter) Adapter() Adapter[*testProcess] {
	return Adapter[*testProcess]{
		Info: testDescriber{}.Info(),
		Start: func(o sessions.StartOptions) (*testProcess, error) {
			if o.Cwd == "" {
				return nil, errTestStart
			}
			return &testProcess{}, nil
		},
		ReapOrphan: func(pid int, stamp string) (bool, error) { return pid == 7 && stamp == "s", nil },
	}
}

// An Agent that embeds agentkit.Agent answers the registry from its
// Adapter: its names, its start (a failed one is a nil Process, not a
// typed nil) and its orphan reaping.
func TestAgent(t *testing.T) {
	var a interface {
		sessions.ManagedAgent
		sessions.OrphanReaper
	} = struct {
		Agent[testAdapter, *testProcess]
	}{}
	if a.Name() != "t" || a.DisplayName() != "Test Agent" || a.DefaultCommand() != "no-such-agent-cli" || a.InstallHint() != "npm i t" {
		t.Errorf("AgentInfo = %q %q %q %q", a.Name(), a.DisplayName(), a.DefaultCommand(), a.InstallHint())
	}
	if p, err := a.Start(context.Background(), sessions.StartOptions{}); p != nil || !errors.Is(err, errTestStart) {
		t.Errorf("failed Start = %v, %v; want a nil Process and its error", p, err)
	}
	if p, err := a.Start(context.Background(), sessions.StartOptions{Cwd: "/"}); err != nil || p == nil {
		t.Errorf("Start = %v, %v; want the process", p, err)
	}
	if ok, err := a.ReapOrphan(7, "s"); !ok || err != nil {
		t.Errorf("ReapOrphan(7) = %v, %v; want the adapter's answer", ok, err)
	}
	if ok, err := a.ReapOrphan(8, "s"); ok || err != nil {
		t.Errorf("ReapOrphan(8) = %v, %v; want the adapter's answer", ok, err)
	}
}
