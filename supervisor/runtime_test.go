package supervisor

// Runtime tests against real processes: the scripted fakeclaude speaking the
// real stream-json wire format through the real Claude adapter, and a real
// SQLite store.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// TestRuntimeTurnLifecycle: launch → Working → a tool opens and closes →
// the turn completes → WaitingOnUser(review) → Ack → Idle, with the exact
// timeline, persisted (read back from a reopened store).
func TestRuntimeTurnLifecycle(t *testing.T) {
	g := newRig(t, rigConfig{})
	ctx := context.Background()
	s := g.launch("plain", []fcStep{fcBash, fcBashResult, fcText, fcResult})
	if s.State != sessions.Working || !s.InTurn || s.TurnGeneration != 1 || s.PID <= 0 || !s.ProcessAlive {
		t.Fatalf("after Launch: %s in_turn=%t gen=%d pid=%d alive=%t; want Working, turn 1 in flight, a live pid",
			s.State, s.InTurn, s.TurnGeneration, s.PID, s.ProcessAlive)
	}
	// The process's start stamp is kept with its pid, for the orphan
	// reaper after a restart (a pid alone may have been reused by then).
	if p, _ := procscan.Probe(s.PID); s.PIDStart == "" || s.PIDStart != p.Stamp {
		t.Errorf("session's pid_start = %q, want the process's start stamp %q", s.PIDStart, p.Stamp)
	}
	id := s.ID

	done := g.wait(id, "the turn to complete", inReview)
	if done.InTurn || len(done.OpenTools) != 0 || done.AgentSessionID != fakeSessionID || done.TurnGeneration != 1 {
		t.Errorf("completed session: in_turn=%t open=%v agent_session=%q gen=%d", done.InTurn, done.OpenTools, done.AgentSessionID, done.TurnGeneration)
	}
	if want := "turn 1 completed; waiting for review"; done.Evidence != want {
		t.Errorf("evidence = %q, want %q", done.Evidence, want)
	}

	// The published values show the tool opening, then closing, then the review.
	states := g.rec.states(id)
	opened := slices.IndexFunc(states, func(s sessions.Session) bool {
		c, ok := s.OpenTools["toolu_1"]
		return ok && c.Name == "Bash" && s.State == sessions.Working && s.Evidence == "running Bash"
	})
	closed := slices.IndexFunc(states, func(s sessions.Session) bool {
		return s.Evidence == "Bash finished" && len(s.OpenTools) == 0
	})
	review := slices.IndexFunc(states, inReview)
	if opened < 0 || closed < opened || review < closed {
		t.Errorf("published states do not show tool open (%d) < closed (%d) < review (%d)", opened, closed, review)
	}

	acked, err := g.rt.Ack(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if acked.State != sessions.Idle || acked.WaitReason != sessions.NoWait {
		t.Errorf("after Ack: %s (%q), want Idle", acked.State, acked.WaitReason)
	}

	// Graceful stop: the idle process exits on its own.
	if err := g.rt.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := g.store.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(g.dir)
	if err != nil {
		t.Fatal(err)
	}
	g.store = st
	got, err := st.GetSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != sessions.Idle || got.InTurn || got.ProcessAlive || got.TurnGeneration != 1 ||
		got.AgentSessionID != fakeSessionID || got.Name != "plain" || got.Cwd != g.cwd || got.Source != sessions.Managed ||
		got.LastExitCode == nil || *got.LastExitCode != 0 {
		t.Errorf("persisted session = %+v", got)
	}

	rows := dbTimeline(t, st, id)
	wantKinds := []string{"process_started", "prompt_sent", "state_changed", "state_changed", "acknowledged", "state_changed"}
	if got := rowKinds(rows); !slices.Equal(got, wantKinds) {
		t.Fatalf("timeline kinds = %v, want %v", got, wantKinds)
	}
	wantMoves := []string{"idle>working", "working>waiting_on_user:review", "waiting_on_user>idle"}
	if got := stateTransitions(t, rows); !slices.Equal(got, wantMoves) {
		t.Errorf("state changes = %v, want %v", got, wantMoves)
	}
	wantGen := []int64{0, 1, 1, 1, 1, 1}
	for i, r := range rows {
		if r.TurnGeneration != wantGen[i] {
			t.Errorf("row %d (%s) turn_generation = %d, want %d", i, r.Kind, r.TurnGeneration, wantGen[i])
		}
		if m, _ := rowDetail(t, r)["message"].(string); m == "" {
			t.Errorf("row %d (%s) has no message: %s", i, r.Kind, r.Detail)
		}
	}
}

// TestRuntimePermission: a can_use_tool request waits on the user with the
// tool named; the answer reaches the agent and the turn completes.
func TestRuntimePermission(t *testing.T) {
	cases := []struct {
		name     string
		allow    bool
		evidence string
	}{
		{"approved", true, "Bash approved by the user"},
		{"denied", false, "Bash denied by the user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, rigConfig{})
			ctx := context.Background()
			s := g.launch("perm", []fcStep{fcWaitPermission(`{"command":"rm -rf build"}`), fcText, fcResult})
			w := g.wait(s.ID, "the permission request", func(s sessions.Session) bool {
				return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitPermission
			})
			if w.Permission == nil || w.Permission.Tool != "Bash" || !w.InTurn {
				t.Fatalf("waiting session: permission %+v in_turn=%t", w.Permission, w.InTurn)
			}
			if want := "the agent asks permission to use Bash"; w.Evidence != want {
				t.Errorf("evidence = %q, want %q", w.Evidence, want)
			}

			a, err := g.rt.Answer(ctx, s.ID[:8], w.Permission.RequestID, tc.allow, "not now")
			if err != nil {
				t.Fatalf("Answer: %v", err)
			}
			if a.State != sessions.Working || a.Evidence != tc.evidence || a.Permission != nil {
				t.Errorf("after Answer: %s %q permission=%v; want Working %q", a.State, a.Evidence, a.Permission, tc.evidence)
			}
			g.wait(s.ID, "the turn to complete", inReview)

			// fakeclaude answers a denial with an error tool_result and an
			// approval with nothing: what it printed says what it received.
			sawDenial := slices.ContainsFunc(g.rec.states(s.ID), func(s sessions.Session) bool { return s.Evidence == "tool finished" })
			if sawDenial == tc.allow {
				t.Errorf("the agent's answer to allow=%t: denial tool_result seen = %t", tc.allow, sawDenial)
			}

			rows := dbTimeline(t, g.store, s.ID)
			i := slices.IndexFunc(rows, func(r storage.TimelineEvent) bool { return r.Kind == "permission_answered" })
			if i < 0 {
				t.Fatalf("no permission_answered row in %v", rowKinds(rows))
			}
			if d := rowDetail(t, rows[i]); d["allow"] != tc.allow || d["tool"] != "Bash" {
				t.Errorf("permission_answered detail = %v", d)
			}
			wantMoves := []string{"idle>working", "working>waiting_on_user:permission", "waiting_on_user>working", "working>waiting_on_user:review"}
			if got := stateTransitions(t, rows); !slices.Equal(got, wantMoves) {
				t.Errorf("state changes = %v, want %v", got, wantMoves)
			}

			if _, err := g.rt.Answer(ctx, s.ID, "", true, ""); err == nil || !strings.Contains(err.Error(), "no pending permission request") {
				t.Errorf("answering again: %v, want 'no pending permission request'", err)
			}
		})
	}
}

