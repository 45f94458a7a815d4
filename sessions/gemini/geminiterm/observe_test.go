package geminiterm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
)

// world is a Gemini home in a temporary directory, one fake process in it
// (its liveness set by the test) and an observer stepped by hand.
type world struct {
	observetest.World[Proc, *observer]
	src *Source
	// children is how many processes run under the fake CLI.
	children atomic.Int32
}

func newWorld(t testing.TB) *world {
	proc := Proc{Proc: observe.Proc{PID: 4242, Cwd: t.TempDir(), Started: time.Now().Add(-time.Second).Truncate(10 * time.Millisecond), Home: filepath.Join(t.TempDir(), ".gemini")}}
	w := &world{World: observetest.World[Proc, *observer]{T: t, Process: observetest.NewProcess(proc, proc.PID, proc.Started, proc.Cwd)}}
	// Another home's TUI in the same cwd is never this source's.
	w.src = &Source{GeminiHome: proc.Home, ProcSource: observetest.Source[Proc, Chat](w.Process,
		Proc{Proc: observe.Proc{PID: 99, Cwd: proc.Cwd, Started: proc.Started, Home: "/elsewhere/.gemini"}}),
		Children: func(pid int) (int, bool) { return int(w.children.Load()), pid == proc.PID },
	}
	w.Rescan, w.New = w.src.Rescan, w.src.newObserver
	return w
}

// observed steps once and returns the one EvObserved it must send.
func (w *world) observed() (sessions.ObservedState, string) {
	w.T.Helper()
	ev := w.Observed()
	return *ev.Observed, ev.AgentSessionID
}

// chatPath is a chat file of the process's project, under the slug the
// CLI registers in projects.json.
func (w *world) chatPath(id string) string {
	slug := filepath.Base(w.Proc.Cwd)
	reg := fmt.Sprintf(`{"projects":{%q:%q}}`, w.Proc.Cwd, slug)
	if err := os.MkdirAll(w.src.Home(), 0o700); err != nil {
		w.T.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.src.Home(), "projects.json"), []byte(reg), 0o600); err != nil {
		w.T.Fatal(err)
	}
	return filepath.Join(w.src.TmpDir(), slug, "chats", "session-2026-11-30T22-54-"+id[:8]+".jsonl")
}

var appendTo = observetest.Append[string]

func (w *world) meta(id string) string {
	return fmt.Sprintf(`{"sessionId":%q,"projectHash":%q,"startTime":%q,"lastUpdated":%q,"kind":"main"}`+"\n",
		id, ProjectHash(w.Proc.Cwd), time.Now().UTC().Format(time.RFC3339Nano), time.Now().UTC().Format(time.RFC3339Nano))
}

const seed = `{"$set":{"messages":[{"id":"ctx","type":"user","content":[{"text":"<session_context>\nThis is the Gemini CLI.\n</session_context>"}]}]}}` + "\n"

func prompt(id, text string) string {
	return fmt.Sprintf(`{"id":%q,"type":"user","content":[{"text":%q}]}`+"\n"+`{"$set":{"lastUpdated":"x"}}`+"\n", id, text)
}

func reply(id, text string) string {
	return fmt.Sprintf(`{"id":%q,"type":"gemini","content":%q,"model":"gemini-2.5-flash"}`+"\n", id, text)
}

const (
	sid1 = "9f6b76e4-9c7f-4c77-9b43-fd6736593a43"
	sid2 = "12345678-9c7f-4c77-9b43-fd6736593a43"
)

