package claudeterm

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// child starts a real process to stand for an interactive CLI.
func child(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func sessionFileFor(pid int, sid, cwd string) SessionFile {
	return SessionFile{PID: pid, SessionID: sid, Cwd: cwd, StartedAt: time.Now().UnixMilli(), Version: "2.1.328",
		Kind: "interactive", Entrypoint: "cli", Status: "idle"}
}

func TestListSessionFilesKeepsOnlyLiveInteractiveSessions(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the pid probe reads /proc")
	}
	dir := t.TempDir()
	live := child(t).Process.Pid
	other := child(t).Process.Pid
	good := sessionFileFor(live, "s-live", "/w")
	writeJSON(t, filepath.Join(dir, fmt.Sprintf("%d.json", live)), good)
	// A crash left this one behind.
	dead := deadPID(t)
	writeJSON(t, filepath.Join(dir, fmt.Sprintf("%d.json", dead)), sessionFileFor(dead, "s-dead", "/w"))
	// The pid now belongs to a process that started an hour after the
	// file was written: reused.
	reused := sessionFileFor(other, "s-reused", "/w")
	reused.StartedAt = time.Now().Add(-time.Hour).UnixMilli()
	reused.ProcStart = "1"
	writeJSON(t, filepath.Join(dir, fmt.Sprintf("%d.json", other)), reused)
	// A background job is not a terminal session.
	bgPID := child(t).Process.Pid
	bg := sessionFileFor(bgPID, "s-bg", "/w")
	bg.Kind = "bg"
	writeJSON(t, filepath.Join(dir, fmt.Sprintf("%d.json", bgPID)), bg)
	// Not session files at all.
	os.WriteFile(filepath.Join(dir, "999999.json"), []byte("{not json"), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.json"), []byte("{}"), 0o600)
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.abc.key", live)), []byte(`{"peerToken":"x"}`), 0o600)

	got, err := ListSessionFiles(dir, ProcessAlive)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].SessionID != "s-live" {
		t.Fatalf("got %+v, want only s-live", got)
	}
	// The live file's own procStart matches the platform's stamp.
	if p, _ := procscan.Probe(live); p.Stamp == "" || p.Started.IsZero() {
		t.Fatalf("probe of a live child: %+v", p)
	}
}

// rig is a temporary Claude configuration directory.
type rig struct {
	t   *testing.T
	src *Source
	cwd string
}

