package codexterm

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
)

// world is a CODEX_HOME in a temporary directory, one fake process in it
// (its liveness set by the test) and an observer stepped by hand.
type world struct {
	observetest.World[Proc, *observer]
	src *Source
}

func newWorld(t *testing.T, proc Proc) *world {
	proc.Home = t.TempDir()
	w := &world{World: observetest.World[Proc, *observer]{T: t, Process: observetest.NewProcess(proc, proc.PID, proc.Started, proc.Cwd)}}
	// Another Codex home's TUI is never this source's.
	w.src = &Source{CodexHome: proc.Home, ProcSource: observetest.Source[Proc, Rollout](w.Process,
		Proc{Proc: observe.Proc{PID: 99, Cwd: proc.Cwd, Started: proc.Started, Home: "/elsewhere/.codex"}})}
	w.Rescan, w.New = w.src.Rescan, w.src.newObserver
	return w
}

// observed steps once and returns the one EvObserved it must send.
func (w *world) observed() sessions.ObservedState {
	w.T.Helper()
	return *w.Observed().Observed
}

// path is a rollout path in the day directory of now.
func (w *world) path(id string) string {
	return filepath.Join(w.src.today(), fmt.Sprintf("rollout-%s-%s.jsonl", time.Now().Format("2006-01-02T15-04-05"), id))
}

var (
	appendTo = observetest.Append[[]byte]
	lines    = observetest.Lines
)

func metaLine(id, cwd string, at time.Time, threadSource string) []byte {
	return []byte(fmt.Sprintf(`{"timestamp":%q,"type":"session_meta","payload":{"id":%q,"timestamp":%q,"cwd":%q,"originator":"codex-tui","source":"cli","thread_source":%q}}`,
		at.Format(time.RFC3339Nano), id, at.Format(time.RFC3339Nano), cwd, threadSource))
}

var (
	started  = []byte(`{"timestamp":"2026-11-30T10:00:01Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t"}}`)
	complete = []byte(`{"timestamp":"2026-11-30T10:00:02Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t"}}`)
)

// A real TUI rollout appended line by line (as Codex writes it) is followed
// through one turn: no prompt yet, the turn, its command (a partial line
// waits for its newline), the end; then the process exits.
func TestObserveFollowsARealTurn(t *testing.T) {
	real := readLines(t, "tui_tool.jsonl")
	w := newWorld(t, Proc{Proc: observe.Proc{PID: 4242, Cwd: "/tmp/cx/w1", Started: time.Now()}})
	path := w.path("01a22e80-e47d-7172-8bd1-361677df9952")
	w.Proc.Open = []string{path} // --no-daemon: the TUI holds its rollout open
	w.Observe()
	if st := w.observed(); st.State != sessions.Idle || !strings.Contains(st.Evidence, "no prompt yet") {
		t.Fatalf("before the first prompt: %+v", st)
	}
	w.Quiet()

	idx := func(marker string) int {
		for i, l := range real {
			if bytes.Contains(l, []byte(marker)) {
				return i
			}
		}
		t.Fatalf("no %q", marker)
		return 0
	}
	ts, fc := idx(`"task_started"`), idx(`"function_call"`)
	appendTo(t, path, lines(real[:ts+1]...))
	st := w.observed()
	if st.State != sessions.Working || !st.InTurn || st.NewTurns != 1 {
		t.Fatalf("the prompt: %+v", st)
	}
	appendTo(t, path, lines(real[ts+1:fc]...))
	if st := w.observed(); st.State != sessions.Working || st.NewTurns != 0 {
		t.Fatalf("more of the turn (growth is activity): %+v", st)
	}
	half := len(real[fc]) / 2
	appendTo(t, path, real[fc][:half])
	w.Quiet() // half a line is not a record yet
	appendTo(t, path, real[fc][half:], []byte("\n"))
	if st := w.observed(); st.Tool != "exec_command" || st.State != sessions.Working {
		t.Fatalf("the command: %+v", st)
	}
	appendTo(t, path, lines(real[fc+1:]...))
	evs, _ := w.Step()
	if st := evs[0].Observed; st.State != sessions.WaitingOnUser || st.Wait != sessions.WaitReview || st.InTurn ||
		evs[0].AgentSessionID != "01a22e80-e47d-7172-8bd1-361677df9952" || st.Name != "hello [[scenario:tool]]" {
		t.Fatalf("the end: %+v %+v", evs[0], st)
	}
	// The thread's running total from its last token_count, under the
	// turn's model, counted by thread as a managed session counts it.
	want := sessions.UsageReport{Model: "gpt-fake", Tokens: sessions.Tokens{Input: 200, Output: 40}, Mode: sessions.UsageCumulative,
		Counter: "01a22e80-e47d-7172-8bd1-361677df9952"}
	if u := observetest.UsageOf(evs); u == nil || *u != want {
		t.Fatalf("usage %+v, want %+v", u, want)
	}
	w.Kill()
	evs, done := w.Step()
	if !done || len(evs) != 2 || evs[1].Kind != sessions.EvSessionEnded || evs[0].Observed.State != sessions.Idle {
		t.Fatalf("the exit: %+v done %v", evs, done)
	}
}

