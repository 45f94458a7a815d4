// Package agenttest holds what the agent adapters' tests share: helpers that
// drive an agent process (real, scripted or a stand-in) and its decoder the
// same way whatever its protocol.
package agenttest

import (
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
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

// ExitsAtEndOfInput closes p's input, reads its stream to the end and
// checks that it then exits 0 by itself, having skipped no line.
func ExitsAtEndOfInput(t testing.TB, p sessions.Process) {
	t.Helper()
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	for range p.Events() {
	}
	if code, sig, err := p.Wait(); code != 0 || sig != "" || err != nil {
		t.Errorf("exit %d %q %v after closing its input, want a clean exit", code, sig, err)
	}
	if n := p.SkippedLines(); n != 0 {
		t.Errorf("%d lines skipped", n)
	}
}

// Until reads p's events until one satisfies cond (what it waits for, as
// the failure says) and returns all it read, failing t when the stream
// ends first or nothing matches within a minute.
func Until(t testing.TB, p sessions.Process, what string, cond func(sessions.Event) bool) []sessions.Event {
	t.Helper()
	return UntilWithin(t, p, what, time.Minute, cond)
}

// UntilWithin is Until with its own time limit, for an agent whose turn
// takes longer than a minute on a loaded machine.
func UntilWithin(t testing.TB, p sessions.Process, what string, limit time.Duration, cond func(sessions.Event) bool) []sessions.Event {
	t.Helper()
	seen, ended := read(t, p, what, limit, cond)
	if ended {
		t.Fatalf("the stream ended before %s; events %v\nstderr: %s", what, Kinds(seen), p.StderrTail())
	}
	return seen
}

// Collect reads p's events until one satisfies stop (nil: none does) or the
// stream ends, and returns all it read, failing t when neither happens
// within limit.
func Collect(t testing.TB, p sessions.Process, limit time.Duration, stop func(sessions.Event) bool) []sessions.Event {
	t.Helper()
	out, _ := read(t, p, "end of the stream", limit, stop)
	return out
}

// read reads p's events until one satisfies stop (nil: none does) or the
// stream ends (ended), failing t, with what it waited for, when neither
// happens within limit.
func read(t testing.TB, p sessions.Process, what string, limit time.Duration, stop func(sessions.Event) bool) (events []sessions.Event, ended bool) {
	t.Helper()
	timeout := time.After(limit)
	for {
		select {
		case ev, ok := <-p.Events():
			if !ok {
				return events, true
			}
			if events = append(events, ev); stop != nil && stop(ev) {
				return events, false
			}
		case <-timeout:
			t.Fatalf("no %s within %s; events %v\nstderr: %s", what, limit, Kinds(events), p.StderrTail())
		}
	}
}

// Is is the condition of an event of kind k.
func Is(k sessions.EventKind) func(sessions.Event) bool {
	return func(e sessions.Event) bool { return e.Kind == k }
}

// Kinds are the kinds of events, for messages and comparisons.
func Kinds(events []sessions.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Kind.String()
	}
	return out
}