func newSourceRig(t *testing.T) *rig {
	// Short: the inbox socket lives in it and unix socket paths are short.
	dir, err := os.MkdirTemp("", "cc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.MkdirAll(filepath.Join(dir, "sessions"), 0o700)
	return &rig{t: t, src: &Source{ConfigDir: dir, Poll: 20 * time.Millisecond}, cwd: "/home/u/proj"}
}

func (g *rig) register(f SessionFile) {
	writeJSON(g.t, filepath.Join(g.src.SessionsDir(), fmt.Sprintf("%d.json", f.PID)), f)
}

func (g *rig) transcript(sid string, lines ...string) {
	p := g.src.TranscriptPath(g.cwd, sid)
	os.MkdirAll(filepath.Dir(p), 0o700)
	appendFile(g.t, p, strings.Join(lines, "\n")+"\n")
}

// next waits for the next event; waitObserved for one carrying a state.
func next(t *testing.T, ch <-chan sessions.Event) sessions.Event {
	t.Helper()
	return observetest.Recv(t, ch, "event")
}

var waitObserved = observetest.WaitObserved

func TestObserveFollowsTurnsClearAndExit(t *testing.T) {
	g := newSourceRig(t)
	pid := os.Getpid()
	f := sessionFileFor(pid, "sid-1", g.cwd)
	f.Status = "busy"
	g.src.Probe = func(SessionFile) (bool, bool) { return true, true }
	g.register(f)
	g.transcript("sid-1", recPrompt)
	watch := observetest.Watch(t, g.src)
	list := <-watch
	if len(list) != 1 || list[0].Key != f.Key() || list[0].AgentSessionID != "sid-1" {
		t.Fatalf("discovered %+v", list)
	}
	ch := observetest.Observe(t, g.src, list[0])
	ev := waitObserved(t, ch, sessions.Working)
	if ev.Observed.Name != "fix the build" || ev.AgentSessionID != "sid-1" || ev.PID != pid {
		t.Fatalf("first event %+v %+v", ev, ev.Observed)
	}
	g.transcript("sid-1", recToolUse)
	observetest.WaitObservedThat(t, ch, "working with the open tool", func(o *sessions.ObservedState) bool {
		return o.State == sessions.Working && o.Tool == "Bash"
	})
	g.transcript("sid-1", recToolResult, recEnd)
	f.Status = "idle"
	g.register(f)
	ev = waitObserved(t, ch, sessions.WaitingOnUser)
	if ev.Observed.Wait != sessions.WaitReview || ev.Observed.InTurn {
		t.Fatalf("after end_turn: %+v", ev.Observed)
	}
	// /clear: the same process, a new sessionId and transcript.
	f.SessionID = "sid-2"
	f.Name = "renamed"
	g.register(f)
	ev = waitObserved(t, ch, sessions.Idle)
	if ev.AgentSessionID != "sid-2" || ev.Observed.Name != "renamed" {
		t.Fatalf("after /clear: %+v %+v", ev, ev.Observed)
	}
	g.transcript("sid-2", recPrompt)
	f.Status = "busy"
	g.register(f)
	waitObserved(t, ch, sessions.Working)
	// A clean exit removes the file: a turn cut short is the user's to review.
	os.Remove(filepath.Join(g.src.SessionsDir(), fmt.Sprintf("%d.json", pid)))
	ev = waitObserved(t, ch, sessions.WaitingOnUser)
	if ev.Observed.Wait != sessions.WaitReview {
		t.Fatalf("closed mid-turn: %+v", ev.Observed)
	}
	if ev := next(t, ch); ev.Kind != sessions.EvSessionEnded {
		t.Fatalf("want session_ended, got %v", ev.Kind)
	}
	if _, ok := <-ch; ok {
		t.Fatal("the stream stays open after the session ended")
	}
	// The discovery list follows (after the lists it sent meanwhile).
	for deadline := time.After(5 * time.Second); ; {
		select {
		case l := <-watch:
			if len(l) == 0 {
				return
			}
		case <-deadline:
			t.Fatal("still listed after exit")
		}
	}
}

func TestObserveEndsWhenProcessDiesLeavingItsFile(t *testing.T) {
	g := newSourceRig(t)
	var alive atomic.Bool
	alive.Store(true)
	g.src.Probe = func(SessionFile) (bool, bool) { return alive.Load(), true }
	f := sessionFileFor(4242, "sid", g.cwd)
	f.Status = "busy"
	g.register(f)
	g.transcript("sid", recPrompt, recToolUse)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := g.src.Observe(ctx, external(f))
	if err != nil {
		t.Fatal(err)
	}
	waitObserved(t, ch, sessions.Working)
	alive.Store(false)
	ev := waitObserved(t, ch, sessions.Interrupted)
	if !strings.Contains(ev.Observed.Evidence, "gone mid-turn") {
		t.Fatalf("evidence %q", ev.Observed.Evidence)
	}
	if ev := next(t, ch); ev.Kind != sessions.EvSessionEnded || !strings.Contains(ev.Detail, "killed or crashed") {
		t.Fatalf("want session_ended (crash), got %v %q", ev.Kind, ev.Detail)
	}
}

func TestNudgeWritesAuthAndOneFrame(t *testing.T) {
	for _, urgent := range []bool{false, true} {
		t.Run(fmt.Sprint("urgent=", urgent), func(t *testing.T) {
			g := newSourceRig(t)
			sock := filepath.Join(g.src.ConfigDir, "in.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			got := make(chan []string, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				var lines []string
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					lines = append(lines, sc.Text())
				}
				got <- lines
			}()
			f := sessionFileFor(4242, "sid", g.cwd)
			f.MessagingSocketPath = sock
			g.register(f)
			es := external(f)
			if g.src.CanNudge(es) {
				t.Fatal("CanNudge without a key file")
			}
			sum := sha256.Sum256([]byte(sock))
			os.WriteFile(filepath.Join(g.src.SessionsDir(), fmt.Sprintf("4242.%s.key", hex.EncodeToString(sum[:]))),
				[]byte(`{"peerToken":"0123456789abcdef0123456789abcdef","procStart":"1","pidDomain":"x"}`), 0o600)
			if !g.src.CanNudge(es) {
				t.Fatal("CanNudge is false with a socket and a key")
			}
			if err := g.src.Nudge(context.Background(), es, "please continue", urgent); err != nil {
				t.Fatal(err)
			}
			lines := <-got
			if len(lines) != 2 || lines[0] != `{"token":"0123456789abcdef0123456789abcdef","type":"auth"}` {
				t.Fatalf("lines %q", lines)
			}
			var frame struct {
				Type, MsgID, From, Priority string
				MsgV                        int
				Message                     struct{ Role, Content string }
			}
			json.Unmarshal([]byte(lines[1]), &frame)
			var raw map[string]any
			json.Unmarshal([]byte(lines[1]), &raw)
			want := "next"
			if urgent {
				want = "now"
			}
			if frame.Type != "user" || raw["msgV"] != float64(1) || raw["priority"] != want || raw["msg_id"] == "" ||
				frame.Message.Role != "user" || frame.Message.Content != "please continue" {
				t.Fatalf("frame %s", lines[1])
			}
		})
	}
}

