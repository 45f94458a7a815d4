package supervisor

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// witnessSource is a terminal source that finds no terminal session but
// keeps its agent's record of sessions (sessions.TurnWitness), as
// claudeterm.Source does with Claude's transcripts.
type witnessSource struct {
	name string

	mu    sync.Mutex
	ended time.Time // zero: the record says the turn goes on
	asked []string  // cwd + " " + session id, per read
}

func (w *witnessSource) Name() string           { return w.name }
func (w *witnessSource) DisplayName() string    { return w.name }
func (w *witnessSource) DefaultCommand() string { return w.name }
func (w *witnessSource) InstallHint() string    { return "" }
func (w *witnessSource) Watch(context.Context) (<-chan []sessions.ExternalSession, error) {
	return nil, errors.New("this test's source finds no terminal session")
}
func (w *witnessSource) Observe(context.Context, sessions.ExternalSession) (<-chan sessions.Event, error) {
	return nil, errors.New("not observed")
}
func (w *witnessSource) Alive(sessions.ExternalSession) (bool, bool) { return false, false }
func (w *witnessSource) CanNudge(sessions.ExternalSession) bool      { return false }
func (w *witnessSource) Nudge(context.Context, sessions.ExternalSession, string, bool) error {
	return errors.New("no way in")
}

func (w *witnessSource) TurnEnded(cwd, id string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked = append(w.asked, cwd+" "+id)
	return w.ended, !w.ended.IsZero()
}

func (w *witnessSource) reads() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.asked...)
}

// Issue 20 item 8: a managed Claude turn whose tools finished and whose
// result line never came is completed from the agent's transcript a minute
// after it went quiet, instead of going Suspect at 10 minutes and being
// interrupted and nudged at 150. The record is read only once the turn has
// been quiet that long with nothing open.
func TestLoopLostResultCompletedFromTheTranscript(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil) // the defaults: 15 s tick, 10 / 150 min
		defer h.stop()
		w := &witnessSource{name: "claude"}
		h.rt.external = []ExternalSource{w}
		id, p := h.launchRunning()

		h.until(7 * time.Second)
		h.emit(p, sessions.Event{Kind: sessions.EvToolStarted, CallID: "t1", Name: "Bash"})
		h.until(9 * time.Second)
		h.emit(p, sessions.Event{Kind: sessions.EvToolFinished, CallID: "t1", Name: "Bash"})
		h.until(10 * time.Second)
		h.emit(p, sessions.Event{Kind: sessions.EvActivity, Detail: "assistant message"}) // the final answer; then no result
		w.mu.Lock()
		w.ended = h.at(10 * time.Second)
		w.mu.Unlock()

		// Quiet since 0:10: the 1:00 tick does not read the record yet.
		h.until(time.Minute + 7*time.Second)
		if got := w.reads(); len(got) != 0 {
			t.Fatalf("the transcript was read before the turn was quiet a minute: %q", got)
		}
		h.wantState(id, sessions.Working, sessions.NoWait)

		// The 1:15 tick reads it and completes the turn.
		h.until(time.Minute + 16*time.Second)
		if got := w.reads(); len(got) != 1 || got[0] != os.TempDir()+" "+agentSessionID {
			t.Fatalf("transcript reads %q, want one for %s in %s", got, agentSessionID, os.TempDir())
		}
		s := h.wantState(id, sessions.WaitingOnUser, sessions.WaitReview)
		if s.InTurn || !strings.Contains(s.Evidence, "turn 1 completed at 00:00:10 by the agent's transcript; its result never arrived on the stream") {
			t.Fatalf("in turn %v, evidence %q", s.InTurn, s.Evidence)
		}

		// Hours later nothing was sent, and the record is not read again.
		h.until(3 * time.Hour)
		h.wantState(id, sessions.WaitingOnUser, sessions.WaitReview)
		if got := p.received(); len(got) != 1 {
			t.Fatalf("the agent received %+v, want only the first prompt", got)
		}
		if got := w.reads(); len(got) != 1 {
			t.Fatalf("transcript reads %q after the turn ended", got)
		}
		h.wantEscalations(0)
		h.wantKinds(id, afterLaunch(core.TimelineStateChanged)...)
	})
}

// A quiet turn whose record says it goes on (a model thinking for a long
// time) is left to the stall rules: Suspect at 10 minutes, as before.
func TestLoopLostResultNotWhileTheTranscriptSaysItGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		w := &witnessSource{name: "claude"}
		h.rt.external = []ExternalSource{w}
		id, _ := h.launchRunning()
		h.until(10*time.Minute + 7*time.Second)
		h.wantState(id, sessions.Suspect, sessions.NoWait)
		if n := len(w.reads()); n == 0 {
			t.Fatal("the transcript was never read")
		}
	})
}
