package sessions

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func tok(in, out, cw, cr int64) Tokens {
	return Tokens{Input: in, Output: out, CacheWrite: cw, CacheRead: cr}
}

func usageEv(kind EventKind, r UsageReport) Event { return Event{Kind: kind, Usage: &r} }

// TestApplyUsage: each mode counts a report once, by model, into the
// session's total and its turn's.
func TestApplyUsage(t *testing.T) {
	const sonnet, haiku = "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"
	msg := func(id, model string, t Tokens) Event {
		return usageEv(EvActivity, UsageReport{Model: model, Tokens: t, Mode: UsageMessage, MessageID: id})
	}
	cum := func(model string, t Tokens) Event {
		return usageEv(EvMetrics, UsageReport{Model: model, Tokens: t, Mode: UsageCumulative})
	}
	cases := []struct {
		name      string
		events    []Event
		total     Usage
		turn      Usage
		turnReset bool // a turn starts before the last event
		// backfilled is what backfill reports added (none when nil).
		backfilled Usage
	}{
		{
			name:   "deltas add up",
			events: []Event{usageEv(EvMetrics, UsageReport{Model: sonnet, Tokens: tok(10, 5, 0, 0)}), usageEv(EvMetrics, UsageReport{Model: sonnet, Tokens: tok(1, 2, 3, 4)})},
			total:  Usage{sonnet: tok(11, 7, 3, 4)},
		},
		{
			name: "a message repeated across chunks counts once, at its fullest",
			events: []Event{
				msg("m1", sonnet, tok(3, 1, 100, 200)),
				msg("m1", sonnet, tok(3, 1, 100, 200)),
				msg("m1", sonnet, tok(3, 40, 100, 200)),
				msg("m2", sonnet, tok(2, 7, 0, 300)),
			},
			total: Usage{sonnet: tok(5, 47, 100, 500)},
		},
		{
			name: "a chunk with a smaller count after a fuller one takes nothing back",
			events: []Event{
				msg("m1", sonnet, tok(3, 40, 0, 0)),
				msg("m1", sonnet, tok(3, 1, 0, 0)),
			},
			total: Usage{sonnet: tok(3, 40, 0, 0)},
		},
		{
			name: "two models, each its own row",
			events: []Event{
				msg("m1", sonnet, tok(3, 4, 0, 0)),
				msg("m2", haiku, tok(30, 40, 0, 0)),
			},
			total: Usage{sonnet: tok(3, 4, 0, 0), haiku: tok(30, 40, 0, 0)},
		},
		{
			name: "a running total counts what it added, against its model",
			events: []Event{
				cum("gpt-5.1-codex", tok(100, 10, 0, 50)),
				cum("gpt-5.1-codex", tok(100, 10, 0, 50)),
				cum("gpt-5.1-codex-mini", tok(150, 30, 0, 90)),
			},
			total: Usage{"gpt-5.1-codex": tok(100, 10, 0, 50), "gpt-5.1-codex-mini": tok(50, 20, 0, 40)},
		},
		{
			name: "a running total that went down is a new counter",
			events: []Event{
				cum("gpt-5.1-codex", tok(100, 10, 0, 0)),
				cum("gpt-5.1-codex", tok(20, 3, 0, 0)),
			},
			total: Usage{"gpt-5.1-codex": tok(120, 13, 0, 0)},
		},
		{
			name: "two threads' running totals interleave, each its own counter",
			events: []Event{
				usageEv(EvMetrics, UsageReport{Model: "gpt-5.1-codex", Tokens: tok(100, 10, 0, 0), Mode: UsageCumulative, Counter: "main"}),
				usageEv(EvMetrics, UsageReport{Model: "gpt-5.1-codex-mini", Tokens: tok(7, 1, 0, 0), Mode: UsageCumulative, Counter: "sub"}),
				usageEv(EvMetrics, UsageReport{Model: "gpt-5.1-codex", Tokens: tok(130, 12, 0, 0), Mode: UsageCumulative, Counter: "main"}),
				usageEv(EvMetrics, UsageReport{Model: "gpt-5.1-codex-mini", Tokens: tok(9, 2, 0, 0), Mode: UsageCumulative, Counter: "sub"}),
			},
			total: Usage{"gpt-5.1-codex": tok(130, 12, 0, 0), "gpt-5.1-codex-mini": tok(9, 2, 0, 0)},
		},
		{
			name: "a new turn resets the turn's usage, not the total",
			events: []Event{
				msg("m1", sonnet, tok(3, 4, 0, 0)),
				{Kind: EvTurnStarted},
				msg("m2", sonnet, tok(1, 1, 0, 0)),
			},
			total: Usage{sonnet: tok(4, 5, 0, 0)},
			turn:  Usage{sonnet: tok(1, 1, 0, 0)},
		},
		{
			name: "a backfill is the session's, not its turn's",
			events: []Event{
				usageEv(EvMetrics, UsageReport{Model: sonnet, Tokens: tok(100, 10, 0, 0), Mode: UsageCumulative, Counter: "transcript", Backfill: true}),
				usageEv(EvMetrics, UsageReport{Model: sonnet, Tokens: tok(130, 12, 0, 0), Mode: UsageCumulative, Counter: "transcript"}),
			},
			total:      Usage{sonnet: tok(130, 12, 0, 0)},
			turn:       Usage{sonnet: tok(30, 2, 0, 0)},
			backfilled: Usage{sonnet: tok(100, 10, 0, 0)},
		},
		{
			name:   "an empty report adds no model",
			events: []Event{usageEv(EvMetrics, UsageReport{Model: sonnet})},
			total:  nil,
		},
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := baseSession("working")
			for _, e := range c.events {
				s = Apply(s, e, now)
			}
			if !reflect.DeepEqual(s.Usage.Total, c.total) {
				t.Errorf("total = %v, want %v", s.Usage.Total, c.total)
			}
			wantTurn := c.turn
			if wantTurn == nil {
				wantTurn = c.total
			}
			if !reflect.DeepEqual(s.Usage.Turn, wantTurn) {
				t.Errorf("turn = %v, want %v", s.Usage.Turn, wantTurn)
			}
			if !reflect.DeepEqual(s.Usage.Backfilled, c.backfilled) {
				t.Errorf("backfilled = %v, want %v", s.Usage.Backfilled, c.backfilled)
			}
			if want := c.total.Without(c.backfilled); !reflect.DeepEqual(s.Usage.Observed(), want) && len(want) > 0 {
				t.Errorf("observed = %v, want %v", s.Usage.Observed(), want)
			}
		})
	}
}

