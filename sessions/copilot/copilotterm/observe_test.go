package copilotterm

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/copilot"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
)

const sid = "2b062c57-4ad6-480f-992f-e6d7fab0f061"

// world is a COPILOT_HOME in a temporary directory with one session
// directory, one fake TUI process holding it (its liveness set by the
// test) and an observer stepped by hand.
type world struct {
	observetest.World[Proc, *observer]
	src *Source
	dir string
}

func newWorld(t *testing.T) *world {
	home := t.TempDir()
	dir := filepath.Join(home, "session-state", sid)
	proc := Proc{Proc: observe.Proc{PID: 7, Cwd: "/w", Started: time.Now().Add(-time.Minute), Home: home}, Held: []string{dir}}
	w := &world{World: observetest.World[Proc, *observer]{T: t, Process: observetest.NewProcess(proc, proc.PID, proc.Started, proc.Cwd)}, dir: dir}
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "workspace.yaml"), []byte("id: "+sid+"\ncwd: /w\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Another Copilot home's TUI is never this source's.
	w.src = &Source{CopilotHome: home, ProcSource: observetest.Source[Proc, Workspace](w.Process,
		Proc{Proc: observe.Proc{PID: 99, Cwd: "/w", Started: proc.Started, Home: "/elsewhere/.copilot"}})}
	w.Rescan, w.New = w.src.Rescan, w.src.newObserver
	return w
}

// observed steps once and returns the one EvObserved it must send, which
// names the session.
func (w *world) observed() sessions.ObservedState {
	w.T.Helper()
	ev := w.Observed()
	if ev.AgentSessionID != sid {
		w.T.Fatalf("agent session id %q", ev.AgentSessionID)
	}
	return *ev.Observed
}

func (w *world) events() string { return filepath.Join(w.dir, "events.jsonl") }

func (w *world) append(data ...[]byte) {
	w.T.Helper()
	observetest.Append(w.T, w.events(), data...)
}

// upTo is the real file's lines up to and including the first of typ
// (after skip lines), each with its newline, and the rest.
func upTo(t *testing.T, ls [][]byte, typ string) (head []byte, rest [][]byte) {
	t.Helper()
	for i, l := range ls {
		if bytes.Contains(l, []byte(`"type":"`+typ+`"`)) {
			return lines(ls[:i+1]...), ls[i+1:]
		}
	}
	t.Fatalf("no %s", typ)
	return nil, nil
}

var lines = observetest.Lines

// A real turn (testdata/tui_tool.jsonl: a command approved in the
// terminal) written in pieces as the TUI wrote it: before the first prompt
// the session is idle, then working (one new turn), waiting for the
// approval, running the command, and waiting for review; a step with
// nothing new sends nothing.
func TestObserveFollowsARealTurn(t *testing.T) {
	w := newWorld(t)
	w.Observe()
	if st := w.observed(); st.State != sessions.Idle || st.InTurn || !strings.Contains(st.Evidence, "no prompt yet") {
		t.Fatalf("before the first prompt: %+v", st)
	}
	w.Quiet()
	ls := readLines(t, "tui_tool.jsonl")
	for _, step := range []struct {
		upTo  string
		state sessions.State
		wait  sessions.WaitReason
		turns int
		tool  string
	}{
		{"assistant.turn_start", sessions.Working, sessions.NoWait, 1, ""},
		{"permission.requested", sessions.WaitingOnUser, sessions.WaitPermission, 0, "command"},
		{"tool.execution_complete", sessions.Working, sessions.NoWait, 0, ""},
		{"assistant.turn_end", sessions.Working, sessions.NoWait, 0, ""}, // a round asking for tools: more to come
		{"assistant.message", sessions.Working, sessions.NoWait, 0, ""},
		{"assistant.turn_end", sessions.WaitingOnUser, sessions.WaitReview, 0, ""},
	} {
		var head []byte
		head, ls = upTo(t, ls, step.upTo)
		w.append(head)
		st := w.observed()
		if st.State != step.state || st.Wait != step.wait || st.NewTurns != step.turns || st.Tool != step.tool {
			t.Fatalf("after %s: %+v", step.upTo, st)
		}
		if st.Name != "run it [[scenario:tool]]" {
			t.Fatalf("name %q", st.Name)
		}
	}
	w.Quiet()
}