// TestRuntimeSecondPromptSameProcess: Send on a live process between turns
// starts turn 2 on the same process.
func TestRuntimeSecondPromptSameProcess(t *testing.T) {
	g := newRig(t, rigConfig{})
	ctx := context.Background()
	s := g.launch("two turns", []fcStep{fcText, fcResult})
	first := g.wait(s.ID, "turn 1 to complete", inReview)

	sent, err := g.rt.Send(ctx, s.ID[:6], "and now the tests")
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if sent.State != sessions.Working || sent.TurnGeneration != 2 || !sent.InTurn {
		t.Errorf("after Send: %s gen=%d in_turn=%t, want Working turn 2", sent.State, sent.TurnGeneration, sent.InTurn)
	}
	second := g.wait(s.ID, "turn 2 to complete", func(s sessions.Session) bool { return inReview(s) && s.TurnGeneration == 2 })
	if second.PID != first.PID || !second.ProcessAlive {
		t.Errorf("turn 2 ran on pid %d (alive %t), turn 1 on pid %d: want the same live process", second.PID, second.ProcessAlive, first.PID)
	}

	rows := dbTimeline(t, g.store, s.ID)
	var started int
	var prompts []int64
	for _, r := range rows {
		switch r.Kind {
		case "process_started":
			started++
		case "prompt_sent":
			prompts = append(prompts, r.TurnGeneration)
		}
	}
	if started != 1 || !slices.Equal(prompts, []int64{1, 2}) {
		t.Errorf("process_started rows = %d, prompt_sent generations = %v; want 1 and [1 2]", started, prompts)
	}
	if _, err := g.rt.Send(ctx, s.ID, "  "); err == nil {
		t.Error("an empty prompt was accepted")
	}
}