// A rollout found complete when following begins is the past: its turns
// are not counted again, and one still in flight counts once.
func TestObserveHistoryIsNotNews(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content []byte
		state   sessions.State
		turns   int
	}{
		{"ended", lines(started, complete, started, complete), sessions.WaitingOnUser, 0},
		{"in flight", lines(started, complete, started), sessions.Working, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, Proc{Proc: observe.Proc{PID: 7, Cwd: "/w", Started: time.Now().Add(-time.Minute)}})
			appendTo(t, w.path("h"), lines(metaLine("h", "/w", time.Now(), "user")), tc.content)
			w.Observe()
			st := w.observed()
			if st.State != tc.state || st.NewTurns != tc.turns {
				t.Fatalf("got %+v", st)
			}
		})
	}
}

// Truncation starts over from the top; a rollout re-created under a new
// thread (after the trust prompt, or /new) is followed instead, while a
// subagent's newer rollout in the same directory never is.
func TestObserveTruncatedRecreatedAndSubagent(t *testing.T) {
	w := newWorld(t, Proc{Proc: observe.Proc{PID: 7, Cwd: "/w", Started: time.Now().Add(-time.Minute)}})
	first := w.path("first")
	appendTo(t, first, lines(metaLine("first", "/w", time.Now().Add(-50*time.Second), "user"), started, complete))
	w.Observe()
	if st := w.observed(); st.State != sessions.WaitingOnUser {
		t.Fatalf("start: %+v", st)
	}
	// Truncated, then a new turn: its start is news.
	if err := os.Truncate(first, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, first, lines(metaLine("first", "/w", time.Now().Add(-50*time.Second), "user"), started))
	if st := w.observed(); st.State != sessions.Working || st.NewTurns != 1 {
		t.Fatalf("after the truncation: %+v", st)
	}
	// A subagent writes its own, newer rollout: not the user's thread.
	appendTo(t, w.path("sub"), lines(metaLine("sub", "/w", time.Now(), "subagent"), started, complete))
	w.Quiet()
	// The thread is re-created: the newer user rollout is followed.
	second := w.path("second")
	appendTo(t, second, lines(metaLine("second", "/w", time.Now(), "user"), started, complete))
	evs, _ := w.Step()
	if len(evs) != 1 || evs[0].AgentSessionID != "second" || evs[0].Observed.State != sessions.WaitingOnUser || evs[0].Observed.NewTurns != 1 {
		t.Fatalf("after the re-creation: %+v", evs)
	}
}

// A line longer than the tailer's limit (1 MiB) is skipped by measured
// length; the lines around it still count.
func TestObserveSkipsAHugeLine(t *testing.T) {
	w := newWorld(t, Proc{Proc: observe.Proc{PID: 7, Cwd: "/w", Started: time.Now().Add(-time.Minute)}})
	path := w.path("big")
	appendTo(t, path, lines(metaLine("big", "/w", time.Now(), "user"), started))
	w.Observe()
	if st := w.observed(); st.State != sessions.Working {
		t.Fatalf("start: %+v", st)
	}
	huge := fmt.Sprintf(`{"type":"compacted","payload":{"message":%q}}`, strings.Repeat("x", 3<<20))
	appendTo(t, path, []byte(huge+"\n"), lines(complete))
	if st := w.observed(); st.State != sessions.WaitingOnUser {
		t.Fatalf("after the huge line: %+v", st)
	}
	if w.O.File().Tail().Skipped != 1 {
		t.Errorf("skipped %d lines, want 1", w.O.File().Tail().Skipped)
	}
}

