package supervisor

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// sonnetOutput is a usage report of n output tokens of a model the built-in
// table prices at $15 per million output tokens.
func sonnetOutput(n int64) sessions.Event {
	return sessions.Event{Kind: sessions.EvActivity, Usage: &sessions.UsageReport{
		Model: "claude-sonnet-4-5-20250929", Tokens: sessions.Tokens{Output: n}, Mode: sessions.UsageDelta}}
}

// A session that crosses the daily cost budget and then dies mid-turn is
// not nudged: it is escalated once, naming the budget, for hours of ticks;
// with the budget raised, recovery applies again at the next tick. Today's
// usage reaches the views (the tray's header) as it grows.
func TestLoopDailyCostBudgetStopsRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, func(s *settings.Settings) { s.Budgets.DailyCost = 1_000_000 }) // $1.00
		defer h.stop()
		id, p := h.launchRunning()

		// $1.50 of output, under a $1.00 daily budget: the session runs on,
		// told once that it will not be recovered.
		h.until(7 * time.Second)
		h.emit(p, sonnetOutput(100_000))
		h.until(15*time.Second + 1*time.Second)
		s := h.wantState(id, sessions.Working, sessions.NoWait)
		const reached = "daily cost budget $1.00 reached ($1.50)"
		if s.Supervision.Budget != reached || !s.NeedsAttention {
			t.Fatalf("past the budget: supervision %+v, needs attention %v", s.Supervision, s.NeedsAttention)
		}
		if rows := h.store.rowsOf(id, core.TimelineEscalated); len(rows) != 1 || !strings.Contains(rowField(rows[0], "message"), reached) {
			t.Fatalf("escalation rows %+v, want one naming %q", rows, reached)
		}
		if u := h.messages(localapi.MsgUsage); len(u) == 0 || u[len(u)-1].Usage.Cost != 1_500_000 || u[len(u)-1].Usage.Tokens.Output != 100_000 {
			t.Fatalf("today's usage published as %+v, want $1.50 and 100000 output tokens", u)
		}

		// The process dies mid-turn: no nudge, no second escalation, for hours.
		h.until(time.Minute + 7*time.Second)
		p.exit(1, "")
		synctest.Wait()
		h.until(3 * time.Hour)
		h.wantState(id, sessions.Interrupted, sessions.NoWait)
		if got := callsOf(h.agent.calls(), "prompt"); len(got) != 1 {
			t.Fatalf("%d prompts past the budget, want only the first", len(got)-1)
		}
		h.wantEscalations(1)
		if got := len(h.store.rowsOf(id, core.TimelineBudgetReached)); got != 1 {
			t.Fatalf("%d budget_reached rows, want 1", got)
		}

		// The budget raised: the next tick says no budget stops it; the
		// escalation stays the user's to acknowledge, and the next turn
		// that dies is nudged.
		h.store.setSettings(func(s *settings.Settings) { s.Budgets.DailyCost = 10_000_000 })
		h.until(3*time.Hour + 16*time.Second)
		if got := len(h.store.rowsOf(id, core.TimelineBudgetCleared)); got != 1 || h.session(id).Supervision.Budget != "" {
			t.Fatalf("%d budget_cleared rows, supervision %+v; want it cleared once", got, h.session(id).Supervision)
		}
		dieAndWantNudge(t, h, id, 3*time.Hour+time.Minute)
	})
}

// A recovery budget counts the automatic recoveries the loop dispatched:
// one nudge a day allowed, the second interruption is escalated naming it
// (not the nudge cap, which would allow a second nudge).
func TestLoopSessionRecoveryBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, func(s *settings.Settings) { s.Budgets.SessionRecoveries = 1; s.NudgeCooldown = 0 })
		defer h.stop()
		id, p := h.launchRunning()
		h.until(7 * time.Second)
		p.exit(1, "")
		synctest.Wait()
		h.until(16 * time.Second) // the tick nudges: a resumed process
		next := h.agent.proc(1)
		if next == nil {
			t.Fatal("the first interruption was not recovered")
		}
		h.until(22 * time.Second)
		h.emit(next, sessions.Event{Kind: sessions.EvActivity})
		next.exit(1, "")
		synctest.Wait()
		h.until(time.Hour)
		s := h.wantState(id, sessions.Interrupted, sessions.NoWait)
		const reached = "session recovery budget 1 reached (1 automatic recoveries today)"
		if s.Supervision.Budget != reached || !s.NeedsAttention {
			t.Fatalf("supervision %+v, needs attention %v; want stopped for %q", s.Supervision, s.NeedsAttention, reached)
		}
		if got := callsOf(h.agent.calls(), "prompt"); len(got) != 2 {
			t.Fatalf("%d prompts, want the first and one nudge", len(got))
		}
		h.wantEscalations(1)
	})
}