// A TUI followed from its start: no chat yet, the seed, a turn (a partial
// line mid-write changes nothing until it is whole), its reply, a second
// turn through a tool, then SIGKILL mid-turn.
func TestObserveOneSession(t *testing.T) {
	w := newWorld(t)
	w.Observe()
	st, id := w.observed()
	if st.State != sessions.Idle || id != "" || !strings.Contains(st.Evidence, "no prompt yet") {
		t.Fatalf("before any chat: %+v %q", st, id)
	}
	path := w.chatPath(sid1)
	appendTo(t, path, w.meta(sid1), seed)
	st, id = w.observed() // the file grew: activity
	if st.State != sessions.Idle || id != sid1 || st.NewTurns != 0 {
		t.Fatalf("the seed: %+v %q", st, id)
	}
	appendTo(t, path, prompt("p1", "fix the build\nplease"))
	st, _ = w.observed()
	if st.State != sessions.Working || !st.InTurn || st.NewTurns != 1 || st.Name != "fix the build" {
		t.Fatalf("the prompt: %+v", st)
	}
	r := reply("g1", "Fixed.")
	appendTo(t, path, r[:20])
	w.Quiet()
	appendTo(t, path, r[20:])
	st, _ = w.observed()
	if st.State != sessions.WaitingOnUser || st.Wait != sessions.WaitReview || st.InTurn || st.NewTurns != 0 {
		t.Fatalf("the reply: %+v", st)
	}
	w.Quiet()
	appendTo(t, path, prompt("p2", "run it"), reply("g2", ""))
	st, _ = w.observed()
	if st.State != sessions.Working || st.NewTurns != 1 || !strings.Contains(st.Evidence, "has not completed") {
		t.Fatalf("the pending call: %+v", st)
	}
	w.children.Store(1) // the command starts under the CLI
	if st, _ = w.observed(); st.State != sessions.Working || st.NewTurns != 0 || !strings.Contains(st.Evidence, "running a tool") {
		t.Fatalf("the command running: %+v", st)
	}
	w.Kill()
	evs, done := w.Step()
	if !done || len(evs) != 2 || evs[0].Observed.State != sessions.Interrupted || evs[1].Kind != sessions.EvSessionEnded {
		t.Fatalf("killed mid-turn: %+v %v", evs, done)
	}
}

