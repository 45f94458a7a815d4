package supervisor

import (
	"context"
	"fmt"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
	"sync/atomic"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
)

// The tick's total cost with 1,000 live sessions: probe, Reconcile, and for
// the sessions something happens to, the writes, the bus messages and the
// dispatch to the (fake) agent. Two mixes:
//
//   - steady: nothing is due (the common tick: quiet turns, open tools,
//     waits, reviews, idles, holds counting down, escalated incidents);
//   - transitioning: the same, with 5% of the sessions moving every tick (a
//     third each: Working → Suspect; a hard stall → interrupt; Interrupted →
//     nudge). Those are reset to their pre-transition value before each tick
//     (a plain struct copy, part of the measured time and negligible).
//
// BenchmarkTick1000 uses the in-memory store (the loop's own cost);
// BenchmarkTick1000SQLite the real store in b.TempDir(), so the difference
// per write is what persistence costs per transition.

const (
	benchSessions = 1000
	// benchTransitionEvery makes 1 in 20 sessions (5%) transition.
	benchTransitionEvery = 20
)

func BenchmarkTick1000(b *testing.B) {
	for _, transitioning := range []bool{false, true} {
		b.Run(benchMixName(transitioning), func(b *testing.B) {
			st := newMemStore(nil)
			st.keepRows = false // count, don't keep: b.N ticks write a lot
			benchTickRuntime(b, st, benchSessions, transitioning)
		})
	}
}

