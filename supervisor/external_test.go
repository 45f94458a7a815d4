package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
	"github.com/session-supervisor/session-supervisor/testdir"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/leakcheck"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/claudeterm"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/watch"
)

// termWorld is a temporary Claude configuration directory with one
// "interactive CLI": a real child process registered in a session file.
type termWorld struct {
	t    *testing.T
	dir  string
	src  *claudeterm.Source
	cmd  *exec.Cmd
	file claudeterm.SessionFile
}

func newTermWorld(t *testing.T) *termWorld {
	if runtime.GOOS != "linux" {
		t.Skip("the pid probe reads /proc")
	}
	dir := testdir.Short(t, "cc")
	// Long safety poll: discovery must come from the file watcher.
	w := &termWorld{t: t, dir: dir, src: &claudeterm.Source{ConfigDir: dir, Notify: watch.Dirs, Poll: time.Minute}}
	w.cmd = exec.Command("sleep", "120")
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.cmd.Process.Kill(); w.cmd.Wait() })
	w.file = claudeterm.SessionFile{PID: w.cmd.Process.Pid, SessionID: "sid-1", Cwd: "/home/u/proj",
		StartedAt: time.Now().UnixMilli(), Kind: "interactive", Entrypoint: "cli", Status: "idle", Version: "2.1.328"}
	return w
}

func (w *termWorld) write(path string, v any) {
	w.t.Helper()
	b, _ := json.Marshal(v)
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		w.t.Fatal(err)
	}
}

func (w *termWorld) register() {
	w.write(filepath.Join(w.dir, "sessions", fmt.Sprintf("%d.json", w.file.PID)), w.file)
}

func (w *termWorld) transcript(lines ...string) {
	p := w.src.TranscriptPath(w.file.Cwd, w.file.SessionID)
	os.MkdirAll(filepath.Dir(p), 0o700)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		w.t.Fatal(err)
	}
	f.WriteString(strings.Join(lines, "\n") + "\n")
	f.Close()
}

const (
	tPrompt  = `{"type":"user","message":{"role":"user","content":"# Fix the flaky test\nplease"}}`
	tToolUse = `{"type":"assistant","message":{"role":"assistant","stop_reason":"tool_use","content":[{"type":"tool_use","id":"t1","name":"Bash"}]}}`
	tResult  = `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}`
	tEnd     = `{"type":"assistant","message":{"role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"done"}]}}`
)