// TestRuntimeSkipsGarbageAndHugeLines: malformed and unknown lines and a
// 50 MB line are skipped and counted, including lines after the last event,
// and the session keeps being decoded to the end of the turn.
func TestRuntimeSkipsGarbageAndHugeLines(t *testing.T) {
	g := newRig(t, rigConfig{})
	s := g.launch("noisy", []fcStep{
		fcRaw("this is not json"),
		fcEmit(`{"type":"mystery_event","session_id":"$SESSION"}`),
		fcBigLine(50 << 20),
		fcText,
		fcResult,
		// Pause so the result is applied before the next line is read:
		// a line skipped after the last event must still be counted.
		fcSleep(300),
		fcRaw("{trailing garbage"),
		fcExit(0),
	})
	done := g.wait(s.ID, "the turn to complete and the process to exit", func(s sessions.Session) bool {
		return inReview(s) && !s.ProcessAlive
	})
	if done.TurnGeneration != 1 || done.AgentSessionID != fakeSessionID {
		t.Errorf("session after the noisy stream: gen=%d agent session %q", done.TurnGeneration, done.AgentSessionID)
	}
	const want = 4 // two garbage lines, the huge line, the trailing line
	if done.SkippedLines != want {
		t.Errorf("SkippedLines = %d, want %d", done.SkippedLines, want)
	}
	got, err := g.store.GetSession(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.SkippedLines != want || !inReview(got) {
		t.Errorf("persisted: skipped %d, %s %q; want %d skipped, in review", got.SkippedLines, got.State, got.WaitReason, want)
	}
}

// TestRuntimeProcessDiesMidTurn: a process that exits or is killed during a
// turn leaves the session Interrupted with the exit as evidence.
func TestRuntimeProcessDiesMidTurn(t *testing.T) {
	cases := []struct {
		name     string
		last     fcStep
		evidence string
		code     int
	}{
		{"exit code 3", fcExit(3), "process exited with code 3 during turn 1", 3},
		{"killed", fcKill, "process exited by signal killed during turn 1", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, rigConfig{})
			s := g.launch("dies", []fcStep{fcText, tc.last})
			got := g.wait(s.ID, "the session to be interrupted", func(s sessions.Session) bool { return s.State == sessions.Interrupted })
			if got.Evidence != tc.evidence {
				t.Errorf("evidence = %q, want %q", got.Evidence, tc.evidence)
			}
			if got.InTurn || got.ProcessAlive || got.LastExitCode == nil || *got.LastExitCode != tc.code {
				t.Errorf("in_turn=%t alive=%t exit=%v; want no turn, dead, code %d", got.InTurn, got.ProcessAlive, got.LastExitCode, tc.code)
			}
			rows := dbTimeline(t, g.store, s.ID)
			if moves := stateTransitions(t, rows); !slices.Equal(moves, []string{"idle>working", "working>interrupted"}) {
				t.Errorf("state changes = %v", moves)
			}
			if m := rowDetail(t, rows[len(rows)-1])["message"]; m != tc.evidence {
				t.Errorf("last row message = %v, want %q", m, tc.evidence)
			}
		})
	}
}

// TestRuntimeUserInterrupt: an interrupt the user asked for ends the turn in
// review, never Interrupted.
func TestRuntimeUserInterrupt(t *testing.T) {
	g := newRig(t, rigConfig{})
	ctx := context.Background()
	s := g.launch("long", []fcStep{fcSleep(60_000), fcText, fcResult})
	// The init line is printed when the turn starts: the agent is now in its
	// silent step.
	g.wait(s.ID, "the agent to start the turn", func(s sessions.Session) bool { return s.AgentSessionID != "" })
	if _, err := g.rt.Interrupt(ctx, s.ID); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	got := g.wait(s.ID, "the aborted turn", inReview)
	if !strings.Contains(got.Evidence, "stopped at your request") {
		t.Errorf("evidence = %q, want it to say the turn stopped at your request", got.Evidence)
	}
	if !got.ProcessAlive || got.InTurn {
		t.Errorf("alive=%t in_turn=%t; want the process alive between turns", got.ProcessAlive, got.InTurn)
	}
	rows := dbTimeline(t, g.store, s.ID)
	if !slices.Contains(rowKinds(rows), "interrupt_requested") {
		t.Errorf("no interrupt_requested row: %v", rowKinds(rows))
	}
	if moves := stateTransitions(t, rows); slices.Contains(moves, "working>interrupted") {
		t.Errorf("a user's stop became Interrupted: %v", moves)
	}
	if _, err := g.rt.Interrupt(ctx, s.ID); err == nil || !strings.Contains(err.Error(), "no turn in flight") {
		t.Errorf("interrupting an idle session: %v", err)
	}
}

