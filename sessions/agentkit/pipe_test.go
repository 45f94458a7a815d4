package agentkit

import (
	"errors"
	"io"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/pipeio"
)

// A prompt waits at the gate for the conversation to open: an opened gate
// lets it through at once, one never opened fails it after the bound with
// a deadline error that names the agent and what it did not open.
func TestGateWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		open    time.Duration // when the gate opens; <0: never
		wantErr string
		waited  time.Duration
	}{
		{name: "opened before", open: 0, waited: 0},
		{name: "opened while waiting", open: 3 * time.Second, waited: 3 * time.Second},
		{name: "never opened", open: -1, waited: 10 * time.Second,
			wantErr: "codex opened no thread within 10s: i/o timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := NewGate()
				if tc.open == 0 {
					g.Open()
				} else if tc.open > 0 {
					time.AfterFunc(tc.open, g.Open)
				}
				start := time.Now()
				err := g.Wait(10*time.Second, "codex", "thread")
				if got := time.Since(start); got != tc.waited {
					t.Errorf("waited %s, want %s", got, tc.waited)
				}
				if tc.wantErr == "" {
					if err != nil {
						t.Fatalf("Wait: %v", err)
					}
					g.Open() // a second Open does nothing
					return
				}
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("Wait = %v, want %q wrapping os.ErrDeadlineExceeded", err, tc.wantErr)
				}
			})
		})
	}
}

// Once the gate is passed, the conversation's id, or why there is none: the
// agent's own reason, or the process's end.
func TestOpened(t *testing.T) {
	for _, tc := range []struct {
		id, failed string
		want       string
		wantErr    string
	}{
		{id: "t-1", want: "t-1"},
		{id: "t-1", failed: "ignored once an id is known", want: "t-1"},
		{failed: "model not found", wantErr: "gemini could not open the session: model not found"},
		{wantErr: "gemini could not open the session: the process ended"},
	} {
		got, err := Opened("gemini", "session", tc.id, tc.failed)
		if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
			t.Errorf("Opened(%q, %q) = %q, %v; want %q, %q", tc.id, tc.failed, got, err, tc.want, tc.wantErr)
		}
	}
}

// Gate.Opened is the prompt's way to the conversation: the wait at the
// gate, then the id read once it is passed (never before: it is not known
// yet), or why there is none.
func TestGateOpened(t *testing.T) {
	for _, tc := range []struct {
		name       string
		open       bool // the gate opens after a second
		id, failed string
		want       string
		wantErr    string
	}{
		{name: "opened", open: true, id: "t-1", want: "t-1"},
		{name: "failed to open", open: true, failed: "model not found", wantErr: "codex could not open the thread: model not found"},
		{name: "never opened", wantErr: "codex opened no thread within 10s: i/o timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := NewGate()
				if tc.open {
					time.AfterFunc(time.Second, g.Open)
				}
				read := false
				got, err := g.Opened(10*time.Second, "codex", "thread", func() (string, string) {
					if !tc.open {
						t.Error("the id was read at a gate never opened")
					}
					read = true
					return tc.id, tc.failed
				})
				if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && err.Error() != tc.wantErr) {
					t.Errorf("Opened = %q, %v; want %q, %q", got, err, tc.want, tc.wantErr)
				}
				if read != tc.open {
					t.Errorf("the id read: %t, want %t", read, tc.open)
				}
			})
		})
	}
}

// The pipe's events are what was emitted, in order, until CloseEvents; an
// event emitted after it (a late Compact) is dropped instead of panicking on
// the closed channel. Request ids count from 1; the counters are the
// decoder's.
func TestPipeEventsIDsAndCounters(t *testing.T) {
	stats := Counters{Lines: 7}
	p := NewPipe(&Child{}, func() Counters { return stats })
	p.Emit(sessions.Event{Kind: sessions.EvSessionInit})
	p.Emit(sessions.Event{Kind: sessions.EvTurnCompleted})
	p.CloseEvents()
	p.Emit(sessions.Event{Kind: sessions.EvTurnFailed})
	var got []sessions.EventKind
	for ev := range p.Events() {
		got = append(got, ev.Kind)
	}
	if len(got) != 2 || got[0] != sessions.EvSessionInit || got[1] != sessions.EvTurnCompleted {
		t.Errorf("events %v, want [SessionInit TurnCompleted]", got)
	}
	if a, b := p.NextID(), p.NextID(); a != 1 || b != 2 {
		t.Errorf("ids %d, %d; want 1, 2", a, b)
	}
	stats.Malformed = 2
	if p.Stats() != stats || p.SkippedLines() != int(stats.Skipped()) {
		t.Errorf("Stats %+v, SkippedLines %d; want the decoder's %+v", p.Stats(), p.SkippedLines(), stats)
	}
}

// Pump writes each line's reply to stdin (as it is: a reply is a whole line), emits its events in order and
// opens Ready at the session-init event (a prompt waiting for the
// conversation goes on then, not at the end of the stream), hands every
// line to after, and at the end of stdout closes Events.
func TestPump(t *testing.T) {
	type line struct {
		events []sessions.Event
		reply  string
	}
	lines := []line{
		{reply: `{"id":1,"error":"not served"}`},
		{events: []sessions.Event{{Kind: sessions.EvSessionInit, AgentSessionID: "s-1"}}},
		{events: []sessions.Event{{Kind: sessions.EvTurnStarted}, {Kind: sessions.EvTurnCompleted}}, reply: `{"id":2}`},
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := NewPipe(&Child{Input: pipeio.NewInput(w, time.Second, "test")}, func() Counters { return Counters{} })
	i := 0
	next := func() (line, error) {
		if i == len(lines) {
			return line{}, io.EOF
		}
		i++
		return lines[i-1], nil
	}
	var after []int
	readyAt := -1
	go Pump(p, next, func(l line) ([]sessions.Event, []byte) {
		if l.reply == "" {
			return l.events, nil
		}
		return l.events, []byte(l.reply)
	}, func(line) {
		after = append(after, i)
		select {
		case <-p.Ready.ch:
			if readyAt < 0 {
				readyAt = i
			}
		default:
		}
	})
	var got []sessions.EventKind
	for ev := range p.Events() {
		got = append(got, ev.Kind)
	}
	want := []sessions.EventKind{sessions.EvSessionInit, sessions.EvTurnStarted, sessions.EvTurnCompleted}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if !slices.Equal(after, []int{1, 2, 3}) || readyAt != 2 {
		t.Errorf("after lines %v, Ready open after line %d; want [1 2 3], 2", after, readyAt)
	}
	_ = p.CloseInput()
	written, _ := io.ReadAll(r)
	if want := lines[0].reply + lines[2].reply; string(written) != want {
		t.Errorf("stdin got %q, want %q", written, want)
	}
}