// Events already written when following begins are the past: no new turn.
func TestObserveHistoryIsNotNews(t *testing.T) {
	w := newWorld(t)
	w.append(lines(readLines(t, "tui_text.jsonl")...))
	w.Observe()
	if st := w.observed(); st.State != sessions.WaitingOnUser || st.NewTurns != 0 {
		t.Fatalf("%+v", st)
	}
	// A second prompt is news.
	w.append([]byte(`{"type":"user.message","data":{"content":"again"}}` + "\n"))
	if st := w.observed(); st.State != sessions.Working || st.NewTurns != 1 {
		t.Fatalf("%+v", st)
	}
}

// A partial last line waits for its newline; a truncated file is read
// again from the top (its turns are new); a line over the tailer's limit
// is skipped without stopping the session.
func TestObservePartialTruncatedHuge(t *testing.T) {
	w := newWorld(t)
	w.Observe()
	w.observed()
	start := lines(readLines(t, "tui_text.jsonl")[:2]...)
	w.append(start)
	w.observed() // the session's start: still idle, the file grew
	user := []byte(`{"type":"user.message","data":{"content":"half"}}` + "\n")
	w.append(user[:20])
	w.Quiet()
	w.append(user[20:])
	if st := w.observed(); st.State != sessions.Working || st.NewTurns != 1 {
		t.Fatalf("after the rest of the line: %+v", st)
	}
	// Truncated and rewritten: a finished turn, counted as new.
	if err := os.Truncate(w.events(), 0); err != nil {
		t.Fatal(err)
	}
	if st := w.observed(); st.State != sessions.Idle {
		t.Fatalf("truncated: %+v", st)
	}
	w.append(lines(readLines(t, "tui_text.jsonl")...))
	if st := w.observed(); st.State != sessions.WaitingOnUser || st.NewTurns != 1 {
		t.Fatalf("after the truncation: %+v", st)
	}
	// A 2 MB tool result on one line, then the next prompt.
	huge := append([]byte(`{"type":"tool.execution_complete","data":{"result":"`), bytes.Repeat([]byte("x"), 2<<20)...)
	huge = append(huge, []byte("\"}}\n")...)
	w.append(huge, []byte(`{"type":"user.message","data":{"content":"next"}}`+"\n"))
	if st := w.observed(); st.State != sessions.Working || st.NewTurns != 1 {
		t.Fatalf("after the huge line: %+v", st)
	}
	if w.O.File().Tail().Skipped != 1 {
		t.Fatalf("skipped %d lines", w.O.File().Tail().Skipped)
	}
}

// Killed mid-turn (testdata/tui_killed.jsonl: SIGKILL while its command
// ran): Interrupted with the evidence, then the session ends.
func TestObserveKilledMidTurn(t *testing.T) {
	w := newWorld(t)
	w.Observe()
	w.observed()
	w.append(lines(readLines(t, "tui_killed.jsonl")...))
	if st := w.observed(); st.State != sessions.Working || st.Tool != "command" {
		t.Fatalf("%+v", st)
	}
	w.Kill()
	evs, done := w.Step()
	if !done || len(evs) != 2 || evs[0].Observed == nil || evs[0].Observed.State != sessions.Interrupted ||
		!strings.Contains(evs[0].Observed.Evidence, "gone mid-turn") || evs[1].Kind != sessions.EvSessionEnded {
		t.Fatalf("%+v done %v", evs, done)
	}
}

// The TUI moved to another session (/new): the new directory is followed
// and its first prompt is a new turn.
func TestObserveFollowsANewSession(t *testing.T) {
	w := newWorld(t)
	w.append(lines(readLines(t, "tui_text.jsonl")...))
	w.Observe()
	w.observed()
	const other = "3f1e34b9-7886-48e5-b68a-f40204ea6277"
	dir := filepath.Join(w.src.StateDir(), other)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w.Proc.Held = []string{dir}
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), lines(readLines(t, "tui_401.jsonl")...), 0o600); err != nil {
		t.Fatal(err)
	}
	evs, _ := w.Step()
	if len(evs) != 1 || evs[0].AgentSessionID != other || evs[0].Observed.State != sessions.Errored || evs[0].Observed.Failure.Kind != sessions.Auth {
		t.Fatalf("%+v", evs)
	}
}

func TestNoNudge(t *testing.T) {
	w := newWorld(t)
	if w.src.CanNudge(w.ES()) {
		t.Fatal("CanNudge")
	}
	if err := w.src.Nudge(t.Context(), w.ES(), "x", false); !errors.Is(err, ErrNoInbox) {
		t.Fatal(err)
	}
	if w.src.Name() != "copilot" {
		t.Fatal(w.src.Name())
	}
}