// TestRuntimeBootReconciles: sessions persisted by a previous run load
// honestly: a turn in flight becomes Interrupted with one boot_reconciled row
// (which records the state change, so no state_changed row repeats it);
// nothing else changes state and no process is assumed alive.
func TestRuntimeBootReconciles(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	base := func(id string, st sessions.State, inTurn, alive bool) sessions.Session {
		return sessions.Session{ID: id, Agent: "claude", Source: sessions.Managed, State: st, InTurn: inTurn,
			ProcessAlive: alive, PID: 4242, TurnGeneration: 4, Evidence: "before", CreatedAt: t0, UpdatedAt: t0, StateChangedAt: t0}
	}
	permission := base("00000000-0000-4000-8000-000000000002", sessions.WaitingOnUser, true, true)
	permission.WaitReason = sessions.WaitPermission
	permission.Permission = &sessions.Permission{RequestID: "req_1", Tool: "Bash"}
	withTool := base("00000000-0000-4000-8000-000000000001", sessions.Working, true, true)
	withTool.OpenTools = map[string]sessions.OpenCall{"toolu_1": {Name: "Bash", Started: t0}}
	review := base("00000000-0000-4000-8000-000000000004", sessions.WaitingOnUser, false, true)
	review.WaitReason = sessions.WaitReview

	cases := []struct {
		name      string
		s         sessions.Session
		wantState sessions.State
		wantRows  []string
	}{
		{"working with a tool open", withTool, sessions.Interrupted, []string{"boot_reconciled", "marked_interrupted"}},
		{"waiting on a permission mid-turn", permission, sessions.Interrupted, []string{"boot_reconciled", "marked_interrupted"}},
		{"idle with a live process", base("00000000-0000-4000-8000-000000000003", sessions.Idle, false, true), sessions.Idle, nil},
		{"review between turns", review, sessions.WaitingOnUser, nil},
	}
	var seed []sessions.Session
	for _, tc := range cases {
		seed = append(seed, tc.s)
	}
	g := newRig(t, rigConfig{noAgent: true, seed: seed})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem, err := g.rt.Session(tc.s.ID)
			if err != nil {
				t.Fatal(err)
			}
			db, err := g.store.GetSession(context.Background(), tc.s.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []sessions.Session{mem, db} {
				if s.State != tc.wantState || s.ProcessAlive {
					t.Errorf("state %s alive=%t, want %s and no live process", s.State, s.ProcessAlive, tc.wantState)
				}
				if tc.wantState == sessions.Interrupted {
					if want := "turn 4 was in flight when the app last stopped"; s.Evidence != want {
						t.Errorf("evidence %q, want %q", s.Evidence, want)
					}
					if s.InTurn || s.Permission != nil || len(s.OpenTools) != 0 || s.WaitReason != sessions.NoWait {
						t.Errorf("interrupted session still holds turn state: %+v", s)
					}
				} else if s.Evidence != "before" || s.WaitReason != tc.s.WaitReason {
					t.Errorf("untouched session changed: %q %q", s.Evidence, s.WaitReason)
				}
			}
			rows := dbTimeline(t, g.store, tc.s.ID)
			if got := rowKinds(rows); !slices.Equal(got, tc.wantRows) {
				t.Fatalf("timeline = %v, want %v", got, tc.wantRows)
			}
			if len(rows) > 0 {
				d := rowDetail(t, rows[0])
				if d["from"] != tc.s.State.String() || d["to"] != "interrupted" || rows[0].TurnGeneration != 4 {
					t.Errorf("boot_reconciled row: %v gen %d", d, rows[0].TurnGeneration)
				}
			}
		})
	}
}

