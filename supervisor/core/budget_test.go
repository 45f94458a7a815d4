package core

import (
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
)

func TestOverBudget(t *testing.T) {
	const dollar = pricing.Micros(1_000_000)
	tests := []struct {
		name           string
		session, daily Budget
		spent          Spent
		want           string // the hit's sentence; "" for none
		scope          BudgetScope
		measure        BudgetMeasure
	}{
		{name: "no budget set: never over, whatever was spent",
			spent: Spent{Session: Spend{Cost: 1000 * dollar, Tokens: 1e9, Recoveries: 99}, Day: Spend{Cost: 1000 * dollar}}},
		{name: "under every budget",
			session: Budget{Cost: 10 * dollar, Tokens: 1000, Recoveries: 3}, daily: Budget{Cost: 20 * dollar, Tokens: 5000, Recoveries: 10},
			spent: Spent{Session: Spend{Cost: 9 * dollar, Tokens: 999, Recoveries: 2}, Day: Spend{Cost: 19 * dollar, Tokens: 4999, Recoveries: 9}}},
		{name: "the daily cost budget reached",
			daily: Budget{Cost: 20 * dollar}, spent: Spent{Day: Spend{Cost: 20*dollar + 410_000}},
			want: "daily cost budget $20.00 reached ($20.41)", scope: ScopeDaily, measure: MeasureCost},
		{name: "exactly the limit is reached",
			session: Budget{Tokens: 2_000_000}, spent: Spent{Session: Spend{Tokens: 2_000_000}},
			want: "session token budget 2000000 reached (2000000 tokens)", scope: ScopeSession, measure: MeasureTokens},
		{name: "three recoveries allowed a day: the fourth is refused",
			session: Budget{Recoveries: 3}, spent: Spent{Session: Spend{Recoveries: 3}},
			want: "session recovery budget 3 reached (3 automatic recoveries today)", scope: ScopeSession, measure: MeasureRecoveries},
		{name: "the session's budget is named before the day's",
			session: Budget{Tokens: 10}, daily: Budget{Cost: dollar},
			spent: Spent{Session: Spend{Tokens: 11}, Day: Spend{Cost: 2 * dollar}},
			want:  "session token budget 10 reached (11 tokens)", scope: ScopeSession, measure: MeasureTokens},
		{name: "cost before tokens in one scope",
			daily: Budget{Cost: dollar, Tokens: 10}, spent: Spent{Day: Spend{Cost: dollar, Tokens: 11}},
			want: "daily cost budget $1.00 reached ($1.00)", scope: ScopeDaily, measure: MeasureCost},
		{name: "a daily measure counts the day, not the session",
			daily: Budget{Recoveries: 5}, spent: Spent{Session: Spend{Recoveries: 9}, Day: Spend{Recoveries: 4}}},
		{name: "a session measure counts the session, not the day",
			session: Budget{Cost: dollar}, spent: Spent{Session: Spend{Cost: dollar - 1}, Day: Spend{Cost: 50 * dollar}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hit, over := OverBudget(tt.session, tt.daily, tt.spent)
			if over != (tt.want != "") {
				t.Fatalf("over = %v (%+v), want %q", over, hit, tt.want)
			}
			if !over {
				return
			}
			if hit.String() != tt.want || hit.Scope != tt.scope || hit.Measure != tt.measure {
				t.Fatalf("hit = %q (%v %v), want %q (%v %v)", hit, hit.Scope, hit.Measure, tt.want, tt.scope, tt.measure)
			}
		})
	}
}

func TestBudgetHitKey(t *testing.T) {
	day1 := time.Date(2026, 12, 2, 23, 0, 0, 0, time.Local)
	day2 := day1.Add(2 * time.Hour)
	tests := []struct {
		hit        BudgetHit
		want       string
		sameNextDy bool
	}{
		{BudgetHit{Scope: ScopeSession, Measure: MeasureCost}, "session_cost", true},
		{BudgetHit{Scope: ScopeSession, Measure: MeasureTokens}, "session_token", true},
		{BudgetHit{Scope: ScopeSession, Measure: MeasureRecoveries}, "session_recovery 2026-12-02", false},
		{BudgetHit{Scope: ScopeDaily, Measure: MeasureCost}, "daily_cost 2026-12-02", false},
	}
	for _, tt := range tests {
		if got := tt.hit.Key(day1); got != tt.want {
			t.Errorf("Key = %q, want %q", got, tt.want)
		}
		if same := tt.hit.Key(day1) == tt.hit.Key(day2); same != tt.sameNextDy {
			t.Errorf("%q: the same key the next day = %v, want %v", tt.want, same, tt.sameNextDy)
		}
	}
}

func TestActionRecovers(t *testing.T) {
	for k := ActInterrupt; k.Valid(); k++ {
		want := k == ActCompact || k == ActRetryTurn || k == ActContinue || k == ActNudge || k == ActResume
		if k.Recovers() != want {
			t.Errorf("%v.Recovers() = %v, want %v", k, k.Recovers(), want)
		}
	}
}