// A failure read from the rollout carries its class and, for a usage
// limit, the reset the rate limits gave.
func TestObserveFailureOnRealRollout(t *testing.T) {
	real, err := os.ReadFile(filepath.Join("testdata", "exec_usage_limit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, Proc{Proc: observe.Proc{PID: 7, Cwd: "/w", Started: time.Now()}})
	path := w.path("u")
	w.Proc.Open = []string{path}
	w.Observe()
	w.observed()
	appendTo(t, path, real)
	st := w.observed()
	if st.State != sessions.Errored || st.Failure.Kind != sessions.RateLimit || st.Failure.RetryAt.Unix() != 1796076633 || st.NewTurns != 1 {
		t.Fatalf("got %+v", st)
	}
}

// Codex has no inbox: the source says so and Nudge fails.
func TestNoNudge(t *testing.T) {
	s := &Source{}
	if s.CanNudge(sessions.ExternalSession{PID: 1}) {
		t.Fatal("CanNudge")
	}
	if err := s.Nudge(t.Context(), sessions.ExternalSession{PID: 1}, "x", false); err != ErrNoInbox {
		t.Fatalf("Nudge: %v", err)
	}
	if s.Name() != "codex" {
		t.Fatalf("Name %q: the managed agent's name, so resume launches it", s.Name())
	}
}

// Watch lists this home's interactive processes with the thread each
// writes, and lists again when one exits (the rescan cadence, in a
// synctest bubble: no real waiting).
func TestWatchListsAndRescans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, Proc{Proc: observe.Proc{PID: 7, Cwd: "/w", Started: time.Now().Add(-time.Minute)}})
		w.src.Poll = 3 * time.Second
		appendTo(t, w.path("th"), lines(metaLine("th", "/w", time.Now(), "user"), started))
		ch := observetest.Watch(t, w.src)
		observetest.ListedUntilGone(t, ch, sessions.ExternalSession{Key: w.ES().Key, PID: 7, Cwd: "/w", AgentSessionID: "th"}, w.Kill, 4*time.Second)
	})
}

// A rollout that appears after Observe began is followed by the loop
// while the wake-up asks which directories to watch: no data race.
func TestObserveLoopFollowsALaterRollout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, Proc{Proc: observe.Proc{PID: 7, Cwd: "/w", Started: time.Now().Add(-time.Minute)}})
		w.src.Poll = time.Second
		ch := observetest.Observe(t, w.src, w.ES())
		if ev := <-ch; ev.Observed == nil || ev.Observed.State != sessions.Idle {
			t.Fatalf("%+v", ev)
		}
		appendTo(t, w.path("later"), lines(metaLine("later", "/w", time.Now(), "user"), started))
		if ev := <-ch; ev.Observed == nil || ev.Observed.State != sessions.Working || ev.AgentSessionID != "later" {
			t.Fatalf("%+v", ev)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		w.Kill()
		for range ch {
		}
	})
}

// usageOf is the usage report among evs (nil: none).

// A rollout read again from its start (the app restarted: a new observer)
// reports the same running total, which the session counts once.
func TestObservedUsageCountsOnceAcrossObservers(t *testing.T) {
	real := readLines(t, "tui_tool.jsonl")
	w := newWorld(t, Proc{Proc: observe.Proc{PID: 4242, Cwd: "/tmp/cx/w1", Started: time.Now()}})
	path := w.path("01a22e80-e47d-7172-8bd1-361677df9952")
	w.Proc.Open = []string{path}
	appendTo(t, path, lines(real...))
	var s sessions.Session
	for range 2 {
		w.Observe()
		evs, _ := w.Step()
		if observetest.UsageOf(evs) == nil {
			t.Fatalf("no usage from %d events", len(evs))
		}
		for _, e := range evs {
			s = sessions.Apply(s, e, time.Now())
		}
	}
	if got := s.Usage.Total["gpt-fake"]; got != (sessions.Tokens{Input: 200, Output: 40}) {
		t.Errorf("counted %+v over two reads", got)
	}
}
