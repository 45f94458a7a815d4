package supervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/claudeterm"
	"github.com/session-supervisor/session-supervisor/sessions/view"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
	"github.com/session-supervisor/session-supervisor/testdir"
	"github.com/session-supervisor/session-supervisor/watch"
)

// deadTerminal is a terminal session whose process was killed mid-turn:
// Interrupted and escalated, as Reconcile leaves it with the setting off.
func deadTerminal(cwd string) sessions.Session {
	now := time.Now()
	return sessions.Session{ID: "0b5e0000-0000-4000-8000-00000000000a", Name: "Fix the flaky test", Agent: "claude",
		AgentSessionID: "5e551011-0000-4000-8000-000000000042", Source: sessions.Observed, Cwd: cwd, PID: 4242,
		State: sessions.Interrupted, Evidence: "process 4242 is gone; turn 2 was in flight", TurnGeneration: 2,
		NeedsAttention: true, Supervision: sessions.Supervision{EscalatedGeneration: 2},
		CreatedAt: now.Add(-time.Hour), UpdatedAt: now, StateChangedAt: now}
}

// inRigCwd moves the seeded session s to the rig's working directory (the
// seed is saved before the rig has one) and has the fake agent answer the
// nudge of a resume.
func (g *rig) inRigCwd(s sessions.Session) sessions.Session {
	g.rt.mu.Lock()
	g.rt.sess[s.ID].s.Cwd = g.cwd
	g.rt.mu.Unlock()
	g.agent.setScript(writeFakeScript(g.t, []fcStep{fcText, fcResult}))
	s.Cwd = g.cwd
	return s
}

// checkResumed checks both ends of a resume: the managed session runs the
// agent's session with the nudge and says where it came from; the terminal
// session points at it and left the needs-attention set.
func checkResumed(t *testing.T, g *rig, old sessions.Session, args string, by string) sessions.Session {
	t.Helper()
	var started sessions.Session
	for _, s := range g.rt.Sessions() {
		if s.ResumedFrom == old.ID {
			started = s
		}
	}
	if started.ID == "" {
		t.Fatalf("no session resumed from %s: %+v", old.ID, g.rt.Sessions())
	}
	started = g.wait(started.ID, "the nudge's turn done", inReview)
	if started.Source != sessions.Managed || started.Agent != "claude" || started.Cwd != old.Cwd ||
		started.AgentSessionID != old.AgentSessionID || started.Name != old.Name {
		t.Fatalf("resumed as %+v", started)
	}
	b, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Split(string(b), "\n"), "--resume") || !strings.Contains(string(b), old.AgentSessionID) {
		t.Fatalf("the managed launch ran with %q", b)
	}
	rows := dbTimeline(t, g.store, started.ID)
	kinds := rowKinds(rows)
	if i := slices.Index(kinds, core.TimelineResumedFrom); i < 0 || rowDetail(t, rows[i])["resumed_from"] != old.ID ||
		rowDetail(t, rows[i])["by"] != by || !slices.Contains(kinds, core.TimelineNudgeSent) {
		t.Fatalf("managed timeline %v", kinds)
	}
	now, err := g.rt.Session(old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if now.State != sessions.Idle || now.NeedsAttention || !strings.Contains(now.Evidence, "resumed in the background as session "+started.ID[:8]) {
		t.Fatalf("the terminal session is %s (attention %v): %s", now.State, now.NeedsAttention, now.Evidence)
	}
	rows = dbTimeline(t, g.store, old.ID)
	kinds = rowKinds(rows)
	if i := slices.Index(kinds, core.TimelineResumedAs); i < 0 || rowDetail(t, rows[i])["resumed_as"] != started.ID {
		t.Fatalf("terminal timeline %v", kinds)
	}
	return started
}

