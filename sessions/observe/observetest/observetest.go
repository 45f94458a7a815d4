// Package observetest is what the tests of every terminal-session source
// share: a fake process whose liveness the test sets, the fake process
// table and pid probe over it, stepping an observer by hand and waiting
// for what it sends, writing a session's file as the agent would, and
// reading a captured file's lines.
package observetest

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Process is a fake agent process of type P (the agent's own Proc) that
// the test keeps alive or kills: the process table and the pid probe a
// source under test is given answer from it. Use NewProcess.
type Process[P any] struct {
	// Proc is the process as the table lists it; a test may change it
	// between looks (a lock taken, a file opened).
	Proc P
	// PID, Started and Cwd identify it to the probe and to the source.
	PID     int
	Started time.Time
	Cwd     string
	alive   atomic.Bool
}

// NewProcess is a live fake process p with this pid, start and cwd.
func NewProcess[P any](p P, pid int, started time.Time, cwd string) *Process[P] {
	f := &Process[P]{Proc: p, PID: pid, Started: started, Cwd: cwd}
	f.alive.Store(true)
	return f
}

// Kill makes the process gone: the table no longer lists it and the probe
// says so.
func (f *Process[P]) Kill() { f.alive.Store(false) }

// Alive tells whether the test keeps the process alive.
func (f *Process[P]) Alive() bool { return f.alive.Load() }

// Table lists the process while it lives, with others (another home's
// processes, which the source must never take for its own).
func (f *Process[P]) Table(others ...P) func() ([]P, error) {
	return func() ([]P, error) {
		if !f.Alive() {
			return nil, nil
		}
		return append([]P{f.Proc}, others...), nil
	}
}

// Probe is the pid probe: alive while the test keeps this very process
// (pid and start) alive, and always known.
func (f *Process[P]) Probe(pid int, started time.Time) (alive, known bool) {
	return f.Alive() && pid == f.PID && started.Equal(f.Started), true
}

// ES is the process as a process-table source's Watch lists it.
func (f *Process[P]) ES() sessions.ExternalSession {
	return sessions.ExternalSession{Key: observe.Key(f.PID, f.Started), PID: f.PID, Cwd: f.Cwd, StartedAt: f.Started}
}

// Source is a process-table source's common half over the fake process
// (its table, with others, and its probe).
func Source[P, F any](f *Process[P], others ...P) observe.ProcSource[P, F] {
	return observe.ProcSource[P, F]{Procs: f.Table(others...), Probe: f.Probe}
}

// World is a process-table source under test: one fake process and an
// observer O of it stepped by hand. Each step forgets the source's last
// scan first (the scan throttle is for the loop).
type World[P any, O interface {
	Step() ([]sessions.Event, bool)
}] struct {
	*Process[P]
	T testing.TB
	// Rescan forgets the source's last scan; New starts an observer as
	// the source's Observe does, without its loop.
	Rescan func()
	New    func(sessions.ExternalSession) O
	// O is the observer Observe started.
	O O
}

// Observe starts the observer.
func (w *World[P, O]) Observe() { w.O = w.New(w.ES()) }

// Step is one look, after a fresh scan.
func (w *World[P, O]) Step() ([]sessions.Event, bool) {
	w.Rescan()
	return w.O.Step()
}

// Observed steps once and returns the one EvObserved it must send.
func (w *World[P, O]) Observed() sessions.Event {
	w.T.Helper()
	return Observed(w.T, w.Step)
}

// Quiet steps once and fails the test when anything is sent.
func (w *World[P, O]) Quiet() {
	w.T.Helper()
	Quiet(w.T, w.Step)
}

// Step is one look of an observer: the events it sends and whether the
// session ended.
type Step func() ([]sessions.Event, bool)

// Observed steps once and returns the one EvObserved it must send (the
// test fails otherwise); usage reports may come beside it (what the file
// says was spent, checked by the usage tests).
func Observed(t testing.TB, step Step) sessions.Event {
	t.Helper()
	all, done := step()
	evs := slices.DeleteFunc(all, func(e sessions.Event) bool { return e.Kind == sessions.EvMetrics && e.Usage != nil })
	if done || len(evs) != 1 || evs[0].Kind != sessions.EvObserved {
		t.Fatalf("want one observation, got %+v (done %v)", evs, done)
	}
	return evs[0]
}

// UsageOf is the first usage report among evs (nil when none).
func UsageOf(evs []sessions.Event) *sessions.UsageReport {
	for _, e := range evs {
		if e.Kind == sessions.EvMetrics && e.Usage != nil {
			return e.Usage
		}
	}
	return nil
}

// Quiet steps once and fails the test when anything is sent: nothing
// changed.
func Quiet(t testing.TB, step Step) {
	t.Helper()
	if evs, done := step(); len(evs) != 0 || done {
		for _, e := range evs {
			if e.Observed != nil {
				t.Logf("observed %+v", *e.Observed)
			}
		}
		t.Fatalf("nothing changed, yet %+v (done %v)", evs, done)
	}
}

// ListedUntilGone checks a source's Watch in a synctest bubble: its first
// list is the one session want (key, pid, cwd, agent session id), and once
// kill ends the process a rescan within wait sends an empty list.
func ListedUntilGone(t *testing.T, ch <-chan []sessions.ExternalSession, want sessions.ExternalSession, kill func(), wait time.Duration) {
	t.Helper()
	list := <-ch
	if len(list) != 1 || list[0].PID != want.PID || list[0].AgentSessionID != want.AgentSessionID || list[0].Key != want.Key || list[0].Cwd != want.Cwd {
		t.Fatalf("first list: %+v, want %+v", list, want)
	}
	kill()
	time.Sleep(wait)
	synctest.Wait()
	select {
	case list = <-ch:
	default:
		t.Fatal("no new list after the process exited and a rescan")
	}
	if len(list) != 0 {
		t.Fatalf("after the exit: %+v", list)
	}
}

// Watch starts a source's Watch for the length of the test (its context
// ends with it).
func Watch(t testing.TB, src interface {
	Watch(context.Context) (<-chan []sessions.ExternalSession, error)
}) <-chan []sessions.ExternalSession {
	t.Helper()
	ch, err := src.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// Recv waits (5 s at most) for the next value of ch; what names it in the
// failure.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed", what)
		}
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s within 5 s", what)
	}
	panic("unreachable")
}

// WaitObserved reads an observer's events until one carries the wanted
// state, and returns it.
func WaitObserved(t testing.TB, ch <-chan sessions.Event, want sessions.State) sessions.Event {
	t.Helper()
	return WaitObservedThat(t, ch, want.String(), func(o *sessions.ObservedState) bool { return o.State == want })
}

// WaitObservedThat reads an observer's events until one's observation
// satisfies ok (what names it in the failure), 10 s at most: an observer
// may say the same thing again before it says the next (a poll, a late
// file event), so the event after a change need not be the change.
func WaitObservedThat(t testing.TB, ch <-chan sessions.Event, what string, ok func(*sessions.ObservedState) bool) sessions.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, open := <-ch:
			if !open {
				t.Fatalf("waiting for %s: the events ended", what)
			}
			if ev.Kind == sessions.EvObserved && ok(ev.Observed) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no observation of %s within 10 s", what)
		}
	}
}

// Observe starts a source's Observe loop on es for the length of the test.
func Observe(t testing.TB, src interface {
	Observe(context.Context, sessions.ExternalSession) (<-chan sessions.Event, error)
}, es sessions.ExternalSession) <-chan sessions.Event {
	t.Helper()
	ch, err := src.Observe(t.Context(), es)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
