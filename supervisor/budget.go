package supervisor

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// ledger is today's spending, what the daily budgets and the tray's header
// read: every session's usage today by model, and its automatic recoveries
// today. It lives in memory, guarded by Runtime.mu, so the tick reads it
// without touching SQLite; Boot fills it from the usage history and the
// timeline, and a new local day starts it empty.
type ledger struct {
	day        string
	usage      map[string]sessions.Usage
	recoveries map[string]int
}

// roll starts day's ledger when the day changed.
func (l *ledger) roll(day string) {
	if l.day == day {
		return
	}
	*l = ledger{day: day, usage: map[string]sessions.Usage{}, recoveries: map[string]int{}}
}

func (l *ledger) addUsage(id, model string, t sessions.Tokens) {
	l.usage[id] = l.usage[id].Add(model, t)
}

// all is every session's usage today, and their recoveries.
func (l *ledger) all() (sessions.Usage, int) {
	u, n := sessions.Usage{}, 0
	for _, su := range l.usage {
		// Summed into one new map (Merge would copy it per session).
		for m, t := range su {
			u[m] = u[m].Add(t)
		}
	}
	for _, c := range l.recoveries {
		n += c
	}
	return u, n
}

// recoveryKinds are the action names a recovery budget counts
// (core.ActionKind.Recovers), as their intent rows record them.
func recoveryKinds() []string {
	var out []string
	for k := core.ActInterrupt; k.Valid(); k++ {
		if k.Recovers() {
			out = append(out, k.String())
		}
	}
	return out
}

// usageStore is the optional store capability behind the usage history.
type usageStore interface {
	UsageSince(ctx context.Context, since string) ([]storage.UsageRow, error)
	RecoveriesSince(ctx context.Context, since time.Time, kinds []string) (map[string]int, error)
}

// loadLedger fills today's ledger from the store at boot. A store without
// the history (a test's) leaves it empty.
func (r *Runtime) loadLedger(ctx context.Context, now time.Time) (ledger, error) {
	var l ledger
	l.roll(core.Day(now))
	us, ok := r.store.(usageStore)
	if !ok {
		return l, nil
	}
	rows, err := us.UsageSince(ctx, l.day)
	if err != nil {
		return l, err
	}
	for _, u := range rows {
		if u.Day == l.day {
			l.addUsage(u.SessionID, u.Model, u.Tokens)
		}
	}
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	if l.recoveries, err = us.RecoveriesSince(ctx, midnight, recoveryKinds()); err != nil {
		return l, err
	}
	return l, nil
}

// usageRowsLocked is what a session's whole-life usage grew by since it was
// last saved, by model, as rows of the usage history on today's local day
// (saved in the same batch as the session, so the history never counts
// what the session's saved total does not). The ledger counts them too.
func (r *Runtime) usageRowsLocked(e *entry, next sessions.Session, now time.Time) []storage.UsageRow {
	observed := next.Usage.Observed()
	if maps.Equal(observed, e.recorded) {
		return nil
	}
	r.ledger.roll(core.Day(now))
	var rows []storage.UsageRow
	for _, model := range observed.Models() {
		d := observed[model].Sub(e.recorded[model])
		if d.IsZero() {
			continue
		}
		rows = append(rows, storage.UsageRow{SessionID: next.ID, Day: r.ledger.day, TurnGeneration: next.TurnGeneration,
			Model: model, Tokens: d, Time: now})
		r.ledger.addUsage(next.ID, model, d)
	}
	e.recorded = observed
	return rows
}

// recoveredLocked counts an automatic recovery whose intent was recorded.
func (r *Runtime) recoveredLocked(id string, now time.Time) {
	r.ledger.roll(core.Day(now))
	r.ledger.recoveries[id]++
}

// budgetPolicy adds the budget settings to the policy.
func budgetPolicy(p *core.Policy, b settings.Budgets) {
	p.SessionBudget = core.Budget{Cost: pricing.Micros(b.SessionCost), Tokens: b.SessionTokens, Recoveries: b.SessionRecoveries}
	p.DailyBudget = core.Budget{Cost: pricing.Micros(b.DailyCost), Tokens: b.DailyTokens, Recoveries: b.DailyRecoveries}
}

// todayLocked is today's usage across every session, priced.
func (r *Runtime) todayLocked(now time.Time) localapi.DayUsage {
	r.ledger.roll(core.Day(now))
	u, n := r.ledger.all()
	cost := r.prices.Cost(u)
	return localapi.DayUsage{Day: r.ledger.day, Tokens: u.Total(), Cost: cost.Total, Unknown: cost.Unknown, Recoveries: n}
}

// spentLocked is what counts against e's budgets: its own whole-life cost
// and tokens and its recoveries today, and the day's. Priced only when a
// cost budget asks for it.
func (r *Runtime) spentLocked(e *entry, p core.Policy, day localapi.DayUsage) core.Spent {
	tot := e.s.Usage.Total
	sp := core.Spent{
		Session: core.Spend{Tokens: tot.Total().Total(), Recoveries: r.ledger.recoveries[e.s.ID]},
		Day:     core.Spend{Cost: day.Cost, Tokens: day.Tokens.Total(), Recoveries: day.Recoveries},
	}
	if p.SessionBudget.Cost > 0 && len(tot) > 0 {
		// Priced again only when the usage changed: a Usage is never
		// changed in place (Add returns a new one), so the one priced
		// last is kept as it was.
		if !maps.Equal(e.pricedUsage, tot) {
			e.pricedUsage, e.pricedCost = tot, r.prices.Cost(tot).Total
		}
		sp.Session.Cost = e.pricedCost
	}
	return sp
}

// publishTodayLocked tells the views today's usage when it changed since
// it was last told (the tray's header).
func (r *Runtime) publishTodayLocked(day localapi.DayUsage) {
	if day == r.today {
		return
	}
	r.today = day
	d := day
	r.bus.Publish(localapi.Message{Type: localapi.MsgUsage, Usage: &d})
}

// UsageHistory is the usage history from day since ("" for all), summed
// per day, session and model: `usage --by day`.
func (r *Runtime) UsageHistory(ctx context.Context, since string) ([]localapi.UsageDay, error) {
	if _, err := time.Parse(time.DateOnly, since); since != "" && err != nil {
		return nil, invalidf("since %q is not a day (YYYY-MM-DD)", since)
	}
	us, ok := r.store.(usageStore)
	if !ok {
		return nil, nil
	}
	rows, err := us.UsageSince(ctx, since)
	if err != nil {
		return nil, fmt.Errorf("reading the usage history: %w", err)
	}
	return rows, nil
}