// TestApplyUsageProperties: whatever the order of chunks, a stream of
// repeated message reports counts each message at its largest report, a
// stream of running totals counts the last total, and Apply never changes
// its input's usage.
func TestApplyUsageProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 1))
	now := time.Unix(0, 0)
	for range 500 {
		s := baseSession("working")
		var want Tokens
		for m := range r.IntN(6) {
			id := string(rune('a' + m))
			var best Tokens
			for range 1 + r.IntN(4) {
				// Growing chunks of one message: each class never shrinks.
				best = best.Add(tok(r.Int64N(5), r.Int64N(50), r.Int64N(3), r.Int64N(9)))
				prev, snap := s, s.Clone()
				s = Apply(prev, usageEv(EvActivity, UsageReport{Model: "m", Tokens: best, Mode: UsageMessage, MessageID: id}), now)
				if !reflect.DeepEqual(prev.Usage, snap.Usage) {
					t.Fatal("Apply changed its input's usage")
				}
			}
			want = want.Add(best)
		}
		if got := s.Usage.Total.Total(); got != want {
			t.Fatalf("message reports: total %v, want %v", got, want)
		}

		c := baseSession("working")
		var running Tokens
		for range r.IntN(8) {
			running = running.Add(tok(r.Int64N(100), r.Int64N(10), 0, r.Int64N(100)))
			c = Apply(c, usageEv(EvMetrics, UsageReport{Model: "x", Tokens: running, Mode: UsageCumulative}), now)
		}
		if got := c.Usage.Total.Total(); got != running {
			t.Fatalf("running totals: counted %v, want the last total %v", got, running)
		}
	}
}

// TestSessionUsageJSON: the usage is part of the --json contract and
// survives the store's round trip.
func TestSessionUsageJSON(t *testing.T) {
	s := baseSession("working")
	s = Apply(s, usageEv(EvActivity, UsageReport{Model: "claude-opus-4-5", Tokens: tok(1, 2, 3, 4), Mode: UsageMessage, MessageID: "m"}), time.Unix(5, 0))
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Session
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	s = Apply(s, usageEv(EvMetrics, UsageReport{Model: "gpt-5.1-codex", Tokens: tok(1, 1, 0, 0), Mode: UsageCumulative, Counter: "thread-1"}), time.Unix(6, 0))
	b, err = json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Usage, s.Usage) {
		t.Fatalf("usage after a round trip = %+v, want %+v", back.Usage, s.Usage)
	}
	var shape struct {
		Usage struct {
			Total map[string]map[string]int64 `json:"total"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	if got := shape.Usage.Total["claude-opus-4-5"]["cache_read"]; got != 4 {
		t.Fatalf(`usage.total["claude-opus-4-5"].cache_read = %d, want 4 (%s)`, got, b)
	}
}

// TestTokensMax: the larger in each class, whichever side holds it.
func TestTokensMax(t *testing.T) {
	for _, tc := range []struct{ a, b, want Tokens }{
		{tok(1, 2, 3, 4), tok(4, 3, 2, 1), tok(4, 3, 3, 4)},
		{Tokens{}, tok(1, 1, 1, 1), tok(1, 1, 1, 1)},
		{tok(5, 5, 5, 5), tok(5, 5, 5, 5), tok(5, 5, 5, 5)},
	} {
		if got := tc.a.Max(tc.b); got != tc.want || tc.b.Max(tc.a) != tc.want {
			t.Errorf("%+v max %+v = %+v, want %+v", tc.a, tc.b, got, tc.want)
		}
	}
}