// A chat that existed when observing began is the past: its turns are not
// counted again, except one still in flight; a file re-created under
// another name (/clear) is followed with its turns new; a file replaced in
// place (the CLI's rewrite of an unreadable file: a new inode) is read
// again from its start.
func TestObserveHistoryRecreatedAndReplaced(t *testing.T) {
	w := newWorld(t)
	path := w.chatPath(sid1)
	appendTo(t, path, w.meta(sid1), seed, prompt("p1", "one"), reply("g1", "a"), prompt("p2", "two"))
	w.Observe()
	st, id := w.observed()
	if st.State != sessions.Working || st.NewTurns != 1 || id != sid1 {
		t.Fatalf("joined mid-turn: %+v %q", st, id)
	}
	appendTo(t, path, reply("g2", "b"))
	if st, _ = w.observed(); st.State != sessions.WaitingOnUser || st.NewTurns != 0 {
		t.Fatalf("the reply: %+v", st)
	}
	// /clear: a new session, a new file (written later: the newest wins).
	later := w.chatPath(sid2)
	appendTo(t, later, w.meta(sid2), seed, prompt("q1", "three"))
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(later, future, future); err != nil {
		t.Fatal(err)
	}
	st, id = w.observed()
	if st.State != sessions.Working || st.NewTurns != 1 || id != sid2 {
		t.Fatalf("the new file: %+v %q", st, id)
	}
	// Replaced in place by a shorter, complete history.
	tmp := later + ".tmp"
	if err := os.WriteFile(tmp, []byte(w.meta(sid2)+prompt("q1", "three")+reply("h1", "done")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(later, future, future); err != nil {
		t.Fatal(err)
	}
	if st, _ = w.observed(); st.State != sessions.WaitingOnUser || st.NewTurns != 0 {
		t.Fatalf("replaced: %+v", st)
	}
}

// A huge chat (a long session with large tool outputs) is not read whole:
// the first look reads its last window only, and the state and the session
// id are still right (the id from the first line, read apart).
func TestObserveHugeChatReadsItsTail(t *testing.T) {
	w := newWorld(t)
	path := w.chatPath(sid1)
	big := strings.Repeat("x", 64<<10)
	var b strings.Builder
	b.WriteString(w.meta(sid1))
	for i := 0; b.Len() < 40<<20; i++ {
		fmt.Fprintf(&b, `{"id":"g%d","type":"gemini","content":%q}`+"\n", i, big)
	}
	b.WriteString(prompt("last", "and now?"))
	appendTo(t, path, b.String())
	w.Observe()
	st, id := w.observed()
	if st.State != sessions.Working || id != sid1 {
		t.Fatalf("huge: %+v %q", st, id)
	}
	if read := w.O.File().Tail().BytesRead; read > 3<<20 {
		t.Fatalf("read %d bytes of a %d-byte file", read, b.Len())
	}
	t.Logf("first look read %d KB of %d MB", w.O.File().Tail().BytesRead>>10, b.Len()>>20)
}

// Watch lists the TUI (not the other home's) before its chat exists, then
// with the session id once it does; Observe's loop follows it; the source
// never reaches into a terminal.
func TestWatchAndObserveLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.src.Poll = time.Second
		ch := observetest.Watch(t, w.src)
		list := <-ch
		if len(list) != 1 || list[0].PID != w.Proc.PID || list[0].AgentSessionID != "" || list[0].Cwd != w.Proc.Cwd {
			t.Fatalf("first list: %+v", list)
		}
		path := w.chatPath(sid1)
		appendTo(t, path, w.meta(sid1), seed)
		list = <-ch
		if len(list) != 1 || list[0].AgentSessionID != sid1 {
			t.Fatalf("with its chat: %+v", list)
		}
		evs := observetest.Observe(t, w.src, list[0])
		if ev := <-evs; ev.Observed == nil || ev.Observed.State != sessions.Idle {
			t.Fatalf("first observation %+v", ev)
		}
		appendTo(t, path, prompt("p1", "go"))
		if ev := <-evs; ev.Observed == nil || ev.Observed.State != sessions.Working || ev.AgentSessionID != sid1 {
			t.Fatalf("the turn %+v", ev)
		}
		w.Kill()
		for ev := range evs {
			if ev.Kind == sessions.EvSessionEnded {
				break
			}
		}
		if list = <-ch; len(list) != 0 {
			t.Fatalf("gone: %+v", list)
		}
		if w.src.CanNudge(list0(w)) || !errors.Is(w.src.Nudge(t.Context(), list0(w), "x", false), ErrNoInbox) {
			t.Fatal("a Gemini terminal cannot be nudged")
		}
	})
}

func list0(w *world) sessions.ExternalSession { return w.ES() }

// A pending call with nothing running under the CLI becomes an approval
// prompt at the first look past approvalAfter: the poll brings it, the
// file does not change.
func TestObserveLoopApprovalAfterPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		w.src.Poll = 2 * time.Second
		path := w.chatPath(sid1)
		call := fmt.Sprintf(`{"id":"g1","timestamp":%q,"type":"gemini","content":""}`+"\n", time.Now().UTC().Format(time.RFC3339Nano))
		appendTo(t, path, w.meta(sid1), seed, prompt("p1", "make it"), call)
		start := time.Now()
		evs := observetest.Observe(t, w.src, w.ES())
		if ev := <-evs; ev.Observed.State != sessions.Working {
			t.Fatalf("at once: %+v", ev.Observed)
		}
		ev := <-evs
		if ev.Observed.State != sessions.WaitingOnUser || ev.Observed.Wait != sessions.WaitPermission || !ev.Observed.InTurn {
			t.Fatalf("later: %+v", ev.Observed)
		}
		if d := time.Since(start); d < approvalAfter || d > approvalAfter+w.src.Poll {
			t.Fatalf("the approval was seen after %s", d)
		}
	})
}

// BenchmarkStepUnchanged is one look at a session whose chat did not
// change: a stat, no read.
func BenchmarkStepUnchanged(b *testing.B) {
	w := newWorld(b)
	path := w.chatPath(sid1)
	appendTo(b, path, w.meta(sid1), seed, prompt("p1", "go"), reply("g1", "done"))
	w.Observe()
	w.Step()
	b.ReportAllocs()
	for b.Loop() {
		w.O.Step()
	}
}