// TestRuntimeBootReportsUncertainActions: an action whose intent was recorded
// but whose outcome never was is reported once as uncertain and never
// replayed.
func TestRuntimeBootReportsUncertainActions(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	s := sessions.Session{ID: "00000000-0000-4000-8000-0000000000aa", Agent: "claude", State: sessions.Interrupted,
		TurnGeneration: 2, Evidence: "turn 2 aborted", CreatedAt: t0, UpdatedAt: t0}
	g := newRig(t, rigConfig{noAgent: true, seed: []sessions.Session{s}})
	intent := storage.TimelineEvent{SessionID: s.ID, Time: t0, Kind: "nudge_sent", TurnGeneration: 2,
		Detail: json.RawMessage(`{"message":"continuation nudge","action":"nudge","outcome":"pending"}`)}
	intentID, err := g.store.AppendEvent(ctx, intent)
	if err != nil {
		t.Fatal(err)
	}

	// A restart: a second runtime boots on the same store, twice.
	for restart := 1; restart <= 2; restart++ {
		rt := New(Options{Store: g.store, Agents: map[string]Agent{}})
		if err := rt.Boot(ctx); err != nil {
			t.Fatalf("Boot %d: %v", restart, err)
		}
		rows := dbTimeline(t, g.store, s.ID)
		var uncertain []storage.TimelineEvent
		for _, r := range rows {
			switch {
			case r.Kind == "uncertain_action":
				uncertain = append(uncertain, r)
			case r.ID == intentID:
				if out := rowDetail(t, r)["outcome"]; out != "uncertain" {
					t.Errorf("boot %d: intent outcome = %v, want uncertain", restart, out)
				}
			}
		}
		if len(uncertain) != 1 {
			t.Fatalf("boot %d: %d uncertain_action rows, want exactly 1: %v", restart, len(uncertain), rowKinds(rows))
		}
		d := rowDetail(t, uncertain[0])
		if d["intent_id"] != float64(intentID) || uncertain[0].TurnGeneration != 2 ||
			!strings.Contains(d["message"].(string), "nudge_sent") || !strings.Contains(d["message"].(string), "not replayed") {
			t.Errorf("boot %d: uncertain_action = %v gen %d", restart, d, uncertain[0].TurnGeneration)
		}
		pending, err := g.store.PendingIntents(ctx)
		if err != nil || len(pending) != 0 {
			t.Errorf("boot %d: pending intents after boot: %v, %v", restart, pending, err)
		}
		if got, _ := rt.Session(s.ID); got.State != sessions.Interrupted || got.TurnGeneration != 2 {
			t.Errorf("boot %d: session %s gen %d; the report must not change it", restart, got.State, got.TurnGeneration)
		}
	}
}

// TestRuntimeGracefulShutdown: a graceful quit closes the agent's input and
// waits: the turn in flight finishes, the process exits on its own, and the
// session ends in review, not Interrupted.
func TestRuntimeGracefulShutdown(t *testing.T) {
	g := newRig(t, rigConfig{})
	s := g.launch("busy", []fcStep{fcSleep(1500), fcText, fcResult})
	if !s.InTurn {
		t.Fatal("no turn in flight after Launch")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := g.rt.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// Shutdown returned: the process has exited and every event is applied.
	got, err := g.rt.Session(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !inReview(got) || got.ProcessAlive || got.LastExitCode == nil || *got.LastExitCode != 0 {
		t.Fatalf("after Shutdown: %s (%q) alive=%t exit=%v: %s; want review, exited 0 on its own",
			got.State, got.WaitReason, got.ProcessAlive, got.LastExitCode, got.Evidence)
	}
	db, err := g.store.GetSession(context.Background(), s.ID)
	if err != nil || !inReview(db) || db.ProcessAlive {
		t.Errorf("persisted after Shutdown: %s %q alive=%t (%v)", db.State, db.WaitReason, db.ProcessAlive, err)
	}
	moves := stateTransitions(t, dbTimeline(t, g.store, s.ID))
	if !slices.Equal(moves, []string{"idle>working", "working>waiting_on_user:review"}) {
		t.Errorf("state changes = %v", moves)
	}
}

// TestRuntimeShutdownGivesUpAtDeadline: when the caller stops waiting (a
// second Ctrl-C), Shutdown returns an error saying what it left running.
func TestRuntimeShutdownGivesUpAtDeadline(t *testing.T) {
	g := newRig(t, rigConfig{})
	g.launch("very long", []fcStep{fcSleep(60_000), fcText, fcResult})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := g.rt.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 agent process") {
		t.Fatalf("Shutdown = %v, want a deadline error naming 1 agent process", err)
	}
}

// TestRuntimeWriteFailuresLoseNothing: while the store refuses writes the
// session lives on in memory; once writes succeed again every timeline row
// recorded meanwhile is stored, in order, exactly once.
func TestRuntimeWriteFailuresLoseNothing(t *testing.T) {
	cases := []struct {
		name string
		// failNext fails that many writes; failAll fails all of them until
		// the turn completed, then flushes with a tick.
		failNext int
		failAll  bool
	}{
		{"the next write flushes", 2, false},
		{"the tick flushes", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var fs *failingStore
			g := newRig(t, rigConfig{wrap: func(st *storage.Store) Store {
				fs = &failingStore{Store: st}
				return fs
			}})
			fs.mu.Lock()
			fs.failNext, fs.failAll = tc.failNext, tc.failAll
			fs.mu.Unlock()

			s := g.launch("full disk", []fcStep{fcBash, fcBashResult, fcText, fcResult})
			g.wait(s.ID, "the turn to complete", inReview)
			if fs.failures() == 0 {
				t.Fatal("no write failed: the test did not test anything")
			}
			if tc.failAll {
				if _, err := g.store.GetSession(ctx, s.ID); !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("the session reached the database while writes fail: %v", err)
				}
				fs.set(false)
				set, err := testSettings.On(g.store).LoadSettings(ctx)
				if err != nil {
					t.Fatal(err)
				}
				g.rt.Tick(ctx, set)
				g.rt.Settle() // the tick hands the retry to the writer
			} else {
				// A burst may fail as a whole: the next change written
				// carries everything still unsaved before it.
				if _, err := g.rt.Ack(ctx, s.ID); err != nil {
					t.Fatal(err)
				}
			}

			g.rec.catchUp(t, g.rt.Bus().Cursor())
			published := g.rec.rows(s.ID)
			stored := dbTimeline(t, g.store, s.ID)
			if len(stored) != len(published) {
				t.Fatalf("stored %d rows %v, published %d %v", len(stored), rowKinds(stored), len(published), rowKinds(published))
			}
			for i := range stored {
				p, d := published[i], stored[i]
				if p.Kind != d.Kind || p.TurnGeneration != d.TurnGeneration || !p.Time.Equal(d.Time) || string(p.Detail) != string(d.Detail) {
					t.Errorf("row %d: stored %s gen %d %s, published %s gen %d %s", i, d.Kind, d.TurnGeneration, d.Detail, p.Kind, p.TurnGeneration, p.Detail)
				}
			}
			db, err := g.store.GetSession(ctx, s.ID)
			mem, _ := g.rt.Session(s.ID)
			if err != nil || db.State != mem.State || db.WaitReason != mem.WaitReason || !db.UpdatedAt.Equal(mem.UpdatedAt) {
				t.Errorf("stored session: %s %q (%v), want it as in memory: %s %q", db.State, db.WaitReason, err, mem.State, mem.WaitReason)
			}
		})
	}
}

