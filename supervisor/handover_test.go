package supervisor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// TerminalResumeArgs makes the scripted agent resumable in a terminal as
// Claude Code is (its registry entry's line).
func (a *scriptAgent) TerminalResumeArgs(command, id string) ([]string, error) {
	return claude.Agent{}.TerminalResumeArgs(command, id)
}

// A managed session handed over: its process is stopped between turns (its
// input closed), the answer is the agent's own resume in its directory,
// and the terminal session of that agent session id, once its source
// finds it, is this session: the same id and timeline (handover_stopped,
// then handed_over with the agent session id), observed from then on,
// listed once. A restart finds it under the same id again.
func TestHandoverBecomesTheTerminalSession(t *testing.T) {
	w := newTermWorld(t)
	g := newRig(t, rigConfig{external: []ExternalSource{w.src}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go g.rt.Run(ctx)

	s := g.launch("Port the parser", []fcStep{fcText, fcResult})
	s = g.wait(s.ID, "the turn done", inReview)
	pid := s.PID
	h, err := g.rt.Handover(ctx, s.ID[:8], localapi.HandoverRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{g.fake, "--resume", fakeSessionID}; !slices.Equal(h.Argv, want) || h.Cwd != g.cwd || h.Stopped != "it exited when its input closed" {
		t.Fatalf("Handover answered %q in %s (%s), want %q in %s", h.Argv, h.Cwd, h.Stopped, want, g.cwd)
	}
	if pidAlive(pid) || h.Session.ProcessAlive || h.Session.HandoverAt.IsZero() || h.Session.Source != sessions.Managed {
		t.Fatalf("after the stop: pid %d alive %v, session %+v", pid, pidAlive(pid), h.Session)
	}

	// The agent's resume starts in a terminal (the world's process).
	w.file.SessionID, w.file.Cwd = fakeSessionID, g.cwd
	w.register()
	got := g.wait(s.ID, "continued in the terminal", func(s sessions.Session) bool {
		return s.Source == sessions.Observed && s.PID == w.cmd.Process.Pid && s.ProcessAlive
	})
	if got.AgentSessionID != fakeSessionID || got.TerminalKey == "" || !got.HandoverAt.IsZero() || got.Name != "Port the parser" {
		t.Fatalf("handed over as %+v", got)
	}
	if n := len(g.rt.Sessions()); n != 1 {
		t.Fatalf("%d sessions listed, want the one: %+v", n, g.rt.Sessions())
	}
	rows := dbTimeline(t, g.store, s.ID)
	kinds := rowKinds(rows)
	stop, over := slices.Index(kinds, core.TimelineHandoverStopped), slices.Index(kinds, core.TimelineHandedOver)
	if stop < 0 || over < stop || !slices.Contains(kinds, "process_started") || !slices.Contains(kinds, "discovered") {
		t.Fatalf("timeline %v: want the managed rows, handover_stopped, then handed_over and discovered", kinds)
	}
	if d := rowDetail(t, rows[over]); d["agent_session"] != fakeSessionID || d["agent_session_was"] != nil ||
		!strings.Contains(d["message"].(string), "keeps the agent session id "+fakeSessionID) {
		t.Fatalf("handed_over: %v", d)
	}
	// Observed now: a prompt is refused (the terminal is where to type).
	if _, err := g.rt.Send(ctx, s.ID, "more"); err == nil {
		t.Fatal("a prompt to the handed-over session was accepted")
	}
	if _, err := g.rt.Handover(ctx, s.ID, localapi.HandoverRequest{}); !errors.Is(err, localapi.ErrConflict) || !strings.Contains(err.Error(), "runs in a terminal already") {
		t.Fatalf("a second hand-over: %v", err)
	}

	// A restart: the store holds its terminal key, and the source's
	// session is found under the same id, once.
	cancel()
	g.rt.Settle()
	g2 := New(Options{Store: g.store, Agents: map[string]Agent{"claude": g.agent}, DefaultAgent: "claude", Connectivity: unknownConnectivity,
		External: []ExternalSource{w.src}, Settings: g.svc.Get})
	if err := g2.Boot(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	done := make(chan struct{})
	go func() { g2.Run(ctx2); close(done) }()
	defer func() { cancel2(); <-done }()
	waitFor(t, g2, 10*time.Second, "found again after the restart", func(x sessions.Session) bool {
		return x.ID == s.ID && x.ProcessAlive && x.PID == w.cmd.Process.Pid
	})
	time.Sleep(200 * time.Millisecond) // a duplicate would show up by now
	if list := g2.Sessions(); len(list) != 1 {
		t.Fatalf("after the restart %d sessions: %+v", len(list), list)
	}
}

// The wait for the turn has a bound and says so, the session left running
// as it was; with Interrupt the turn is stopped (the user's stop) and the
// session handed over.
func TestHandoverWaitsForTheTurnOrInterrupts(t *testing.T) {
	w := newTermWorld(t)
	g := newRig(t, rigConfig{external: []ExternalSource{w.src}})
	ctx := context.Background()
	s := g.launch("Long", []fcStep{fcSleep(120_000), fcText, fcResult})
	s = g.wait(s.ID, "working", func(s sessions.Session) bool { return s.InTurn && s.ProcessAlive && s.AgentSessionID != "" })
	start := time.Now()
	_, err := g.rt.Handover(ctx, s.ID, localapi.HandoverRequest{WaitSeconds: 1})
	if !errors.Is(err, localapi.ErrConflict) || !strings.Contains(err.Error(), "did not end within 1 s") || !strings.Contains(err.Error(), "not handed over") {
		t.Fatalf("a turn that does not end: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the bounded wait took %s", d)
	}
	if now, _ := g.rt.Session(s.ID); !now.InTurn || !now.ProcessAlive || !now.HandoverAt.IsZero() {
		t.Fatalf("after the refused wait: %+v", now)
	}
	h, err := g.rt.Handover(ctx, s.ID, localapi.HandoverRequest{Interrupt: true, WaitSeconds: 20})
	if err != nil {
		t.Fatal(err)
	}
	if h.Session.InTurn || h.Session.ProcessAlive || h.Session.HandoverAt.IsZero() {
		t.Fatalf("interrupted and handed over: %+v", h.Session)
	}
	kinds := rowKinds(dbTimeline(t, g.store, s.ID))
	if i, j := slices.Index(kinds, "interrupt_requested"), slices.Index(kinds, core.TimelineHandoverStopped); i < 0 || j < i {
		t.Fatalf("timeline %v", kinds)
	}
}

// A process that does not exit when its input closes (it sleeps after its
// turn) is terminated after the grace, and the hand-over says so.
func TestHandoverTerminatesAProcessThatStaysUp(t *testing.T) {
	w := newTermWorld(t)
	g := newRig(t, rigConfig{external: []ExternalSource{w.src}})
	defer func(d time.Duration) { handoverCloseGrace = d }(handoverCloseGrace)
	handoverCloseGrace = 300 * time.Millisecond
	s := g.launch("Stubborn", []fcStep{fcText, fcResult, fcSleep(120_000)})
	s = g.wait(s.ID, "the turn done", inReview)
	h, err := g.rt.Handover(context.Background(), s.ID, localapi.HandoverRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.Stopped, "was terminated (SIGTERM)") || pidAlive(s.PID) {
		t.Fatalf("stopped: %q (pid alive %v)", h.Stopped, pidAlive(s.PID))
	}
	rows := dbTimeline(t, g.store, s.ID)
	i := slices.Index(rowKinds(rows), core.TimelineHandoverStopped)
	if i < 0 || !strings.Contains(rowDetail(t, rows[i])["message"].(string), "terminated (SIGTERM)") {
		t.Fatalf("timeline %v", rowKinds(rows))
	}
}

// Refused with the reason, the session untouched: an agent whose terminal
// sessions no source follows (the app would lose it), and one whose agent
// session id is not known.
func TestHandoverRefusals(t *testing.T) {
	g := newRig(t, rigConfig{})
	s := g.launch("Unfollowed", []fcStep{fcText, fcResult})
	s = g.wait(s.ID, "the turn done", inReview)
	_, err := g.rt.Handover(context.Background(), s.ID, localapi.HandoverRequest{})
	if !errors.Is(err, localapi.ErrConflict) || !strings.Contains(err.Error(), "claude sessions in a terminal are not observed") {
		t.Fatalf("no terminal source: %v", err)
	}
	if now, _ := g.rt.Session(s.ID); !now.ProcessAlive || !now.HandoverAt.IsZero() {
		t.Fatalf("the refused session was changed: %+v", now)
	}
}

// pidAlive: a process runs at pid (zombies too: the runtime reaps its
// agents, so a stopped one is gone).
func pidAlive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }
