package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/session-supervisor/session-supervisor/enum"
	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/machines"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
	"github.com/session-supervisor/session-supervisor/sessions/textsafe"
	"github.com/session-supervisor/session-supervisor/sessions/view"
)

// usageGroup is what `usage --by` groups the sessions' tokens by.
type usageGroup int

const (
	bySession usageGroup = iota
	byModel
	byAgent
	// byDay groups the usage history by local calendar day.
	byDay
	// byMachine groups every configured machine's sessions by machine.
	byMachine
)

var usageGroupNames = []string{"session", "model", "agent", "day", "machine"}

func (g usageGroup) String() string { return enum.Name(g, "usageGroup", usageGroupNames) }

func parseUsageGroup(s string) (usageGroup, error) {
	if i := slices.Index(usageGroupNames, s); i >= 0 {
		return usageGroup(i), nil
	}
	return 0, usagef("--by takes one of %s, not %q", strings.Join(usageGroupNames, ", "), s)
}

// usageRow is one line of the report: a group's tokens by model and their
// equivalent API cost.
type usageRow struct {
	Key      string            `json:"key"`
	Sessions int               `json:"sessions"`
	Tokens   sessions.Tokens   `json:"tokens"`
	Cost     pricing.Breakdown `json:"equivalent_api_cost"`
}

// usageReport groups the whole-life usage of the sessions active since
// `since` (zero: all), costliest first, and the total over them. Pure: the
// command feeds it what the app lists.
func usageReport(list []machineSession, by usageGroup, since time.Time, prices *pricing.Table) (rows []usageRow, total usageRow) {
	groups := map[string]sessions.Usage{}
	members := map[string]int{}
	all := sessions.Usage{}
	total.Key = "total"
	for _, ms := range list {
		s := ms.Session
		if len(s.Usage.Total) == 0 || s.UpdatedAt.Before(since) {
			continue
		}
		total.Sessions++
		all = all.Merge(s.Usage.Total)
		keys := map[string]bool{} // the groups this session counts in, once each
		for model, t := range s.Usage.Total {
			key := model
			switch by {
			case bySession:
				key = sessions.ShortID(s.ID) + " " + view.Title(s)
			case byAgent:
				key = s.Agent
			case byMachine:
				key = ms.Machine
			}
			groups[key] = groups[key].Add(model, t)
			keys[key] = true
		}
		for key := range keys {
			members[key]++
		}
	}
	for key, u := range groups {
		rows = append(rows, usageRow{Key: key, Sessions: members[key], Tokens: u.Total(), Cost: prices.Cost(u)})
	}
	slices.SortFunc(rows, func(a, b usageRow) int {
		return cmp.Or(cmp.Compare(b.Cost.Total, a.Cost.Total), cmp.Compare(a.Key, b.Key))
	})
	total.Tokens, total.Cost = all.Total(), prices.Cost(all)
	return rows, total
}

// usageByDay sums the usage history (a session's tokens of one model on
// one day, as the app recorded them) per local day, oldest first, with the
// total over the days. Pure, like usageReport.
func usageByDay(history []localapi.UsageDay, prices *pricing.Table) (rows []usageRow, total usageRow) {
	days := map[string]sessions.Usage{}
	members := map[string]map[string]bool{}
	all, everyone := sessions.Usage{}, map[string]bool{}
	for _, h := range history {
		days[h.Day] = days[h.Day].Add(h.Model, h.Tokens)
		if members[h.Day] == nil {
			members[h.Day] = map[string]bool{}
		}
		members[h.Day][h.SessionID] = true
		everyone[h.SessionID] = true
		all = all.Add(h.Model, h.Tokens)
	}
	for _, day := range slices.Sorted(maps.Keys(days)) {
		u := days[day]
		rows = append(rows, usageRow{Key: day, Sessions: len(members[day]), Tokens: u.Total(), Cost: prices.Cost(u)})
	}
	return rows, usageRow{Key: "total", Sessions: len(everyone), Tokens: all.Total(), Cost: prices.Cost(all)}
}

// usageSessions is what a report sums: every configured machine's sessions
// (archived ones too) for --by machine, else this machine's (or the one
// --machine names).
func (c *cli) usageSessions(ctx context.Context, cl *localapi.Client, by usageGroup) ([]machineSession, error) {
	if by == byMachine {
		rows, handled, err := c.sessionsOfMachines(func(ctx context.Context, cl *localapi.Client) ([]sessions.Session, error) {
			return cl.AllSessions(ctx)
		})
		if handled || err != nil {
			return rows, err
		}
	}
	list, err := cl.AllSessions(ctx)
	machine := cmp.Or(c.machine, machines.LocalName)
	out := make([]machineSession, len(list))
	for i, s := range list {
		out[i] = machineSession{Machine: machine, Session: s}
	}
	return out, err
}

func cmdUsage(c *cli, args []string) error {
	fs := c.newFlags("usage")
	asJSON := fs.Bool("json", false, "print JSON")
	byName := fs.String("by", "session", "group by session, model, agent, day or machine (every configured machine's)")
	sinceText := fs.String("since", "", "only sessions active since this day (YYYY-MM-DD, local time)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	by, err := parseUsageGroup(*byName)
	if err != nil {
		return err
	}
	var since time.Time
	if *sinceText != "" {
		if since, err = time.ParseInLocation(time.DateOnly, *sinceText, time.Local); err != nil {
			return usagef("--since takes a day as YYYY-MM-DD, not %q", *sinceText)
		}
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := requestContext()
	defer cancel()
	var rows []usageRow
	var total usageRow
	if by == byDay {
		history, err := cl.UsageHistory(ctx, *sinceText)
		if err != nil {
			return err
		}
		rows, total = usageByDay(history, c.priceTable())
	} else {
		list, err := c.usageSessions(ctx, cl, by)
		if err != nil {
			return err
		}
		rows, total = usageReport(list, by, since, c.priceTable())
	}
	if *asJSON {
		if rows == nil {
			rows = []usageRow{}
		}
		return writeJSON(c, struct {
			By    string     `json:"by"`
			Since string     `json:"since,omitempty"`
			Rows  []usageRow `json:"rows"`
			Total usageRow   `json:"total"`
		}{by.String(), *sinceText, rows, total})
	}
	if total.Sessions == 0 {
		fmt.Fprintln(c.stdout, "no session has reported token usage yet")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	cells := textsafe.NewWriter(tw) // cleaned before the columns are measured
	fmt.Fprintf(tw, "%s\tSESSIONS\tINPUT\tOUTPUT\tCACHE WRITE\tCACHE READ\tEQUIVALENT API COST\t\n", strings.ToUpper(by.String()))
	for _, r := range append(rows, total) {
		t := r.Tokens
		cost := r.Cost.Total.String()
		if r.Cost.Unknown {
			cost += "*"
		}
		fmt.Fprintf(cells, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.Key, r.Sessions, t.Input, t.Output, t.CacheWrite, t.CacheRead, cost)
	}
	tw.Flush()
	fmt.Fprintln(c.stdout, "Equivalent API cost: what the tokens would cost at the providers' list prices, not a charge.")
	if total.Cost.Unknown {
		fmt.Fprintln(c.stdout, "* some models are not in the price table and are priced at the fallback rate (pricing.csv in the data directory overrides it).")
	}
	switch {
	case by == byDay:
		fmt.Fprintln(c.stdout, "Per local calendar day, as the app recorded the tokens (usage from before it kept a history counts only in the other groupings).")
	case !since.IsZero():
		fmt.Fprintf(c.stdout, "Sessions active since %s, each with its whole usage.\n", *sinceText)
	}
	return nil
}
