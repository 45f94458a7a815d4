package core

import (
	"fmt"
	"time"

	"github.com/session-supervisor/session-supervisor/enum"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
)

// Budgets bound what unattended recovery may spend (issue 25 item 5): a
// session that runs away (a loop of restarts, a 16-hour session) stops
// being recovered once it, or the whole day, has spent a budget, and the
// user is told once which budget ran out. Every budget is off by default
// (zero); the nudge cap (NudgeMaxAttempts) stays as it is beside them.

// BudgetScope is what a budget counts over.
type BudgetScope int

// The scopes.
const (
	// ScopeSession counts one session: its equivalent API cost and tokens
	// over its whole life, its automatic recoveries today.
	ScopeSession BudgetScope = iota + 1
	// ScopeDaily counts every session together, today (the local
	// calendar day).
	ScopeDaily
)

var scopeNames = [...]string{ScopeSession: "session", ScopeDaily: "daily"}

func (s BudgetScope) String() string { return enum.Name(s, "budget_scope", scopeNames[:]) }

// BudgetMeasure is what a budget is counted in.
type BudgetMeasure int

// The measures.
const (
	// MeasureCost is the equivalent API cost (pricing): what the tokens
	// would cost at list prices, not a charge.
	MeasureCost BudgetMeasure = iota + 1
	// MeasureTokens is every token of every rate class.
	MeasureTokens
	// MeasureRecoveries counts the automatic actions that set an agent to
	// work again (ActionKind.Recovers) in a day.
	MeasureRecoveries
)

var measureNames = [...]string{MeasureCost: "cost", MeasureTokens: "token", MeasureRecoveries: "recovery"}

func (m BudgetMeasure) String() string { return enum.Name(m, "budget_measure", measureNames[:]) }

// Budget is a limit in each measure; zero turns that measure off.
type Budget struct {
	Cost       pricing.Micros
	Tokens     int64
	Recoveries int
}

// Spend is what has been spent in each measure.
type Spend struct {
	Cost       pricing.Micros
	Tokens     int64
	Recoveries int
}

// Spent is what counts against one session's budgets at a tick, as the
// runtime summed it (the pricing and the day's ledger are its business).
type Spent struct {
	// Session is the session's own: cost and tokens over its whole life,
	// its automatic recoveries today.
	Session Spend
	// Day is every session's together, today.
	Day Spend
}

// BudgetHit is a budget that ran out: which one, its limit and what was
// spent, in the measure's unit (micro-dollars, tokens, recoveries).
type BudgetHit struct {
	Scope   BudgetScope
	Measure BudgetMeasure
	Limit   int64
	Spent   int64
}

// String names the budget and says what was spent: "daily cost budget
// $20.00 reached ($20.41)", "session token budget 2000000 reached (2000417
// tokens)", "daily recovery budget 20 reached (20 automatic recoveries
// today)".
func (h BudgetHit) String() string {
	name := h.Scope.String() + " " + h.Measure.String() + " budget "
	switch h.Measure {
	case MeasureCost:
		return fmt.Sprintf("%s%s reached (%s)", name, pricing.Micros(h.Limit), pricing.Micros(h.Spent))
	case MeasureTokens:
		return fmt.Sprintf("%s%d reached (%d tokens)", name, h.Limit, h.Spent)
	}
	return fmt.Sprintf("%s%d reached (%d automatic recoveries today)", name, h.Limit, h.Spent)
}

// Key identifies the budget for the once-only escalation: its scope and
// measure, and the day when what it counts starts again each day (every
// daily budget, and a session's recoveries). Crossing the same budget again
// the same day is not news; a new day's crossing is.
func (h BudgetHit) Key(now time.Time) string {
	k := h.Scope.String() + "_" + h.Measure.String()
	if h.Scope == ScopeDaily || h.Measure == MeasureRecoveries {
		k += " " + Day(now)
	}
	return k
}

// Day is the calendar day of t in t's location ("2026-12-02"): the day
// the daily budgets and the usage history count by.
func Day(t time.Time) string { return t.Format(time.DateOnly) }

// OverBudget reports the first budget spent has reached: the session's
// before the day's, and in each cost, then tokens, then recoveries. A
// budget is reached when what was spent is at least its limit, so a
// recovery budget of 3 allows three recoveries a day and refuses the
// fourth. Pure: the runtime sums spent, Reconcile acts on the answer.
func OverBudget(session, daily Budget, spent Spent) (BudgetHit, bool) {
	for _, b := range []struct {
		scope  BudgetScope
		budget Budget
		spend  Spend
	}{{ScopeSession, session, spent.Session}, {ScopeDaily, daily, spent.Day}} {
		for _, m := range []struct {
			measure      BudgetMeasure
			limit, spent int64
		}{
			{MeasureCost, int64(b.budget.Cost), int64(b.spend.Cost)},
			{MeasureTokens, b.budget.Tokens, b.spend.Tokens},
			{MeasureRecoveries, int64(b.budget.Recoveries), int64(b.spend.Recoveries)},
		} {
			if m.limit > 0 && m.spent >= m.limit {
				return BudgetHit{Scope: b.scope, Measure: m.measure, Limit: m.limit, Spent: m.spent}, true
			}
		}
	}
	return BudgetHit{}, false
}

// Recovers reports whether the action sets the agent to work again on its
// own: what a recovery budget counts. Signals and escalation do not.
func (k ActionKind) Recovers() bool {
	switch k {
	case ActCompact, ActRetryTurn, ActContinue, ActNudge, ActResume:
		return true
	}
	return false
}