// The user's switch: a session switched off is not nudged when it dies,
// and is escalated saying so; switched on again, the next interruption is
// nudged. Each switch is a timeline row.
func TestLoopRecoverySwitch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		id, p := h.launchRunning()
		ctx := context.Background()
		off, err := h.rt.SetRecovery(ctx, id, false)
		if err != nil || !off.RecoveryOff {
			t.Fatalf("SetRecovery(off) = %+v, %v", off.RecoveryOff, err)
		}
		h.until(7 * time.Second)
		p.exit(1, "")
		synctest.Wait()
		h.until(time.Hour)
		h.wantState(id, sessions.Interrupted, sessions.NoWait)
		if got := callsOf(h.agent.calls(), "prompt"); len(got) != 1 {
			t.Fatalf("%d nudges with recovery off", len(got)-1)
		}
		esc := h.store.rowsOf(id, core.TimelineEscalated)
		if len(esc) != 1 || !strings.Contains(rowField(esc[0], "message"), "recovery is switched off for this session") {
			t.Fatalf("escalations %+v", esc)
		}
		on, err := h.rt.SetRecovery(ctx, id, true)
		if err != nil || on.RecoveryOff {
			t.Fatalf("SetRecovery(on) = %+v, %v", on.RecoveryOff, err)
		}
		// Switching to what is set changes nothing and records nothing.
		if _, err := h.rt.SetRecovery(ctx, id, true); err != nil {
			t.Fatal(err)
		}
		if got := len(h.store.rowsOf(id, TimelineRecoverySwitched)); got != 2 {
			t.Fatalf("%d recovery_switched rows, want 2", got)
		}
		dieAndWantNudge(t, h, id, time.Hour+time.Minute)
	})
}

// dieAndWantNudge acknowledges the session, sends a prompt at fake time at
// (a new turn on a resumed process), has that process die mid-turn, and
// wants the next tick to nudge it.
func dieAndWantNudge(t *testing.T, h *loopHarness, id string, at time.Duration) {
	t.Helper()
	ctx := context.Background()
	h.until(at + 7*time.Second)
	if _, err := h.rt.Ack(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := h.rt.Send(ctx, id, "go on"); err != nil {
		t.Fatal(err)
	}
	before := len(callsOf(h.agent.calls(), "prompt"))
	p := h.agent.proc(-1)
	h.emit(p, sessions.Event{Kind: sessions.EvActivity})
	p.exit(1, "")
	synctest.Wait()
	h.until(at + 31*time.Second)
	got := callsOf(h.agent.calls(), "prompt")
	if len(got) != before+1 || got[before].Text != core.NudgeText {
		t.Fatalf("prompts %+v, want the user's and then a nudge", got)
	}
}

// The usage history is written with the session to the real SQLite file:
// what the session's whole-life usage grew by, per model, on today's local
// day. After a restart (the file reopened, a new runtime booted) today's
// total is read back, so the tray's header and the daily budgets survive it.
func TestUsageHistorySurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		st, err := storage.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		ag := &fakeAgent{}
		rt := New(Options{Store: st, Agents: map[string]Agent{"claude": ag}, DefaultAgent: "claude", Connectivity: unknownConnectivity})
		if err := rt.Boot(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, err := rt.Launch(context.Background(), localapi.LaunchRequest{Agent: "claude", Cwd: os.TempDir(), Prompt: "go"})
		if err != nil {
			t.Fatal(err)
		}
		p := ag.proc(0)
		p.events <- sonnetOutput(100_000)
		p.events <- sessions.Event{Kind: sessions.EvMetrics, Usage: &sessions.UsageReport{Model: "mystery-model-9", Tokens: sessions.Tokens{Input: 10}}}
		// Spent before the app watched (a transcript read when found):
		// the session's, but no day's.
		p.events <- sessions.Event{Kind: sessions.EvMetrics, Usage: &sessions.UsageReport{Model: "claude-opus-4-1", Tokens: sessions.Tokens{Output: 777}, Backfill: true}}
		p.events <- sessions.Event{Kind: sessions.EvTurnCompleted}
		synctest.Wait()
		p.exit(0, "")
		synctest.Wait()
		if err := rt.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}

		st, err = storage.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		rows, err := st.UsageSince(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		day := core.Day(time.Now())
		want := []storage.UsageRow{
			{SessionID: s.ID, Day: day, Model: "claude-sonnet-4-5-20250929", Tokens: sessions.Tokens{Output: 100_000}},
			{SessionID: s.ID, Day: day, Model: "mystery-model-9", Tokens: sessions.Tokens{Input: 10}},
		}
		if !reflect.DeepEqual(rows, want) {
			t.Fatalf("usage history\n got %+v\nwant %+v", rows, want)
		}
		rt = New(Options{Store: st, Connectivity: unknownConnectivity})
		if err := rt.Boot(context.Background()); err != nil {
			t.Fatal(err)
		}
		sub := rt.Subscribe(4, false)
		defer rt.Bus().Unsubscribe(sub)
		snap := <-sub.C
		if snap.Usage == nil || snap.Usage.Tokens.Output != 100_000 || snap.Usage.Tokens.Input != 10 || !snap.Usage.Unknown {
			t.Fatalf("today after the restart: %+v", snap.Usage)
		}
		if got, err := rt.Session(s.ID); err != nil || got.Usage.Total["claude-opus-4-1"].Output != 777 {
			t.Errorf("the backfill is not in the session's total: %+v, %v", got.Usage, err)
		}
		// A session booted with its usage records nothing again.
		rt.mu.Lock()
		e := rt.sess[s.ID]
		again := rt.usageRowsLocked(e, e.s, time.Now())
		rt.mu.Unlock()
		if again != nil {
			t.Fatalf("a booted session's usage recorded again: %+v", again)
		}
		if err := rt.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