// A session past a budget is escalated once, naming the budget, and is not
// recovered; the user's switch stops recovery the same way, with its own
// reason; a budget no longer spent lets recovery act again.
func TestReconcileBudget(t *testing.T) {
	dailyCost := func(p *Policy) { p.DailyBudget = Budget{Cost: 20_000_000} }
	over := Probe{Known: true, Alive: true, Spent: Spent{Day: Spend{Cost: 20_410_000}}}
	overDead := over
	overDead.Alive = false
	const reached = "daily cost budget $20.00 reached ($20.41)"
	namesBudget := func(t *testing.T, out sessions.Session, obs []Observation, acts []Action) {
		t.Helper()
		if !out.NeedsAttention || out.Supervision.Budget != reached || out.Supervision.BudgetKey != "daily_cost 2026-03-14" {
			t.Fatalf("not stopped for the budget: %+v", out.Supervision)
		}
		if !strings.Contains(acts[0].Detail, reached) {
			t.Fatalf("escalation says %q, want the budget named", acts[0].Detail)
		}
	}
	stopped := func(s sessions.Session) sessions.Session {
		s.Supervision.BudgetKey, s.Supervision.Budget = "daily_cost 2026-03-14", reached
		s.NeedsAttention, s.Supervision.EscalatedGeneration = true, s.TurnGeneration
		return s
	}
	yesterday := stopped(interrupted())
	yesterday.Supervision.BudgetKey = "daily_cost 2026-03-13"
	yesterday.NeedsAttention = false // acknowledged
	raised := stopped(interrupted())
	raised.NeedsAttention = false
	off := interrupted()
	off.RecoveryOff = true
	offErr := errored(sessions.RateLimit)
	offErr.RecoveryOff = true
	drain := hold(sessions.RateLimit, RecoveryRateLimit, 1, at(time.Minute))
	idle := working()
	idle.InTurn, idle.State, idle.Evidence = false, sessions.Idle, "nothing in flight"
	idleStale := idle
	idleStale.Supervision.BudgetKey, idleStale.Supervision.Budget = "daily_cost 2026-03-13", "daily cost budget $20.00 reached ($21.00)"
	nudge := func(t *testing.T, _ sessions.Session, _ []Observation, acts []Action) {
		t.Helper()
		if !strings.Contains(acts[0].Detail, "continuation nudge") {
			t.Fatalf("nudge says %q", acts[0].Detail)
		}
	}
	runCases(t, []rcase{
		{name: "interrupted past the daily cost budget: escalated naming it, not nudged", s: interrupted(), now: at(time.Minute),
			policy: dailyCost, probe: overDead, state: sessions.Interrupted,
			obs: []string{TimelineBudgetReached}, acts: []ActionKind{ActEscalate}, check: namesBudget},
		{name: "working past it: escalated once, the turn left alone", s: working(), now: at(time.Minute),
			policy: dailyCost, probe: over, state: sessions.Working,
			obs: []string{TimelineBudgetReached}, acts: []ActionKind{ActEscalate}, check: namesBudget},
		{name: "already stopped for it: nothing again, however long it lasts", s: stopped(interrupted()), now: at(time.Hour),
			policy: dailyCost, probe: overDead, state: sessions.Interrupted, same: true},
		{name: "a rate-limit drain past it: not continued, back to Errored, escalated", s: drain, now: at(2 * time.Minute),
			policy: dailyCost, probe: overDead, state: sessions.Errored,
			obs: []string{TimelineBudgetReached, TimelineStateChanged}, acts: []ActionKind{ActEscalate}, check: namesBudget},
		{name: "an idle session is not told about a day another session spent", s: idle, now: at(time.Minute),
			policy: dailyCost, probe: over, state: sessions.Idle, same: true},
		{name: "stopped yesterday, at rest today and past it again: the marker says today's, no escalation", s: idleStale, now: at(time.Minute),
			policy: dailyCost, probe: over, state: sessions.Idle, obs: []string{TimelineBudgetReached},
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if out.Supervision.BudgetKey != "daily_cost 2026-03-14" || out.Supervision.Budget != reached || out.NeedsAttention {
					t.Fatalf("supervision %+v, needs attention %v", out.Supervision, out.NeedsAttention)
				}
			}},
		{name: "the budget raised: recovery applies again", s: raised, now: at(time.Minute),
			policy: func(p *Policy) { p.DailyBudget = Budget{Cost: 50_000_000} }, probe: overDead, state: sessions.Interrupted,
			obs: []string{TimelineBudgetCleared}, acts: []ActionKind{ActNudge}, check: nudge},
		{name: "a new day's crossing is news again", s: yesterday, now: at(time.Minute),
			policy: dailyCost, probe: overDead, state: sessions.Interrupted,
			obs: []string{TimelineBudgetReached}, acts: []ActionKind{ActEscalate}, check: namesBudget},
		{name: "the user's switch: not nudged, escalated with its reason", s: off, now: at(time.Minute), probe: dead,
			state: sessions.Interrupted, acts: []ActionKind{ActEscalate},
			check: func(t *testing.T, out sessions.Session, _ []Observation, acts []Action) {
				if !strings.Contains(acts[0].Detail, "recovery is switched off for this session") {
					t.Fatalf("escalation says %q", acts[0].Detail)
				}
			}},
		{name: "the user's switch: a rate limit is not drained", s: offErr, now: at(time.Minute), probe: dead,
			state: sessions.Errored, acts: []ActionKind{ActEscalate}},
		{name: "the nudge cap stays as it is under a budget not reached", s: interrupted(), now: at(time.Minute),
			policy: func(p *Policy) { p.DailyBudget = Budget{Cost: 50_000_000}; p.NudgeMaxAttempts = 0 }, probe: overDead,
			state: sessions.Interrupted, acts: []ActionKind{ActEscalate},
			check: func(t *testing.T, _ sessions.Session, _ []Observation, acts []Action) {
				if !strings.Contains(acts[0].Detail, "the nudge budget is zero") {
					t.Fatalf("escalation says %q", acts[0].Detail)
				}
			}},
	})
}