// BenchmarkTickSQLite is the tick over the real store at 1,000 and 10,000
// sessions. Each op is one tick plus the writer's round for what it
// decided (Settle), so ns/op includes persistence; lock-µs/tick is how long
// the tick held the runtime's lock — decisions only, with no SQLite or
// process I/O inside it.
func BenchmarkTickSQLite(b *testing.B) {
	for _, n := range []int{benchSessions, 10 * benchSessions} {
		for _, transitioning := range []bool{false, true} {
			b.Run(fmt.Sprintf("%d/%s", n, benchMixName(transitioning)), func(b *testing.B) {
				st, err := storage.Open(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				benchTickRuntime(b, st, n, transitioning)
			})
		}
	}
}

func benchMixName(transitioning bool) string {
	if transitioning {
		return fmt.Sprintf("transitioning-%d%%", 100/benchTransitionEvery)
	}
	return "steady"
}

// countingStore counts the writes a tick makes, whatever the store.
type countingStore struct {
	Store
	saves, appends, outcomes atomic.Int64
	batches, rows            atomic.Int64
}

func (c *countingStore) SaveSessionWithEvents(ctx context.Context, s sessions.Session, evs []storage.TimelineEvent) error {
	c.saves.Add(1)
	return c.Store.SaveSessionWithEvents(ctx, s, evs)
}

func (c *countingStore) AppendEvent(ctx context.Context, ev storage.TimelineEvent) (int64, error) {
	c.appends.Add(1)
	return c.Store.AppendEvent(ctx, ev)
}

func (c *countingStore) SetEventOutcome(ctx context.Context, id int64, outcome string) error {
	c.outcomes.Add(1)
	return c.Store.SetEventOutcome(ctx, id, outcome)
}

// SaveBatch counts a batch as one write per item (what the store did
// before batching) and passes it on when the store batches.
func (c *countingStore) SaveBatch(ctx context.Context, items []storage.BatchItem) ([][]int64, error) {
	c.batches.Add(1)
	for _, it := range items {
		c.rows.Add(int64(len(it.Events)))
		if it.Session != nil {
			c.saves.Add(1)
		} else {
			c.appends.Add(int64(len(it.Events)))
		}
		if it.OutcomeID != 0 {
			c.outcomes.Add(1)
		}
	}
	if bs, ok := c.Store.(batchStore); ok {
		return bs.SaveBatch(ctx, items)
	}
	return (&writer{store: c.Store}).write(ctx, toReqs(items))
}

func toReqs(items []storage.BatchItem) []writeReq {
	out := make([]writeReq, len(items))
	for i, it := range items {
		out[i] = writeReq{item: it}
	}
	return out
}

func (c *countingStore) writes() int64 { return c.saves.Load() + c.appends.Load() + c.outcomes.Load() }

// benchSession is session i of the mix, relative to now. Every session has a
// live (fake) process, so the probe says alive.
func benchSession(i int, now time.Time, transitioning bool) sessions.Session {
	s := sessions.Session{
		ID: fmt.Sprintf("bench-%04d", i), Agent: "claude", AgentSessionID: fmt.Sprintf("agent-%04d", i),
		Source: sessions.Managed, PID: 10000 + i, ProcessAlive: true,
		State: sessions.Working, Evidence: "stream active", TurnGeneration: 3, InTurn: true,
		TurnStarted: now.Add(-time.Hour), LastEventAt: now.Add(-time.Minute),
		StateChangedAt: now.Add(-time.Hour), CreatedAt: now.Add(-2 * time.Hour), UpdatedAt: now.Add(-time.Minute),
	}
	if transitioning && i%benchTransitionEvery == 0 {
		switch (i / benchTransitionEvery) % 3 {
		case 0: // silent past stall_suspect_minutes → Suspect
			s.LastEventAt = now.Add(-11 * time.Minute)
		case 1: // Suspect past stall_hard_minutes → interrupt
			s.State, s.Evidence = sessions.Suspect, "20 min silent, pid alive"
			s.LastEventAt = now.Add(-151 * time.Minute)
		case 2: // a turn that died → the continuation nudge, on the live process
			s.State, s.Evidence, s.InTurn = sessions.Interrupted, "turn 3 aborted by the agent", false
		}
		return s
	}
	switch i % 10 {
	case 0, 1, 2, 3: // a quiet turn, under the threshold
	case 4: // a long tool call, under the relaxed threshold
		s.OpenTools = map[string]sessions.OpenCall{"t": {Name: "Bash", Started: now.Add(-20 * time.Minute)}}
		s.LastEventAt = now.Add(-20 * time.Minute)
	case 5:
		s.State, s.WaitReason, s.Evidence = sessions.WaitingOnUser, sessions.WaitPermission, "the agent asks permission to use Bash"
		s.Permission = &sessions.Permission{RequestID: "r", Tool: "Bash"}
	case 6:
		s.State, s.WaitReason, s.InTurn, s.Evidence = sessions.WaitingOnUser, sessions.WaitReview, false, "turn 3 completed; waiting for review"
	case 7:
		s.State, s.InTurn, s.Evidence = sessions.Idle, false, "agent idle"
	case 8: // a rate-limit hold counting down
		s.State, s.InTurn, s.Evidence = sessions.Recovering, false, "rate limited; continuing at 10:00:00 (attempt 1/5)"
		s.Failure = sessions.Failure{Kind: sessions.RateLimit, RetryAt: now.Add(time.Hour)}
		s.Supervision = sessions.Supervision{Recovery: core.RecoveryRateLimit, NextAttemptAt: now.Add(time.Hour)}
	case 9: // escalated, waiting for the user's ack
		s.State, s.InTurn, s.Evidence = sessions.Interrupted, false, "turn 3 aborted — 2 of 2 continuation nudges spent; needs your attention"
		s.NeedsAttention = true
		s.Nudge = sessions.NudgeBudget{Attempts: 2, LastNudge: now.Add(-time.Hour)}
		s.Supervision = sessions.Supervision{EscalatedGeneration: 3}
	}
	return s
}

// BenchmarkTick1000Budgets is the steady mix with every budget set (none
// reached) and every session's usage on two models: each tick then prices
// every session's whole-life usage and the day's, what the budgets cost
// the tick over BenchmarkTick1000's steady mix.
func BenchmarkTick1000Budgets(b *testing.B) {
	st := newMemStore(nil)
	st.keepRows = false
	benchTickRuntimeWith(b, st, benchSessions, false, true)
}

func benchTickRuntime(b *testing.B, st Store, nSessions int, transitioning bool) {
	benchTickRuntimeWith(b, st, nSessions, transitioning, false)
}

func benchTickRuntimeWith(b *testing.B, st Store, nSessions int, transitioning, budgets bool) {
	ctx := context.Background()
	cs := &countingStore{Store: st}
	agent := &fakeAgent{quiet: true}
	rt := New(Options{Store: cs, Agents: map[string]Agent{"claude": agent}, DefaultAgent: "claude", Connectivity: unknownConnectivity})
	now := time.Now()
	type reset struct {
		e    *entry
		base sessions.Session
	}
	var resets []reset
	for i := range nSessions {
		s := benchSession(i, now, transitioning)
		if budgets {
			s.Usage.Total = sessions.Usage{"claude-sonnet-4-5-20250929": {Input: 10_000, Output: 2_000, CacheRead: 50_000}, "claude-haiku-4-5": {Input: 1_000}}
		}
		// The sessions exist in the store first, as after a Boot: a
		// transition's save is an update, not an insert.
		if err := st.SaveSessionWithEvents(ctx, s, nil); err != nil {
			b.Fatal(err)
		}
		p := newFakeProc(s.PID, nil)
		p.quiet = true
		e := rt.newEntry(s)
		e.proc = p
		rt.sess[s.ID] = e
		if transitioning && i%benchTransitionEvery == 0 {
			resets = append(resets, reset{e, s})
		}
	}
	set := settings.Defaults()
	if budgets {
		set.Budgets = settings.Budgets{SessionCost: 1e12, DailyCost: 1e12, SessionTokens: 1e12, DailyTokens: 1e12, SessionRecoveries: 1e4, DailyRecoveries: 1e4}
		rt.mu.Lock()
		for _, e := range rt.sess {
			rt.ledger.usage[e.s.ID] = e.s.Usage.Total
		}
		rt.mu.Unlock()
	}
	// One tick settles anything the mix did not state exactly (evidence
	// wording), so the measured ticks see the steady part as steady.
	rt.Tick(ctx, set)
	rt.Settle()
	w0, b0, r0 := cs.writes(), cs.batches.Load(), cs.rows.Load()
	var lock, maxHold time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rt.mu.Lock()
		for _, r := range resets {
			r.e.s = r.base
		}
		rt.mu.Unlock()
		rt.Tick(ctx, set)
		lock += time.Duration(rt.health.lockNanos.Load())
		maxHold = max(maxHold, time.Duration(rt.health.maxLockNanos.Load()))
		rt.Settle()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n/float64(nSessions), "ns/session")
	b.ReportMetric(float64(lock.Microseconds())/n, "lock-µs/tick")
	b.ReportMetric(float64(maxHold.Microseconds()), "max-hold-µs")
	b.ReportMetric(float64(len(resets)), "transitions/op")
	b.ReportMetric(float64(cs.writes()-w0)/n, "writes/op")
	b.ReportMetric(float64(cs.batches.Load()-b0)/n, "tx/op")
	b.ReportMetric(float64(cs.rows.Load()-r0)/n, "rows/op")
	if !transitioning && cs.writes() != w0 {
		b.Fatalf("the steady mix wrote %d times: it is not steady", cs.writes()-w0)
	}
}

// BenchmarkDecide is the tick's decision per session alone, as
// reconcileLocked makes it: Reconcile, then whether the session needs a
// write. The change detection is on the hot path of every tick for every
// session, so it must stay a flag, not a comparison of every field.
func BenchmarkDecide(b *testing.B) {
	for _, transitioning := range []bool{false, true} {
		b.Run(benchMixName(transitioning), func(b *testing.B) {
			now := time.Now()
			p := DefaultPolicy()
			probe := core.Probe{Known: true, Alive: true}
			list := make([]sessions.Session, benchSessions)
			for i := range list {
				list[i] = benchSession(i, now, transitioning)
				if !transitioning || i%benchTransitionEvery != 0 {
					// Settled once, as the runtime's first tick would; the
					// transitioning 5% move at every op.
					list[i], _, _, _ = core.Reconcile(list[i], now, p, probe)
				}
			}
			writes := 0
			b.ResetTimer()
			for b.Loop() {
				writes = 0
				for i := range list {
					_, obs, _, changed := core.Reconcile(list[i], now, p, probe)
					if len(obs) > 0 || changed {
						writes++
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(list)), "ns/session")
			b.ReportMetric(float64(writes), "writes/op")
		})
	}
}
