package sessions

import (
	"maps"
	"slices"
)

// Tokens counts a model's tokens per rate class: the four classes every
// provider prices apart. Input excludes the cached part (CacheRead) and the
// part written to the cache (CacheWrite), so the four add up to what was
// sent and received and each is priced at its own rate.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheWrite int64 `json:"cache_write"`
	CacheRead  int64 `json:"cache_read"`
}

// Add returns the sum of t and o, class by class.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{
		Input:      t.Input + o.Input,
		Output:     t.Output + o.Output,
		CacheWrite: t.CacheWrite + o.CacheWrite,
		CacheRead:  t.CacheRead + o.CacheRead,
	}
}

// Sub returns t minus o, class by class, never below zero in any class:
// a cumulative counter that went backwards (a new thread, a restarted
// process) has no negative usage.
func (t Tokens) Sub(o Tokens) Tokens {
	return Tokens{
		Input:      max(t.Input-o.Input, 0),
		Output:     max(t.Output-o.Output, 0),
		CacheWrite: max(t.CacheWrite-o.CacheWrite, 0),
		CacheRead:  max(t.CacheRead-o.CacheRead, 0),
	}
}

// Max is the larger of t and o in each class: the most a message's usage
// reached when it is reported again as it grows (a streamed message, a
// message rewritten with its final counts).
func (t Tokens) Max(o Tokens) Tokens {
	return Tokens{
		Input:      max(t.Input, o.Input),
		Output:     max(t.Output, o.Output),
		CacheWrite: max(t.CacheWrite, o.CacheWrite),
		CacheRead:  max(t.CacheRead, o.CacheRead),
	}
}

// Total is every token of every class.
func (t Tokens) Total() int64 { return t.Input + t.Output + t.CacheWrite + t.CacheRead }

// IsZero reports whether no token is counted.
func (t Tokens) IsZero() bool { return t == Tokens{} }

// Usage is tokens by model id, the id as the agent reported it (pricing
// resolves it later; a dated or suffixed id stays as it came).
type Usage map[string]Tokens

// Add returns u with t added to model's tokens. u is not modified.
func (u Usage) Add(model string, t Tokens) Usage {
	if t.IsZero() {
		return u
	}
	c := maps.Clone(u)
	if c == nil {
		c = Usage{}
	}
	c[model] = c[model].Add(t)
	return c
}

// Merge returns the sum of u and o, model by model. Neither is modified.
func (u Usage) Merge(o Usage) Usage {
	c := maps.Clone(u)
	for m, t := range o {
		c = c.Add(m, t)
	}
	return c
}

// Total is the tokens of every model, summed per class.
func (u Usage) Total() Tokens {
	var t Tokens
	for _, x := range u {
		t = t.Add(x)
	}
	return t
}

// Without is u less o, model by model (a model left with nothing is
// dropped). Neither is modified.
func (u Usage) Without(o Usage) Usage {
	c := Usage{}
	for m, t := range u {
		if d := t.Sub(o[m]); !d.IsZero() {
			c[m] = d
		}
	}
	return c
}

// Models lists the models in u, sorted, for stable output.
func (u Usage) Models() []string { return slices.Sorted(maps.Keys(u)) }

// UsageMode says how a usage report relates to the ones before it: the
// agents count differently, and counting a report twice or missing one is
// exactly the error that makes a cost figure wrong.
type UsageMode int

const (
	// UsageDelta: the report is new usage, added as it is (one API call's
	// usage that the agent reports once).
	UsageDelta UsageMode = iota
	// UsageMessage: the report is one model message's usage, which the
	// agent may repeat (Claude's stream prints the same message's usage
	// with every content block, its output count growing). The last report
	// for a message id replaces the earlier ones of that id.
	UsageMessage
	// UsageCumulative: the report is the running total of one of the
	// agent's counters (Codex's thread token usage; Counter names the
	// thread). What it added since that counter's previous total is
	// counted, against the model named with it; a total lower than the
	// previous one (a counter that started over) counts whole. The session
	// keeps each counter's last total, so a new process that reports a
	// resumed thread's total again does not count its past twice.
	UsageCumulative
)

var usageModeNames = []string{"delta", "message", "cumulative"}