// waitFor polls the runtime's list for the observed session.
func waitFor(t *testing.T, rt *Runtime, limit time.Duration, what string, ok func(sessions.Session) bool) sessions.Session {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		for _, s := range rt.Sessions() {
			if s.Source == sessions.Observed && ok(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no observed session %s within %s; sessions: %+v", what, limit, rt.Sessions())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A session started in a terminal appears by itself within a second of its
// session file appearing, and follows its turns from the transcript.
func TestObservedSessionAppearsAndFollowsTurns(t *testing.T) {
	w := newTermWorld(t)
	g := newRig(t, rigConfig{noAgent: true, external: []ExternalSource{w.src}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go g.rt.Run(ctx)
	time.Sleep(50 * time.Millisecond) // the watcher is up

	start := time.Now()
	w.register()
	s := waitFor(t, g.rt, time.Second, "discovered", func(s sessions.Session) bool { return s.PID == w.file.PID })
	t.Logf("discovered in %s", time.Since(start).Round(time.Millisecond))
	// Its process's start stamp is kept: the next boot tells it from a
	// later process under the same pid (issue 20, item 1).
	if s.Agent != "claude" || s.AgentSessionID != "sid-1" || s.Cwd != "/home/u/proj" || !s.ProcessAlive || s.PIDStart != startStamp(w.file.PID) || s.PIDStart == "" {
		t.Fatalf("discovered %+v", s)
	}
	b, _ := json.Marshal(s)
	if !strings.Contains(string(b), `"source":"observed"`) {
		t.Fatalf("JSON %s", b)
	}

	w.file.Status = "busy"
	w.register()
	w.transcript(tPrompt, tToolUse)
	s = waitFor(t, g.rt, time.Second, "working", func(s sessions.Session) bool {
		return s.State == sessions.Working && s.InTurn && s.Evidence == "running Bash"
	})
	if s.Name != "Fix the flaky test" || s.TurnGeneration != 1 {
		t.Fatalf("named %q, generation %d", s.Name, s.TurnGeneration)
	}
	w.transcript(tResult, tEnd)
	w.file.Status = "idle"
	w.register()
	waitFor(t, g.rt, time.Second, "in review", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && !s.InTurn
	})
	// A second turn is a new generation.
	w.file.Status = "busy"
	w.register()
	w.transcript(`{"type":"user","message":{"role":"user","content":"and the other one"}}`)
	waitFor(t, g.rt, time.Second, "second turn", func(s sessions.Session) bool {
		return s.State == sessions.Working && s.TurnGeneration == 2
	})
	g.rt.Settle()
	rows := dbTimeline(t, g.store, s.ID)
	if kinds := strings.Join(rowKinds(rows), " "); !strings.Contains(kinds, "discovered") {
		t.Fatalf("timeline %s", kinds)
	}
}

// inbox registers w's session, busy in a turn, with an inbox socket played
// by the test: reply writes what the CLI would for each frame (its lines:
// the auth line, then the message), and the frames come out in order.
func (w *termWorld) inbox(reply func(frame []string)) <-chan []string {
	w.t.Helper()
	sock := filepath.Join(w.dir, "in.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { ln.Close() })
	frames := make(chan []string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var lines []string
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			c.Close()
			reply(lines)
			frames <- lines
		}
	}()
	w.file.MessagingSocketPath = sock
	w.file.Status = "busy"
	os.MkdirAll(filepath.Join(w.dir, "sessions"), 0o700)
	os.WriteFile(filepath.Join(w.dir, "sessions", fmt.Sprintf("%d.k.key", w.file.PID)), []byte(`{"peerToken":"tok"}`), 0o600)
	w.transcript(tPrompt)
	w.register()
	return frames
}

// tInterrupted is the marker the CLI writes for a turn aborted by the
// user's Esc and by an inbox message with priority "now" alike.
const tInterrupted = `{"type":"user","message":{"role":"user","content":"[Request interrupted by user]"}}`

// A hard stall of a terminal session is interrupted through its inbox with
// priority "now" (the nudge rides along), and never with a signal.
func TestObservedHardStallNudgesThroughInbox(t *testing.T) {
	w := newTermWorld(t)
	// As the CLI does: the abort reaches the transcript, which is how the
	// nudge's arrival is verified.
	frames := w.inbox(func([]string) { w.transcript(tInterrupted) })

	g := newRig(t, rigConfig{noAgent: true, external: []ExternalSource{w.src}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, lines := hardStall(t, g, ctx, w, frames, settings.Defaults())
	if len(lines) != 2 || !strings.Contains(lines[0], `"token":"tok"`) || !strings.Contains(lines[1], `"priority":"now"`) ||
		!strings.Contains(lines[1], core.NudgeText) {
		t.Fatalf("inbox got %q", lines)
	}
	rows := dbTimeline(t, g.store, s.ID)
	kinds := strings.Join(rowKinds(rows), " ")
	if !strings.Contains(kinds, core.TimelineStallInterrupt) || !strings.Contains(kinds, core.TimelineNudgeSent) {
		t.Fatalf("timeline %s", kinds)
	}
}

// hardStall follows w's session until it works, then lets it stall past
// the hard limit (set's thresholds made milliseconds): the supervisor
// sends its interrupt, whose frame is returned. It ticks as the loop does,
// until the frame comes: two ticks (Suspect, then the interrupt) are
// enough unless an observation of the session lands between them (late
// under a loaded machine's scheduler), which makes it genuinely not silent;
// the stall chain never takes a step twice, so a tick more sends nothing
// more.
func hardStall(t *testing.T, g *rig, ctx context.Context, w *termWorld, frames <-chan []string, set settings.Settings) (sessions.Session, []string) {
	t.Helper()
	g.rt.startExternal(ctx)
	s := waitFor(t, g.rt, 2*time.Second, "working", func(s sessions.Session) bool { return s.State == sessions.Working })
	set.StallSuspect, set.StallToolSuspect, set.StallHard = time.Millisecond, time.Millisecond, 2*time.Millisecond
	deadline := time.After(10 * time.Second)
	for {
		time.Sleep(5 * time.Millisecond)
		g.rt.Tick(ctx, set) // Suspect, then the hard stall's interrupt
		g.rt.Settle()
		select {
		case lines := <-frames:
			return s, lines
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no frame reached the inbox in 10 s of ticks; sessions %+v; timeline %s",
				g.rt.Sessions(), strings.Join(rowKinds(dbTimeline(t, g.store, s.ID)), " "))
		}
	}
}

// The supervisor's hard-stall interrupt of a terminal turn reaches the
// transcript as the user's ("[Request interrupted by user]"); when no turn
// follows it (the CLI went idle), it is still the supervisor's stop: the
// state and the timeline say so, and the session is nudged again or
// escalated by the nudge rules, never left as a user's stop in review
// (issue 20, item 3).
func TestObservedSupervisorInterruptIsNotAUserStop(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxNudges int
		// urgent is each frame's priority "now", in order.
		urgent    []bool
		escalated string
	}{
		{"budget left: nudged again", 2, []bool{true, false}, ""},
		{"budget spent: escalated", 1, []bool{true}, "1 of 1 continuation nudges spent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTermWorld(t)
			frames := w.inbox(func(lines []string) {
				if len(lines) == 2 && strings.Contains(lines[1], `"priority":"now"`) {
					// The turn aborted and no turn followed.
					w.transcript(tInterrupted)
					w.file.Status = "idle"
				} else {
					// A nudge ("next") to the idle session starts a turn.
					w.transcript(`{"type":"user","isMeta":true,"turnOrigin":"peer","message":{"role":"user","content":"Another Claude session sent a message:\ncontinue"}}`)
					w.file.Status = "busy"
				}
				w.register()
			})
			g := newRig(t, rigConfig{noAgent: true, external: []ExternalSource{w.src}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			set := settings.Defaults()
			set.NudgeMaxAttempts, set.NudgeCooldown = tc.maxNudges, 0
			s, _ := hardStall(t, g, ctx, w, frames, set)
			s = waitFor(t, g.rt, 5*time.Second, "interrupted by the supervisor", func(s sessions.Session) bool {
				return s.State == sessions.Interrupted
			})
			if !strings.Contains(s.Evidence, "interrupted by the supervisor") || s.Nudge.Attempts != 1 {
				t.Fatalf("evidence %q, nudges %d", s.Evidence, s.Nudge.Attempts)
			}
			g.rt.Tick(ctx, set) // the nudge rules take it
			g.rt.Settle()
			got := []bool{true}
			for len(got) < len(tc.urgent) {
				select {
				case lines := <-frames:
					got = append(got, strings.Contains(lines[1], `"priority":"now"`))
				case <-time.After(5 * time.Second):
					t.Fatalf("frames %v, want %v", got, tc.urgent)
				}
			}
			if tc.escalated != "" {
				s = waitFor(t, g.rt, 2*time.Second, "escalated", func(s sessions.Session) bool { return s.NeedsAttention })
				if s.State != sessions.Interrupted || !strings.Contains(s.Evidence, tc.escalated) {
					t.Fatalf("escalated %v: %s", s.State, s.Evidence)
				}
			} else {
				s = waitFor(t, g.rt, 5*time.Second, "working on the nudge", func(s sessions.Session) bool {
					return s.State == sessions.Working && s.InTurn
				})
				if s.NeedsAttention || s.Nudge.Attempts != 2 {
					t.Fatalf("after the second nudge: attention %v, nudges %d", s.NeedsAttention, s.Nudge.Attempts)
				}
			}
			select {
			case lines := <-frames:
				t.Fatalf("a frame too many: %q", lines)
			default:
			}
			rows := dbTimeline(t, g.store, s.ID)
			var marked bool
			for _, r := range rows {
				d := rowDetail(t, r)
				if msg, _ := d["message"].(string); strings.Contains(msg, "you stopped") {
					t.Errorf("%s row reads as the user's stop: %s", r.Kind, msg)
				}
				if r.Kind == core.TimelineMarkedInterrupted && d["cause"] == "abort" && strings.Contains(fmt.Sprint(d["message"]), "supervisor") {
					marked = true
				}
			}
			if !marked {
				t.Errorf("no marked_interrupted row with cause abort naming the supervisor: %v", rowKinds(rows))
			}
		})
	}
}

// A terminal session whose process is killed mid-turn is Interrupted and
// escalated at once: no nudge can reach a dead process, and the app starts
// none in its place by itself.
func TestObservedProcessKilledMidTurnEscalates(t *testing.T) {
	ctx := t.Context()
	w, g, _ := termTurnRunning(t, ctx)
	w.cmd.Process.Kill()
	w.cmd.Wait()
	g.rt.Tick(ctx, settings.Defaults())
	g.rt.Settle()
	s := waitFor(t, g.rt, 2*time.Second, "interrupted", func(s sessions.Session) bool {
		return s.State == sessions.Interrupted && s.NeedsAttention
	})
	if s.Nudge.Attempts != 0 || !strings.Contains(s.Evidence, "is gone") || !strings.Contains(s.Evidence, "resume it in the background") {
		t.Fatalf("%+v: %s", s.Nudge, s.Evidence)
	}
}

func TestExternalIDIsStable(t *testing.T) {
	a, b := externalID("claude", "1-2"), externalID("claude", "1-2")
	if a != b || a == externalID("claude", "1-3") || len(a) != 36 {
		t.Fatalf("%s %s", a, b)
	}
}

// nudgeRecorder records the nudges the runtime sends; arrive, when set,
// plays the session showing that a nudge arrived.
type nudgeRecorder struct {
	claudeterm.Source
	canNudge bool
	nudges   []bool // urgent, per call
	arrive   func()
}

func (f *nudgeRecorder) CanNudge(sessions.ExternalSession) bool { return f.canNudge }
func (f *nudgeRecorder) Nudge(_ context.Context, _ sessions.ExternalSession, text string, urgent bool) error {
	if text != core.NudgeText {
		return fmt.Errorf("unexpected text %q", text)
	}
	f.nudges = append(f.nudges, urgent)
	if f.arrive != nil {
		f.arrive()
	}
	return nil
}

// Every action on a terminal session goes through its source's nudge or is
// refused: a continue after a rate limit or an auth refresh and the
// continuation nudge wait for the turn ("next"); the stall interrupt is
// urgent ("now"); signals and compaction are never sent.
func TestDispatchExternal(t *testing.T) {
	cases := []struct {
		kind     core.ActionKind
		canNudge bool
		wantErr  bool
		urgent   []bool
	}{
		{core.ActContinue, true, false, []bool{false}},
		{core.ActNudge, true, false, []bool{false}},
		{core.ActInterrupt, true, false, []bool{true}},
		{core.ActNudge, false, true, nil},
		{core.ActTerminate, true, true, nil},
		{core.ActKill, true, true, nil},
		{core.ActCompact, true, true, nil},
		{core.ActRetryTurn, true, true, nil},
		{core.ActEscalate, true, false, nil},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v/can=%v", tc.kind, tc.canNudge), func(t *testing.T) {
			g := newRig(t, rigConfig{noAgent: true})
			src := &nudgeRecorder{canNudge: tc.canNudge}
			e := g.rt.newEntry(sessions.Session{ID: "obs", Source: sessions.Observed, InTurn: true, State: sessions.Suspect})
			g.rt.mu.Lock()
			g.rt.sess["obs"] = e
			g.rt.mu.Unlock()
			// Not found running (loaded from the database): nothing but an
			// escalation can be carried out.
			if err := g.rt.dispatch(e, core.Action{Kind: tc.kind, SessionID: "obs"}); (err == nil) != (tc.kind == core.ActEscalate) {
				t.Fatalf("without a running session: err %v", err)
			}
			e.ext = &extHandle{src: src, live: true}
			src.arrive = func() {
				g.rt.mu.Lock()
				e.s.ProcessAlive = true
				g.rt.applyLocked(e, sessions.Event{Kind: sessions.EvObserved, Observed: &sessions.ObservedState{
					State: sessions.Working, InTurn: true, NewTurns: 1, Evidence: "busy"}})
				g.rt.mu.Unlock()
			}
			err := g.rt.dispatch(e, core.Action{Kind: tc.kind, SessionID: "obs"})
			if (err != nil) != tc.wantErr || fmt.Sprint(src.nudges) != fmt.Sprint(tc.urgent) {
				t.Fatalf("err %v nudges %v; want error %v nudges %v", err, src.nudges, tc.wantErr, tc.urgent)
			}
			g.rt.Settle()
		})
	}
}

// Run returns only when everything it started has ended: the terminal
// source's watcher, the session's observer and its pump. Nothing of the
// module is left running once it has returned.
func TestRunLeavesNoGoroutineBehind(t *testing.T) {
	before := leakcheck.Take()
	w := newTermWorld(t)
	g := newRig(t, rigConfig{noAgent: true, external: []ExternalSource{w.src}})
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() { g.rt.Run(ctx); close(returned) }()
	time.Sleep(50 * time.Millisecond) // the watcher is up
	w.register()
	w.transcript(tPrompt, tToolUse)
	waitFor(t, g.rt, 5*time.Second, "observed", func(s sessions.Session) bool { return s.PID == w.file.PID })
	cancel()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	// The runtime's own goroutines are gone the moment Run returns; the
	// file watchers below the source end as their contexts do, at once.
	var runtimes []string
	for _, g := range before.Leaked(0) {
		if strings.Contains(g, "supervisor.(*Runtime)") {
			runtimes = append(runtimes, g)
		}
	}
	if len(runtimes) > 0 {
		t.Fatalf("%d of the runtime's goroutines outlived Run:\n\n%s", len(runtimes), strings.Join(runtimes, "\n\n"))
	}
	if left := before.Leaked(5 * time.Second); len(left) > 0 {
		t.Fatalf("%d goroutines still run 5 s after Run returned:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
}
