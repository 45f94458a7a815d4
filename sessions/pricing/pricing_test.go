package pricing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestResolve(t *testing.T) {
	cases := []struct {
		id    string
		key   string
		known bool
	}{
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5", true},
		{"claude-sonnet-4-20250514", "claude-sonnet-4", true},
		{"claude-sonnet-4", "claude-sonnet-4", true},
		{"claude-sonnet-4-5", "claude-sonnet-4-5", true},
		{"Claude-Sonnet-4-5[1m]", "claude-sonnet-4-5", true},
		{"claude-sonnet-4-5@20250929", "claude-sonnet-4-5", true},
		{"anthropic/claude-haiku-4-5-20251001", "claude-haiku-4-5", true},
		{"claude-opus-4-1-20250805", "claude-opus-4-1", true},
		{"claude-opus-4-5-2025-11-01", "claude-opus-4-5", true},
		{"claude-3-5-haiku-20241022", "claude-3-5-haiku", true},
		// A further version number the table does not have is not the
		// family's older price: it is unknown.
		{"claude-opus-4-9", FallbackKey, false},
		{"claude-sonnet-4-thinking", "claude-sonnet-4", true},
		{"gpt-5.1-codex-max", "gpt-5.1-codex-max", true},
		{"gpt-5.1-codex", "gpt-5.1-codex", true},
		{"gpt-5-codex-mini", "gpt-5-codex-mini", true},
		{"openai/gpt-5.2-2025-12-11", "gpt-5.2", true},
		{"gpt-5.9", FallbackKey, false},
		{"models/gemini-2.5-pro", "gemini-2.5-pro", true},
		{"gemini-2.5-flash-lite", "gemini-2.5-flash-lite", true},
		{"gemini-2.5-flash", "gemini-2.5-flash", true},
		{"gemini-3-pro-preview", "gemini-3-pro", true},
		{"gemini-3-flash-preview", "gemini-3-flash", true},
		{"fake-model-x", FallbackKey, false},
		{"", FallbackKey, false},
		// A key is matched whole: "gpt-50" is not "gpt-5".
		{"gpt-50", FallbackKey, false},
	}
	for _, c := range cases {
		row, known := Resolve(c.id)
		if row.Key != c.key || known != c.known {
			t.Errorf("Resolve(%q) = %q known=%v, want %q known=%v", c.id, row.Key, known, c.key, c.known)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"claude-sonnet-4-5-20250929":            "claude-sonnet-4-5",
		" Claude-Opus-4-5[1M] ":                 "claude-opus-4-5",
		"openrouter/anthropic/claude-opus-4":    "claude-opus-4",
		"claude-sonnet-4-5@20250929":            "claude-sonnet-4-5",
		"gpt-5.1-codex":                         "gpt-5.1-codex",
		"gemini-2.5-pro:latest":                 "gemini-2.5-pro",
		"gpt-4o-2024-08-06":                     "gpt-4o",
		"claude-sonnet-4-5-2025":                "claude-sonnet-4-5-2025",
		"models/gemini-2.5-flash-preview-09-25": "gemini-2.5-flash-preview-09-25",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCost: each class at its own rate, rounded per class, summed; an
// unknown model priced on the fallback and flagged.
func TestCost(t *testing.T) {
	u := sessions.Usage{
		// Sonnet 4.5: $3 in, $15 out, $3.75 write, $0.30 read per MTok.
		"claude-sonnet-4-5-20250929": {Input: 1_000_000, Output: 200_000, CacheWrite: 400_000, CacheRead: 10_000_000},
		// Haiku 4.5: $1, $5, $1.25, $0.10.
		"claude-haiku-4-5": {Input: 3, Output: 1},
		"mystery-model":    {Output: 1_000_000},
	}
	b := Cost(u)
	if b.Label != "equivalent API cost" {
		t.Errorf("label %q", b.Label)
	}
	want := map[string]Amounts{
		"claude-sonnet-4-5-20250929": {Input: 3_000_000, Output: 3_000_000, CacheWrite: 1_500_000, CacheRead: 3_000_000},
		// 3 tokens at $1/MTok is 3 micro-dollars; 1 at $5 is 5.
		"claude-haiku-4-5": {Input: 3, Output: 5},
		"mystery-model":    {Output: 15_000_000},
	}
	if len(b.Models) != 3 {
		t.Fatalf("models %+v", b.Models)
	}
	var sum Micros
	for _, m := range b.Models {
		if m.Cost != want[m.Model] {
			t.Errorf("%s: %+v, want %+v", m.Model, m.Cost, want[m.Model])
		}
		if m.Known != (m.Model != "mystery-model") {
			t.Errorf("%s: known=%v", m.Model, m.Known)
		}
		sum += m.Cost.Total()
	}
	if !b.Unknown {
		t.Error("an unknown model is not flagged")
	}
	if b.Total != sum || b.Total != 25_500_008 || b.ByClass.Total() != b.Total {
		t.Errorf("total %d, by class %d, models sum %d; want 25500008", b.Total, b.ByClass.Total(), sum)
	}
	if got := b.Total.String(); got != "$25.50" {
		t.Errorf("formatted %q", got)
	}
	if got := b.String(); got != "$25.50 equivalent API cost (some models unknown, priced at the fallback rate)" {
		t.Errorf("labelled %q", got)
	}
	delete(u, "mystery-model")
	if got := Cost(u).String(); got != "$10.50 equivalent API cost" {
		t.Errorf("labelled, all known: %q", got)
	}
}

func TestPrice(t *testing.T) {
	cases := []struct {
		tokens int64
		rate   Micros
		want   Micros
	}{
		{0, 3_000_000, 0},
		{1, 3_000_000, 3},
		{1, 125_000, 0}, // 0.125 micro-dollars rounds to 0
		{4, 125_000, 1}, // 0.5 rounds up
		{1_000_001, 300_000, 300_000},
		{12_345_678, 3_750_000, 46_296_293}, // 46.2962925 rounds up
		{5_000_000_000, 75_000_000, 375_000_000_000},
	}
	for _, c := range cases {
		if got := price(c.tokens, c.rate); got != c.want {
			t.Errorf("price(%d, %d) = %d, want %d", c.tokens, c.rate, got, c.want)
		}
	}
}

func TestMicrosString(t *testing.T) {
	for m, want := range map[Micros]string{
		0: "$0.00", 1: "<$0.01", 4_999: "<$0.01", 5_000: "$0.01", 1_234_999: "$1.23",
		1_235_000: "$1.24", 100_000_000: "$100.00", -2_500_000: "-$2.50",
	} {
		if got := m.String(); got != want {
			t.Errorf("Micros(%d) = %q, want %q", m, got, want)
		}
	}
}

func TestParseDollars(t *testing.T) {
	for in, want := range map[string]Micros{"3": 3_000_000, "0.30": 300_000, "0.005": 5_000, ".5": 500_000, "18.75": 18_750_000, "0.000001": 1} {
		got, err := parseDollars(in)
		if err != nil || got != want {
			t.Errorf("parseDollars(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ".", "-1", "+1", "1.0000001", "abc", "1e3", "$3", "2000000"} {
		if _, err := parseDollars(bad); err == nil {
			t.Errorf("parseDollars(%q) accepted", bad)
		}
	}
}

// TestLoadOverride: an override row replaces its key and adds new keys; a
// malformed file is an error naming its line, and the built-in table stays.
func TestLoadOverride(t *testing.T) {
	good := "# mine\nclaude-sonnet-4-5,6,30,7.5,0.6,https://example.invalid/p,2026-12-01\n\nacme-coder,1,2,0,0.5,local,2026-12-01\n"
	cases := []struct {
		name   string
		file   *string
		errHas []string
		sonnet Micros // the input rate Resolve then gives Sonnet 4.5
		acme   bool   // acme-coder is known
	}{
		{name: "no file", sonnet: 3_000_000},
		{name: "override and addition", file: &good, sonnet: 6_000_000, acme: true},
		{name: "too few fields", file: ptr("claude-sonnet-4-5,6,30,7.5,0.6,src,2026-12-01\nacme,1,2,3\n"), errHas: []string{"line 2", "4 fields"}, sonnet: 3_000_000},
		{name: "bad price", file: ptr("# c\n\nacme,1,x,3,4,src,2026-12-01\n"), errHas: []string{"line 3", "output price"}, sonnet: 3_000_000},
		{name: "bad date", file: ptr("acme,1,2,3,4,src,yesterday\n"), errHas: []string{"line 1", "date"}, sonnet: 3_000_000},
		{name: "duplicate key", file: ptr("acme,1,2,3,4,s,2026-12-01\nACME,1,2,3,4,s,2026-12-01\n"), errHas: []string{"line 2", "line 1"}, sonnet: 3_000_000},
		{name: "empty key", file: ptr(",1,2,3,4,s,2026-12-01\n"), errHas: []string{"line 1", "empty"}, sonnet: 3_000_000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.file != nil {
				if err := os.WriteFile(filepath.Join(dir, OverrideFile), []byte(*c.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tab, err := Load(dir)
			if len(c.errHas) == 0 && err != nil {
				t.Fatalf("Load: %v", err)
			}
			for _, s := range c.errHas {
				if err == nil || !strings.Contains(err.Error(), s) {
					t.Errorf("error %v, want it to say %q", err, s)
				}
			}
			if err != nil && !strings.Contains(err.Error(), OverrideFile) {
				t.Errorf("error %v does not name the file", err)
			}
			if tab == nil {
				t.Fatal("no table")
			}
			if r, _ := tab.Resolve("claude-sonnet-4-5-20250929"); r.Rates.Input != c.sonnet {
				t.Errorf("sonnet input rate %d, want %d", r.Rates.Input, c.sonnet)
			}
			if _, known := tab.Resolve("acme-coder-v2"); known != c.acme {
				t.Errorf("acme-coder known=%v, want %v", known, c.acme)
			}
			if _, known := tab.Resolve("claude-haiku-4-5"); !known {
				t.Error("a built-in row the override does not name was lost")
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestBuiltinTable: every row has a source and a date, and the fallback is
// there.
func TestBuiltinTable(t *testing.T) {
	rows := Builtin().Rows()
	if rows[len(rows)-1].Key != FallbackKey {
		t.Fatalf("last row %q, want the fallback", rows[len(rows)-1].Key)
	}
	for _, r := range rows {
		if !strings.HasPrefix(r.Source, "https://") || r.Date == "" || r.Rates.Input == 0 || r.Rates.Output == 0 {
			t.Errorf("row %+v lacks a source, a date or a rate", r)
		}
	}
	if !strings.Contains(builtinCSV, "LIST PRICES") {
		t.Error("the table does not say its figures are list prices")
	}
}