// discardWrites is a store whose session writes succeed at once without
// storing anything, so the runtime can change sessions as fast as it can.
type discardWrites struct{ *storage.Store }

func (discardWrites) SaveSessionWithEvents(context.Context, sessions.Session, []storage.TimelineEvent) error {
	return nil
}

func (discardWrites) SaveBatch(_ context.Context, items []storage.BatchItem) ([][]int64, error) {
	return make([][]int64, len(items)), nil
}

// TestRuntimeSnapshotNeverOlderThanAChange: a snapshot published while
// sessions change is never older than a change published before it (a
// subscriber replacing its view with the snapshot would go back in time).
func TestRuntimeSnapshotNeverOlderThanAChange(t *testing.T) {
	s := seedSession("abab0000-0000-4000-8000-000000000001", time.Now().UTC())
	g := newRig(t, rigConfig{noAgent: true, seed: []sessions.Session{s},
		wrap: func(st *storage.Store) Store { return discardWrites{st} }})
	ctx := context.Background()
	// Bounded so the recorder's queue cannot overflow: about 2 messages per
	// Ack, one per snapshot.
	const acks = 5000
	acked := make(chan struct{})
	go func() {
		defer close(acked)
		for range acks {
			if _, err := g.rt.Ack(ctx, s.ID); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	// At most one snapshot per Ack, so the recorder's queue (1<<16) holds
	// everything however slow the Acks are on a loaded machine.
	published := 0
	for done := false; !done; {
		select {
		case <-acked:
			done = true
		default:
		}
		if published < acks || done {
			g.rt.PublishSnapshot()
			published++
		} else {
			<-acked
			done = true
		}
	}
	g.rec.catchUp(t, g.rt.Bus().Cursor())

	var latest time.Time
	snapshots := 0
	for _, m := range g.rec.messages() {
		switch m.Type {
		case localapi.MsgSession:
			latest = m.Session.UpdatedAt
		case localapi.MsgSnapshot:
			snapshots++
			if got := m.Sessions[0].UpdatedAt; got.Before(latest) {
				t.Fatalf("snapshot at seq %d holds the session as of %v, older than a change already published (%v)",
					m.Cursor.Seq, got.Format(time.StampNano), latest.Format(time.StampNano))
			}
		}
	}
	if snapshots != published {
		t.Errorf("recorded %d snapshots, published %d", snapshots, published)
	}
}

// TestStuckAgentLeavesTheAppAnswering is the fault of an agent that stops
// reading its stdin while a 4 MB prompt is sent to it: the sender gets the
// fault after the write deadline, and meanwhile the session list, the
// health endpoint and the watchdog all keep answering; afterwards the
// session shows the fault in its state and timeline.
func TestStuckAgentLeavesTheAppAnswering(t *testing.T) {
	g := newAPIRig(t, rigConfig{})
	g.rt.writeTimeout = 2 * time.Second
	s := g.launch("wedged",
		[]fcStep{fcText, {"stop_reading": true}, fcSleep(600_000)})
	g.wait(s.ID, "the first turn running", func(s sessions.Session) bool {
		return s.State == sessions.Working && s.AgentSessionID != ""
	})
	ctx := context.Background()

	big := strings.Repeat("x", 4<<20)
	sent := make(chan error, 1)
	go func() {
		_, err := g.client.Send(ctx, s.ID, big)
		sent <- err
	}()
	// While the write is blocked on the full pipe: every reader answers at
	// once, and a tick completes.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		opCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		if _, err := g.client.Sessions(opCtx); err != nil {
			t.Fatalf("ls while the agent is stuck: %v", err)
		}
		h, err := g.client.Health(opCtx)
		if err != nil {
			t.Fatalf("health while the agent is stuck: %v", err)
		}
		if h.Status != "ok" {
			t.Fatalf("health status %q while the agent is stuck", h.Status)
		}
		tickDone := make(chan struct{})
		go func() { g.rt.Tick(opCtx, settings.Defaults()); close(tickDone) }()
		select {
		case <-tickDone:
		case <-opCtx.Done():
			t.Fatal("a tick blocked while an agent's stdin was full")
		}
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case err := <-sent:
		t.Fatalf("the send returned before its deadline: %v", err)
	default:
	}

	err := <-sent
	if err == nil || !errors.Is(err, localapi.ErrConflict) || !strings.Contains(err.Error(), "stopped reading its input") {
		t.Fatalf("send to a stuck agent: %v, want a conflict saying it stopped reading its input", err)
	}
	got := g.wait(s.ID, "the fault shown", func(s sessions.Session) bool { return s.State == sessions.Errored })
	if !strings.Contains(got.Evidence, "stopped reading its input") {
		t.Errorf("evidence %q does not say the agent stopped reading its input", got.Evidence)
	}
	g.rt.Settle()
	if kinds := rowKinds(dbTimeline(t, g.store, s.ID)); !slices.Contains(kinds, "input_blocked") {
		t.Errorf("timeline %v has no input_blocked row", kinds)
	}
	// The wedged process was stopped.
	g.wait(s.ID, "the wedged process stopped", func(s sessions.Session) bool { return !s.ProcessAlive })
}