func TestNudgeWithoutInboxFails(t *testing.T) {
	g := newSourceRig(t)
	f := sessionFileFor(4242, "sid", g.cwd)
	g.register(f)
	if err := g.src.Nudge(context.Background(), external(f), "x", false); err != ErrNoInbox {
		t.Fatalf("err = %v, want ErrNoInbox", err)
	}
}

// Every turn counts once: one that starts and ends between two reads (a
// quick answer), and one the status announced before its prompt reached
// the transcript — even when the status flips back meanwhile.
func TestObserverCountsTurnsOnce(t *testing.T) {
	g := newSourceRig(t)
	g.src.Probe = func(SessionFile) (bool, bool) { return true, true }
	f := sessionFileFor(4242, "sid", g.cwd)
	g.register(f)
	o := &observer{src: g.src, es: external(f), file: f}
	o.follow(f)
	// The events go through Apply, which owns the generation.
	var sess sessions.Session
	turns := 0
	step := func() sessions.ObservedState {
		t.Helper()
		evs, done := o.step()
		if done {
			t.Fatal("ended")
		}
		var last sessions.ObservedState
		for _, ev := range evs {
			sess = sessions.Apply(sess, ev, time.Now())
			if ev.Kind == sessions.EvObserved {
				last = *ev.Observed
			}
		}
		turns = int(sess.TurnGeneration)
		return last
	}
	step()
	// A whole turn between two reads.
	g.transcript("sid", recPrompt, recEnd)
	if st := step(); st.State != sessions.WaitingOnUser || turns != 1 {
		t.Fatalf("quick turn: %v, %d turns", st.State, turns)
	}
	// The status says busy first; it flips back; then the prompt lands.
	f.Status, f.StatusUpdatedAt = "busy", time.Now().UnixMilli()
	g.register(f)
	if st := step(); !st.InTurn {
		t.Fatalf("busy: %+v", st)
	}
	f.Status = "idle"
	g.register(f)
	step()
	g.transcript("sid", recPrompt)
	f.Status = "busy"
	g.register(f)
	step()
	g.transcript("sid", recEnd)
	step()
	if turns != 2 {
		t.Fatalf("counted %d turns, want 2", turns)
	}
	// The first read inside a turn (a transcript that existed before) is
	// one turn, not its history's.
	g.transcript("sid", recPrompt, recEnd, recPrompt)
	o2 := &observer{src: g.src, es: external(f), file: f}
	o2.follow(f)
	o, sess = o2, sessions.Session{}
	if st := step(); !st.InTurn || turns != 1 {
		t.Fatalf("mid-turn start: %+v, %d turns", st, turns)
	}
}