func (m UsageMode) String() string               { return enumString(usageModeNames, m) }
func (m UsageMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }
func (m *UsageMode) UnmarshalText(b []byte) error {
	return parseInto(m, "usage mode", usageModeNames, b)
}

// UsageReport is one usage figure an agent printed: which model, its tokens
// per class, and how it relates to the previous reports (Mode).
type UsageReport struct {
	Model  string    `json:"model"`
	Tokens Tokens    `json:"tokens"`
	Mode   UsageMode `json:"mode"`
	// MessageID identifies the message a UsageMessage report is for.
	MessageID string `json:"message_id,omitempty"`
	// Counter names the running total a UsageCumulative report is of.
	Counter string `json:"counter,omitempty"`
	// Backfill marks what a report adds as spent before the app watched
	// the session (a terminal session's transcript read when it is
	// found, or again after the app was down): the session's, but not
	// its current turn's nor any day's, since when it was spent is not
	// known.
	Backfill bool `json:"backfill,omitempty"`
}

// SessionUsage is what a session used: per model over its whole life, and
// per model in the current (or last) turn. The other fields are the
// bookkeeping that lets a repeated or cumulative report count once.
type SessionUsage struct {
	Total Usage `json:"total,omitempty"`
	Turn  Usage `json:"turn,omitempty"`
	// LastMessage and LastMessageTokens are the message a UsageMessage
	// report last counted and what it counted for it, replaced when the
	// same message reports again.
	LastMessage       string `json:"last_message,omitempty"`
	LastMessageTokens Tokens `json:"last_message_tokens,omitzero"`
	// Cumulative is the last running total each counter's UsageCumulative
	// report gave, by counter.
	Cumulative map[string]Tokens `json:"cumulative,omitempty"`
	// Backfilled is the part of Total that backfill reports added.
	Backfilled Usage `json:"backfilled,omitempty"`
}

// Observed is the part of the total the app saw spent (Total without
// Backfilled): what a day's usage history and budget count.
func (u SessionUsage) Observed() Usage { return u.Total.Without(u.Backfilled) }

// IsZero reports whether nothing was used.
func (u SessionUsage) IsZero() bool {
	return len(u.Total) == 0 && len(u.Turn) == 0 && u.LastMessage == "" && len(u.Cumulative) == 0 && len(u.Backfilled) == 0
}

// clone is a deep copy (the maps), so Apply never shares a map with its input.
func (u SessionUsage) clone() SessionUsage {
	c := u
	c.Total = maps.Clone(u.Total)
	c.Turn = maps.Clone(u.Turn)
	c.Cumulative = maps.Clone(u.Cumulative)
	c.Backfilled = maps.Clone(u.Backfilled)
	return c
}

// applyUsage counts one report into the session's totals and its turn's.
func applyUsage(u SessionUsage, r UsageReport) SessionUsage {
	var add Tokens
	switch r.Mode {
	case UsageMessage:
		if r.MessageID != "" && r.MessageID == u.LastMessage {
			// The same message again: count only what it grew by, and
			// never less than before (a chunk printed with a partial count
			// after a fuller one takes nothing back).
			add = r.Tokens.Sub(u.LastMessageTokens)
			u.LastMessageTokens = u.LastMessageTokens.Add(add)
		} else {
			add = r.Tokens
			u.LastMessage, u.LastMessageTokens = r.MessageID, r.Tokens
		}
	case UsageCumulative:
		prev := u.Cumulative[r.Counter]
		if lower(r.Tokens, prev) {
			add = r.Tokens // a counter that started over
		} else {
			add = r.Tokens.Sub(prev)
		}
		if u.Cumulative == nil {
			u.Cumulative = map[string]Tokens{}
		}
		u.Cumulative[r.Counter] = r.Tokens
	default:
		add = r.Tokens
	}
	u.Total = u.Total.Add(r.Model, add)
	if r.Backfill {
		u.Backfilled = u.Backfilled.Add(r.Model, add)
		return u
	}
	u.Turn = u.Turn.Add(r.Model, add)
	return u
}

// lower reports whether any class of t is below o's: a running total never
// goes down, so one that did is a new counter.
func lower(t, o Tokens) bool {
	return t.Input < o.Input || t.Output < o.Output || t.CacheWrite < o.CacheWrite || t.CacheRead < o.CacheRead
}