// TestLaunchFailureIsReportedByNew: an agent that dies before `new`
// returns (here: it closes its input and exits 1 with a fatal message on
// stderr) makes Launch say so — the exit code and the sanitized last stderr
// line — instead of "the agent's input is closed". Secrets in that line are
// redacted, and raw stderr never reaches the log.
func TestLaunchFailureIsReportedByNew(t *testing.T) {
	var logged strings.Builder
	var logMu sync.Mutex
	g := newRig(t, rigConfig{logger: slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, nil))})
	path := filepath.Join(t.TempDir(), "script.json")
	b, _ := json.Marshal(map[string]any{
		"startup": []fcStep{
			{"stderr": "loading plugins token=sk-live-abcdefgh12345678"},
			{"close_stdin": true},
			{"stderr": "fatal: cannot start (bad install) key sk-ant-api03-SECRETSECRETSECRET"},
			fcSleep(200), fcExit(1)},
		"turns": [][]fcStep{{fcText, fcResult}},
	})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	g.agent.setScript(path)
	// A first prompt larger than the pipe's buffer, so the write is still
	// in progress when the agent closes its input and dies (deterministic).
	_, err := g.rt.Launch(context.Background(), localapi.LaunchRequest{Cwd: g.cwd, Name: "broken", Prompt: strings.Repeat("p", 1<<20)})
	if err == nil {
		t.Fatal("Launch of an agent that died at start succeeded")
	}
	want := "claude exited with code 1 before its first turn: fatal: cannot start (bad install) key [redacted]"
	if err.Error() != want || !errors.Is(err, localapi.ErrConflict) {
		t.Errorf("Launch error %q (conflict %t), want %q", err, errors.Is(err, localapi.ErrConflict), want)
	}
	g.rt.Settle()
	logMu.Lock()
	defer logMu.Unlock()
	for _, secret := range []string{"SECRETSECRET", "abcdefgh12345678", "loading plugins"} {
		if strings.Contains(logged.String(), secret) {
			t.Errorf("the log holds raw agent stderr (%q):\n%s", secret, logged.String())
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestBootSkipsUnreadableSessions: a stored session this build cannot read
// (a state written by a newer build) does not stop the app from starting:
// the others load, the bad one is named in the log and left untouched.
func TestBootSkipsUnreadableSessions(t *testing.T) {
	good := seedSession("aaaa0000-0000-4000-8000-000000000001", time.Now().UTC())
	var logged strings.Builder
	var logMu sync.Mutex
	dir := testdir.Short(t, "ss")
	st, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.SaveSession(ctx, good); err != nil {
		t.Fatal(err)
	}
	bad := seedSession("bbbb0000-0000-4000-8000-000000000002", time.Now().UTC())
	if err := st.SaveSession(ctx, bad); err != nil {
		t.Fatal(err)
	}
	// As a newer build would have written it, through a second connection.
	db, err := sql.Open("sqlite", st.Path())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE sessions SET data = json_set(data, '$.state', 'hibernating') WHERE id = ?`, bad.ID); err != nil {
		t.Fatal(err)
	}
	db.Close()
	rt := New(Options{Store: st, Logger: slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, nil))})
	if err := rt.Boot(ctx); err != nil {
		t.Fatalf("Boot with one unreadable session: %v", err)
	}
	if list := rt.Sessions(); len(list) != 1 || list[0].ID != good.ID {
		t.Fatalf("sessions after boot: %v, want only the readable one", list)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logged.String(), bad.ID) {
		t.Errorf("the log does not name the unreadable session:\n%s", logged.String())
	}
}

// TestLaunchFailureAfterNewReturned: an agent that dies before its first
// event, after `new` already returned, is a launch failure: Errored with
// its exit code and sanitized stderr line, escalated at the first tick,
// never nudged.
func TestLaunchFailureAfterNewReturned(t *testing.T) {
	g := newRig(t, rigConfig{})
	path := filepath.Join(t.TempDir(), "script.json")
	b, _ := json.Marshal(map[string]any{
		"startup": []fcStep{fcSleep(300), {"stderr": "fatal: cannot start (bad install)"}, fcExit(1)},
		"turns":   [][]fcStep{{fcText, fcResult}},
	})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	g.agent.setScript(path)
	s, err := g.rt.Launch(context.Background(), localapi.LaunchRequest{Cwd: g.cwd, Name: "bad install", Prompt: "hello"})
	if err != nil {
		t.Fatalf("Launch returned %v before the agent died", err)
	}
	got := g.wait(s.ID, "the launch failure", func(s sessions.Session) bool { return s.State == sessions.Errored })
	if got.Failure.Kind != sessions.Launch || !strings.Contains(got.Failure.Message, "fatal: cannot start (bad install)") ||
		!strings.Contains(got.Evidence, "code 1") {
		t.Fatalf("failure %+v, evidence %q; want a launch failure with the stderr line and the exit code", got.Failure, got.Evidence)
	}
	ctx := context.Background()
	set := settings.Defaults()
	for range 3 {
		g.rt.Tick(ctx, set)
		g.rt.Settle()
	}
	after, _ := g.rt.Session(s.ID)
	if !after.NeedsAttention {
		t.Errorf("not escalated: %q", after.Evidence)
	}
	kinds := rowKinds(dbTimeline(t, g.store, s.ID))
	if n := strings.Count(strings.Join(kinds, " "), core.TimelineEscalated); n != 1 || slices.Contains(kinds, core.TimelineNudgeSent) {
		t.Errorf("timeline %v: want exactly one escalation and no nudge", kinds)
	}
}

func TestProcessStartedText(t *testing.T) {
	tests := []struct {
		pid  int
		how  string
		want string
	}{
		{4242, "started", "claude process 4242 started in /w"},
		{4242, "resumed session abc", "claude process 4242 resumed session abc in /w"},
		{0, "started", "claude started in /w (its process starts with each turn)"},
	}
	for _, tt := range tests {
		if got := processStartedText("claude", tt.pid, tt.how, "/w"); got != tt.want {
			t.Errorf("processStartedText(%d, %q) = %q, want %q", tt.pid, tt.how, got, tt.want)
		}
	}
}

// TestLaunchNamingNoAgent: a request that names no agent launches the
// default the runtime was given (the registry's, from the root), and is
// refused as invalid when it was given none: the runtime names no agent.
func TestLaunchNamingNoAgent(t *testing.T) {
	g := newRig(t, rigConfig{noAgent: true})
	for _, tc := range []struct {
		name         string
		defaultAgent string
		want         string
	}{
		{"no default", "", "names no agent (known: claude)"},
		{"a default it does not know", "codex", `unknown agent "codex" (known: claude)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := New(Options{Store: g.store, Agents: map[string]Agent{"claude": g.agent}, DefaultAgent: tc.defaultAgent})
			_, err := rt.Launch(context.Background(), localapi.LaunchRequest{Cwd: g.cwd, Prompt: "hi"})
			if !errors.Is(err, localapi.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Launch = %v, want an invalid request saying %q", err, tc.want)
			}
		})
	}
}