var appendFile = observetest.Append[string]

// BenchmarkColdDiscovery: a configuration directory with 1,000 transcripts
// of 1 MB each (1 GB apparent; sparse files, so the machine's disk is
// spared), of which live sessions are registered; the time from Watch to
// the first correct list and to every live session's first inferred state.
// Only live sessions' transcripts are opened, and only their tails read.
func BenchmarkColdDiscovery(b *testing.B) {
	for _, live := range []int{10, 100} {
		b.Run(fmt.Sprintf("live=%d", live), func(b *testing.B) {
			dir := b.TempDir()
			// The probe is stubbed: one process cannot own many session
			// files (they are named by pid). The real probe is one small
			// /proc read per session.
			src := &Source{ConfigDir: dir, Poll: time.Hour, Probe: func(SessionFile) (bool, bool) { return true, true }}
			os.MkdirAll(src.SessionsDir(), 0o700)
			tail := strings.Repeat(recPrompt+"\n"+recToolUse+"\n"+recToolResult+"\n", 30) + recEnd + "\n"
			for i := 0; i < 1000; i++ {
				cwd := fmt.Sprintf("/home/u/p%d", i)
				sid := fmt.Sprintf("sid-%d", i)
				p := src.TranscriptPath(cwd, sid)
				os.MkdirAll(filepath.Dir(p), 0o700)
				fh, err := os.Create(p)
				if err != nil {
					b.Fatal(err)
				}
				fh.Truncate(1<<20 - int64(len(tail)))
				fh.Seek(0, 2)
				fh.WriteString(tail)
				fh.Close()
				if i < live {
					f := sessionFileFor(100000+i, sid, cwd)
					writeJSON(b, filepath.Join(src.SessionsDir(), fmt.Sprintf("%d.json", f.PID)), f)
				}
			}
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				ctx, cancel := context.WithCancel(context.Background())
				w, err := src.Watch(ctx)
				if err != nil {
					b.Fatal(err)
				}
				list := <-w
				for _, es := range list {
					ch, err := src.Observe(ctx, es)
					if err != nil {
						b.Fatal(err)
					}
					ev := <-ch
					if ev.Kind != sessions.EvObserved || ev.Observed.State != sessions.WaitingOnUser {
						b.Fatalf("first event %v %+v", ev.Kind, ev.Observed)
					}
				}
				cancel()
			}
			b.StopTimer()
			if st, err := os.ReadFile("/proc/self/status"); err == nil {
				for _, l := range strings.Split(string(st), "\n") {
					if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
						var kb float64
						fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
						b.ReportMetric(kb/1024, "peak-RSS-MB")
					}
				}
			}
		})
	}
}

// With notifications, the Watch's safety rescan runs only after a list
// that found sessions (a process may die without touching its file); with
// none listed nothing is armed but what the process table asks for (a CLI
// in its grace).
func TestRescanWhileListed(t *testing.T) {
	const poll = 15 * time.Second
	for _, c := range []struct {
		name   string
		soon   func() time.Duration
		listed int64
		want   time.Duration
	}{
		{"none listed, nothing else", nil, 0, 0},
		{"listed", nil, 2, poll},
		{"none listed, a CLI in its grace", func() time.Duration { return 3 * time.Second }, 0, 3 * time.Second},
		{"listed, a CLI in its grace: the sooner", func() time.Duration { return 3 * time.Second }, 1, 3 * time.Second},
		{"listed, the table's look later", func() time.Duration { return time.Minute }, 1, poll},
		{"listed, the table asks nothing", func() time.Duration { return 0 }, 1, poll},
	} {
		t.Run(c.name, func(t *testing.T) {
			var listed atomic.Int64
			listed.Store(c.listed)
			if got := rescanWhileListed(c.soon, &listed, poll)(); got != c.want {
				t.Fatalf("next look in %v, want %v", got, c.want)
			}
		})
	}
}