// Watch lists the TUI with its session (and not another home's process),
// and rescans on its interval: an exited process leaves the list, and its
// directory (still on disk) is not listed (in a synctest bubble: no real
// waiting).
func TestWatchListsAndRescans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.src.Poll = 3 * time.Second
		ch := observetest.Watch(t, w.src)
		observetest.ListedUntilGone(t, ch, sessions.ExternalSession{Key: w.ES().Key, PID: 7, Cwd: "/w", AgentSessionID: sid}, w.Kill, 4*time.Second)
	})
}

// Observe's loop: it sends the first observation, and the session's end
// when the process is gone.
func TestObserveLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.src.Poll = time.Second
		ch := observetest.Observe(t, w.src, w.ES())
		if ev := <-ch; ev.Observed == nil || ev.Observed.State != sessions.Idle {
			t.Fatalf("%+v", ev)
		}
		w.Kill()
		time.Sleep(2 * time.Second)
		var last sessions.Event
		for ev := range ch {
			last = ev
		}
		if last.Kind != sessions.EvSessionEnded {
			t.Fatalf("%+v", last)
		}
	})
}

// The events file appears after following began (at the first prompt):
// a quick turn that started and ended between two looks is still a turn.
func TestObserveQuickFirstTurnIsNews(t *testing.T) {
	w := newWorld(t)
	w.Observe()
	w.observed()
	w.append(lines(readLines(t, "tui_text.jsonl")...))
	if st := w.observed(); st.State != sessions.WaitingOnUser || st.NewTurns != 1 {
		t.Fatalf("%+v", st)
	}
}

// A TUI found before its session directory is paired (Copilot creates the
// directory, then its lock and workspace.yaml) is looked at again within
// a second, not at the next poll.
func TestWatchListsAStartingTUISoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.src.Poll = time.Hour
		w.Proc.Started = time.Now()
		var paired atomic.Bool
		proc := w.Proc
		w.src.Procs = func() ([]Proc, error) {
			p := proc
			if !paired.Load() {
				p.Held = nil
			}
			return []Proc{p}, nil
		}
		if err := os.Remove(filepath.Join(w.dir, "workspace.yaml")); err != nil {
			t.Fatal(err)
		}
		ch := observetest.Watch(t, w.src)
		if list := <-ch; len(list) != 0 {
			t.Fatalf("listed before its session: %+v", list)
		}
		paired.Store(true) // its lock, at the next scan
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		select {
		case list := <-ch:
			if len(list) != 1 || list[0].AgentSessionID != sid {
				t.Fatalf("%+v", list)
			}
		default:
			t.Fatal("not listed within a second and a half")
		}
	})
}

// The model calls' tokens the file records (session.usage_record, one per
// call) are the session's usage: a running total per model, what the file
// held when found reported as backfill, a call written while watched as
// spending.
func TestObserveUsage(t *testing.T) {
	w := newWorld(t)
	ls := readLines(t, "tui_tool.jsonl")
	head, rest := upTo(t, ls, "session.usage_record")
	w.append(head)
	w.Observe()
	evs, _ := w.Step()
	want := sessions.UsageReport{Model: "gpt-4.1", Tokens: sessions.Tokens{Input: 100, Output: 20}, Mode: sessions.UsageCumulative,
		Counter: copilot.UsageCounter(sid, "gpt-4.1"), Backfill: true}
	if u := observetest.UsageOf(evs); u == nil || *u != want {
		t.Fatalf("found: usage %+v, want %+v", u, want)
	}
	w.append(lines(rest...))
	evs, _ = w.Step()
	want.Tokens, want.Backfill = sessions.Tokens{Input: 200, Output: 40}, false
	if u := observetest.UsageOf(evs); u == nil || *u != want {
		t.Fatalf("watched: usage %+v, want %+v", u, want)
	}
	// Applied, the session counts each call once.
	var s sessions.Session
	for _, u := range []sessions.UsageReport{{Model: "gpt-4.1", Tokens: sessions.Tokens{Input: 100, Output: 20}, Mode: sessions.UsageCumulative, Counter: want.Counter, Backfill: true}, want, want} {
		s = sessions.Apply(s, sessions.Event{Kind: sessions.EvMetrics, Usage: &u}, time.Now())
	}
	if got := s.Usage.Total["gpt-4.1"]; got != (sessions.Tokens{Input: 200, Output: 40}) {
		t.Errorf("the session's total %+v", got)
	}
}