// The user resumes a dead terminal session in the background: a managed
// session of the same agent resumes its agent session in its cwd with the
// nudge, and each end records the other.
func TestResumeInBackgroundByTheUser(t *testing.T) {
	g := newRig(t, rigConfig{seed: []sessions.Session{deadTerminal("")}})
	old := g.inRigCwd(deadTerminal(""))
	args := filepath.Join(t.TempDir(), "args")
	t.Setenv("FAKE_CLAUDE_ARGS_FILE", args)
	if !view.Allows(old, view.Resume) {
		t.Fatal("the view does not offer the resume")
	}
	s, err := g.rt.Resume(context.Background(), old.ID[:8])
	if err != nil {
		t.Fatal(err)
	}
	if s.ResumedFrom != old.ID || s.ID == old.ID {
		t.Fatalf("Resume answered %+v", s)
	}
	checkResumed(t, g, old, args, "user")
	// Done once: the terminal session is settled, so a second resume is refused.
	if _, err := g.rt.Resume(context.Background(), old.ID); !errors.Is(err, localapi.ErrConflict) {
		t.Fatalf("second resume: %v", err)
	}
}

// Resume is refused, with the reason, for every session it does not fit,
// by the same rule the views use to offer it.
func TestResumeRefusals(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*sessions.Session)
		why  string
	}{
		{"managed", func(s *sessions.Session) { s.Source = sessions.Managed }, "launched by the app"},
		{"process alive", func(s *sessions.Session) { s.ProcessAlive = true }, "still runs"},
		{"turn in flight", func(s *sessions.Session) { s.InTurn, s.State = true, sessions.Working }, "still runs"},
		{"in review", func(s *sessions.Session) { s.State, s.WaitReason = sessions.WaitingOnUser, sessions.WaitReview }, "not interrupted"},
		{"idle", func(s *sessions.Session) { s.State = sessions.Idle }, "not interrupted"},
		{"no agent session id", func(s *sessions.Session) { s.AgentSessionID = "" }, "session id is unknown"},
		{"no launcher", func(s *sessions.Session) { s.Agent = "gemini" }, `no launcher for agent "gemini"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := deadTerminal(t.TempDir())
			tc.mod(&s)
			g := newRig(t, rigConfig{noAgent: true, seed: []sessions.Session{s}})
			// As it is in memory (the boot rule would settle a live one).
			g.rt.mu.Lock()
			g.rt.sess[s.ID].s = s
			g.rt.mu.Unlock()
			got := s
			_, err := g.rt.Resume(context.Background(), s.ID)
			if !errors.Is(err, localapi.ErrConflict) || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("err %v, want a conflict saying %q", err, tc.why)
			}
			if tc.name != "no launcher" && view.Allows(got, view.Resume) {
				t.Fatalf("the view offers a resume the runtime refuses")
			}
			if len(g.rt.Sessions()) != 1 {
				t.Fatal("a session was added")
			}
		})
	}
}

// With supervisor.resume_terminal_sessions on, the tick resumes a dead
// terminal session by itself (intent, then the launch); off, it escalates
// and launches nothing.
func TestResumeTerminalAutomatically(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			s := deadTerminal("")
			s.NeedsAttention, s.Supervision = false, sessions.Supervision{}
			g := newRig(t, rigConfig{seed: []sessions.Session{s}})
			s = g.inRigCwd(s)
			args := filepath.Join(t.TempDir(), "args")
			t.Setenv("FAKE_CLAUDE_ARGS_FILE", args)
			set := settings.Defaults()
			set.ResumeTerminal = on
			set.AgentCommands = map[string]string{"claude": g.fake}
			g.rt.Tick(context.Background(), set)
			g.rt.Settle()
			if !on {
				now, _ := g.rt.Session(s.ID)
				if len(g.rt.Sessions()) != 1 || !now.NeedsAttention || now.State != sessions.Interrupted {
					t.Fatalf("off: %d sessions, %+v", len(g.rt.Sessions()), now)
				}
				return
			}
			checkResumed(t, g, s, args, "supervisor")
			rows := dbTimeline(t, g.store, s.ID)
			i := slices.Index(rowKinds(rows), core.TimelineBackgroundResume)
			if i < 0 || rowDetail(t, rows[i])["outcome"] != "ok" {
				t.Fatalf("intent row: %v", rowKinds(rows))
			}
			// Settled: the next tick decides nothing more.
			g.rt.Tick(context.Background(), set)
			g.rt.Settle()
			if n := len(g.rt.Sessions()); n != 2 {
				t.Fatalf("%d sessions after a second tick", n)
			}
		})
	}
}

// A resume whose launch fails counts against the nudge budget: the tick
// tries again after the cooldown, then escalates.
func TestResumeTerminalLaunchFailureEscalates(t *testing.T) {
	s := deadTerminal(t.TempDir())
	s.NeedsAttention, s.Supervision = false, sessions.Supervision{}
	g := newRig(t, rigConfig{noAgent: true, seed: []sessions.Session{s}})
	set := settings.Defaults()
	set.ResumeTerminal, set.NudgeCooldown = true, 0
	set.AgentCommands = map[string]string{"claude": filepath.Join(t.TempDir(), "no-such-claude")}
	for range 3 {
		g.rt.Tick(context.Background(), set)
		g.rt.Settle()
	}
	now, _ := g.rt.Session(s.ID)
	if len(g.rt.Sessions()) != 1 || !now.NeedsAttention || now.Nudge.Attempts != 2 || !strings.Contains(now.Evidence, "2 of 2") {
		t.Fatalf("%d sessions; %+v: %s", len(g.rt.Sessions()), now.Nudge, now.Evidence)
	}
	var failed int
	for _, r := range dbTimeline(t, g.store, s.ID) {
		if r.Kind == core.TimelineBackgroundResume && strings.HasPrefix(rowDetail(t, r)["outcome"].(string), "failed") {
			failed++
		}
	}
	if failed != 2 {
		t.Fatalf("%d failed resume intents", failed)
	}
}

// The local API and its client (what an attached desktop and the CLI use)
// resume a dead terminal session and answer the new managed session; a
// session it does not fit answers 409.
func TestAPIResume(t *testing.T) {
	a := newAPIRig(t, rigConfig{seed: []sessions.Session{deadTerminal("")}})
	old := a.inRigCwd(deadTerminal(""))
	ctx := context.Background()
	s, err := a.client.Resume(ctx, old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.ResumedFrom != old.ID || s.Source != sessions.Managed {
		t.Fatalf("answered %+v", s)
	}
	a.wait(s.ID, "the nudge's turn done", inReview)
	if _, err := a.client.Resume(ctx, s.ID); !errors.Is(err, localapi.ErrConflict) {
		t.Fatalf("resuming a managed session: %v", err)
	}
}

// An interactive CLI older than 2.1.224 (no session file: a real process
// named claude, found in the process table) killed mid-tool is Interrupted
// and, with supervisor.resume_terminal_sessions on, resumed in the
// background by the tick: the generic path, end to end through the runtime.
func TestProcessTableSessionKilledMidToolIsResumed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the process table is read from /proc")
	}
	bin := filepath.Join(t.TempDir(), "claude")
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, sleep, 0o755); err != nil {
		t.Fatal(err)
	}
	home := testdir.Short(t, "home")
	g := newRig(t, rigConfig{})
	cli := exec.Command(bin, "120")
	cli.Dir, cli.Env = g.cwd, []string{"HOME=" + home}
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Process.Kill(); cli.Wait() })
	src := &claudeterm.Source{ConfigDir: filepath.Join(home, ".claude"), Notify: watch.Dirs, Poll: time.Minute, TablePoll: 50 * time.Millisecond, TableGrace: time.Nanosecond}
	g.rt.external = []ExternalSource{src}
	tp := src.TranscriptPath(g.cwd, "5e551011-0000-4000-8000-000000000099")
	os.MkdirAll(filepath.Dir(tp), 0o700)
	if err := os.WriteFile(tp, []byte(tPrompt+"\n"+tToolUse+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g.rt.startExternal(ctx)
	s := waitFor(t, g.rt, 5*time.Second, "working from the process table", func(s sessions.Session) bool {
		return s.PID == cli.Process.Pid && s.State == sessions.Working && s.AgentSessionID == "5e551011-0000-4000-8000-000000000099"
	})
	cli.Process.Kill()
	cli.Wait()
	args := filepath.Join(t.TempDir(), "args")
	t.Setenv("FAKE_CLAUDE_ARGS_FILE", args)
	g.agent.setScript(writeFakeScript(t, []fcStep{fcText, fcResult}))
	set := settings.Defaults()
	set.ResumeTerminal = true
	set.AgentCommands = map[string]string{"claude": g.fake}
	// A tick passes over a session whose events are being applied (the
	// observer saying the process went): the loop's next tick takes it,
	// as here (one tick was not enough on a loaded machine).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		g.rt.Tick(ctx, set)
		g.rt.Settle()
		if slices.ContainsFunc(g.rt.Sessions(), func(r sessions.Session) bool { return r.ResumedFrom == s.ID }) || time.Now().After(deadline) {
			break
		}
	}
	checkResumed(t, g, s, args, "supervisor")
	rows := dbTimeline(t, g.store, s.ID)
	if kinds := strings.Join(rowKinds(rows), " "); !strings.Contains(kinds, core.TimelineMarkedInterrupted) {
		t.Fatalf("timeline %s", kinds)
	}
}

// launchRecorder is an agent's launcher that records what it was asked to
// start, then starts the rig's scripted agent (fakeclaude, whatever the
// agent's command setting says).
type launchRecorder struct {
	inner Agent
	fake  string
	got   []StartOptions
}

func (l *launchRecorder) Start(ctx context.Context, o StartOptions) (Process, error) {
	l.got = append(l.got, o)
	o.Command = l.fake
	return l.inner.Start(ctx, o)
}

// The resume names no agent: a Codex terminal session is resumed by the
// codex launcher with its thread id, a Claude one by claude's.
func TestResumeUsesTheSessionsAgentLauncher(t *testing.T) {
	s := deadTerminal("")
	s.Agent, s.AgentSessionID = "codex", "thread-0199"
	g := newRig(t, rigConfig{seed: []sessions.Session{s}})
	s = g.inRigCwd(s)
	codex, claude := &launchRecorder{inner: g.agent, fake: g.fake}, &launchRecorder{inner: g.agent, fake: g.fake}
	g.rt.agents = map[string]Agent{"codex": codex, "claude": claude}
	started, err := g.rt.Resume(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(codex.got) != 1 || len(claude.got) != 0 || codex.got[0].ResumeID != "thread-0199" || codex.got[0].Cwd != g.cwd {
		t.Fatalf("codex launches %+v, claude launches %+v", codex.got, claude.got)
	}
	if started.Agent != "codex" || started.AgentSessionID != "thread-0199" {
		t.Fatalf("started %+v", started)
	}
	g.wait(started.ID, "the nudge's turn done", inReview)
}

// A background resume the supervisor decided is a nudge of the incident's
// budget (the terminal session's); the managed session it starts carries
// that budget on, so a resumed session that keeps dying is nudged only
// what is left of it, then escalated: never the cap again on top (found
// by the soak: resume, then two more nudges, for one incident).
func TestResumedSessionCarriesTheNudgeBudget(t *testing.T) {
	s := deadTerminal("")
	s.NeedsAttention, s.Supervision = false, sessions.Supervision{}
	g := newRig(t, rigConfig{seed: []sessions.Session{s}})
	s = g.inRigCwd(s)
	g.agent.setScript(writeFakeScript(t, []fcStep{fcText, fcExit(1)})) // every process dies mid-turn
	set := settings.Defaults()
	set.ResumeTerminal, set.NudgeCooldown = true, 0
	set.AgentCommands = map[string]string{"claude": g.fake}
	var resumed sessions.Session
	for range 6 {
		g.rt.Tick(context.Background(), set)
		g.rt.Settle()
		for _, x := range g.rt.Sessions() {
			if x.ResumedFrom == s.ID {
				resumed = g.wait(x.ID, "its turn over", func(x sessions.Session) bool { return !x.InTurn })
			}
		}
	}
	if resumed.ID == "" {
		t.Fatal("not resumed")
	}
	nudges := count(rowKinds(dbTimeline(t, g.store, resumed.ID)), core.TimelineNudgeSent)
	if nudges != set.NudgeMaxAttempts || !resumed.NeedsAttention {
		t.Fatalf("one incident: the resume and %d nudges in all (cap %d), attention %v: %s", nudges, set.NudgeMaxAttempts, resumed.NeedsAttention, resumed.Evidence)
	}
}
