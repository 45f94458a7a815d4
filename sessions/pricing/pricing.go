// Package pricing turns a session's tokens into their equivalent API cost:
// what the same tokens would cost at the providers' public list prices, per
// model and per rate class (input, output, cache write, cache read), summed —
// never one blended rate. It is not a charge: a subscription is billed
// otherwise, and every view labels the figure with Label.
//
// The table is prices.csv, embedded; a file of the same format in the data
// directory (OverrideFile) replaces rows by key and adds new ones. A model id
// is resolved by the longest table key its normalised form starts with (see
// Normalize and Table.Resolve); an id the table has never seen is priced on
// the "fallback" row and flagged unknown, never dropped.
//
// What each agent reports (measured from the real CLIs against their fake
// APIs; the decoders turn it into sessions.UsageReport):
//
//   - Claude Code 2.1.197 (stream-json): every assistant line carries its
//     API call's usage (input_tokens, output_tokens,
//     cache_creation_input_tokens, cache_read_input_tokens) and the model id
//     the API answered with, dated (claude-sonnet-4-5-20250929); but it is
//     the usage of the call's message_start, so output_tokens is 1 whatever
//     the model wrote, and a message of several blocks repeats it. The
//     decoder counts each message id once and, at the turn's result line,
//     adds what the result's usage (the turn's calls summed, final output
//     included) has beyond that. The result's modelUsage and total_cost_usd
//     are the process's running totals, keyed by the model the CLI asked for
//     ("claude-opus-4-8[1m]"), not the one that answered: not read.
//   - Codex 0.171.0 (app-server): thread/tokenUsage/updated carries the
//     thread's running total (total) and its last call's (last), with no
//     model: the model is the thread's, from thread/start, thread/resume or
//     thread/started (the configured one, not what the API answered). The
//     decoder reports the total (sessions.UsageCumulative, one counter per
//     thread, a subagent's included), so a missed notification loses
//     nothing; a thread resumed in a new process reports a total that
//     includes its past, which the session's kept total absorbs. Its
//     inputTokens include the cached ones (cachedInputTokens, moved to
//     cache read); cacheWriteInputTokens is 0 on the OpenAI API.
//   - Gemini CLI 0.61.0 (ACP): the session/prompt answer's
//     _meta.quota carries the turn's token_count (input_tokens,
//     output_tokens) and model_usage (the same by model, the model the
//     settings name); each prompt reports its own calls (a delta). No cache
//     split: input_tokens include the cached tokens (the API's
//     cachedContentTokenCount), so they are priced at the input rate, an
//     overestimate where the cache was hit; no cache write. No usage_update
//     arrives.
//   - OpenCode 1.18.33 (serve, SSE): message.updated for an assistant
//     message carries its tokens so far (input without the cache, output,
//     reasoning, cache read and write), its cost in dollars by OpenCode's
//     own model table (0 for a model it has no price for), providerID and
//     modelID; it is sent again at each step of the message, so it is
//     counted once per message id. Reasoning is added to output (billed
//     as output). OpenCode's own cost is not read: the table here prices
//     every agent alike. session.updated's running totals are not read.
//   - Copilot CLI 1.0.102 (prompt mode, BYOK): stdout carries no token
//     counts (its result line has premium requests and durations only). The
//     session file, session-state/<id>/events.jsonl, has one
//     session.usage_record per model call (model, inputTokens with the
//     cache included, outputTokens, cacheReadTokens, cacheWriteTokens, its
//     own cost, apiCallId), which the decoder reads; the managed adapter
//     does not tail that file yet, so a managed Copilot session shows no
//     usage, and the terminal source (which reads events.jsonl through the
//     same decoder) reports only an inferred state for now.
package pricing

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Label is how every view names the figure: it is what the tokens would have
// cost on the API, not what anyone was charged.
const Label = "equivalent API cost"

// OverrideFile is the name, in the data directory, of the table that
// overrides the built-in one.
const OverrideFile = "pricing.csv"

// FallbackKey is the row an unknown model is priced on.
const FallbackKey = "fallback"

//go:embed prices.csv
var builtinCSV string

// Micros is an amount of money in millionths of a US dollar: exact integer
// arithmetic, so summing many small costs loses nothing.
type Micros int64

// String formats the amount for display, rounded to the cent: "$1.23". A
// non-zero amount below half a cent shows as "<$0.01", not as free.
func (m Micros) String() string {
	neg := m < 0
	if neg {
		m = -m
	}
	if m > 0 && m < 5_000 {
		if neg {
			return ">-$0.01"
		}
		return "<$0.01"
	}
	cents := (int64(m) + 5_000) / 10_000
	s := fmt.Sprintf("$%d.%02d", cents/100, cents%100)
	if neg {
		s = "-" + s
	}
	return s
}

// Rates are micro-dollars per million tokens of each rate class, which is
// also dollars per token times 10^12: a price of $3/MTok is 3_000_000.
type Rates struct {
	Input, Output, CacheWrite, CacheRead Micros
}

// Row is one model's list prices and where they come from.
type Row struct {
	Key    string `json:"key"`
	Rates  Rates  `json:"rates"`
	Source string `json:"source"`
	// Date is when the price was published or read (YYYY-MM-DD).
	Date string `json:"date"`
}

// Table is a pricing table: rows by key, and the fallback row.
type Table struct {
	rows     map[string]Row
	keys     []string // longest first, for Resolve
	fallback Row
}

// Builtin is the table embedded in the binary.
func Builtin() *Table {
	t, err := Parse(builtinCSV)
	if err != nil {
		panic("pricing: the embedded table is malformed: " + err.Error())
	}
	return t
}

// Load returns the built-in table with the data directory's override file
// applied. No override file is no error. A malformed one is: the error names
// its line, and the table returned is the built-in one, in force unchanged.
func Load(dataDir string) (*Table, error) {
	base := Builtin()
	path := filepath.Join(dataDir, OverrideFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return base, nil
	}
	if err != nil {
		return base, fmt.Errorf("pricing override: %w", err)
	}
	over, err := parseRows(string(b))
	if err != nil {
		return base, fmt.Errorf("pricing override %s: %w; the built-in prices stay in force", path, err)
	}
	return base.with(over)
}

// Parse reads a table in the prices.csv format; it must have a fallback row.
func Parse(text string) (*Table, error) {
	rows, err := parseRows(text)
	if err != nil {
		return nil, err
	}
	return (&Table{rows: map[string]Row{}}).with(rows)
}

// with returns t with rows replacing and adding by key.
func (t *Table) with(rows []Row) (*Table, error) {
	n := &Table{rows: make(map[string]Row, len(t.rows)+len(rows))}
	for k, r := range t.rows {
		n.rows[k] = r
	}
	for _, r := range rows {
		n.rows[r.Key] = r
	}
	fb, ok := n.rows[FallbackKey]
	if !ok {
		return t, fmt.Errorf("pricing: no %q row", FallbackKey)
	}
	n.fallback = fb
	for k := range n.rows {
		if k != FallbackKey {
			n.keys = append(n.keys, k)
		}
	}
	// Longest first; ties by name so the order is stable.
	slices.SortFunc(n.keys, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return n, nil
}

// parseRows reads the CSV text's rows; an error names the line (1-based).
func parseRows(text string) ([]Row, error) {
	var rows []Row
	seen := map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := parseRow(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if prev, dup := seen[r.Key]; dup {
			return nil, fmt.Errorf("line %d: key %q already on line %d", i+1, r.Key, prev)
		}
		seen[r.Key] = i + 1
		rows = append(rows, r)
	}
	return rows, nil
}

func parseRow(line string) (Row, error) {
	f := strings.Split(line, ",")
	if len(f) != 7 {
		return Row{}, fmt.Errorf("%d fields, want 7 (key,input,output,cache_write,cache_read,source,date)", len(f))
	}
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	key := strings.ToLower(f[0])
	if key == "" {
		return Row{}, errors.New("empty model key")
	}
	var rates [4]Micros
	for i, name := range []string{"input", "output", "cache_write", "cache_read"} {
		m, err := parseDollars(f[1+i])
		if err != nil {
			return Row{}, fmt.Errorf("%s price %q: %w", name, f[1+i], err)
		}
		rates[i] = m
	}
	if _, err := parseDate(f[6]); err != nil {
		return Row{}, fmt.Errorf("date %q: %w", f[6], err)
	}
	return Row{
		Key:    key,
		Rates:  Rates{Input: rates[0], Output: rates[1], CacheWrite: rates[2], CacheRead: rates[3]},
		Source: f[5],
		Date:   f[6],
	}, nil
}

// parseDollars reads a non-negative decimal amount of dollars with at most
// six decimals, exactly (no float).
func parseDollars(s string) (Micros, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" {
		return 0, errors.New("not a number")
	}
	if len(frac) > 6 {
		return 0, errors.New("more than six decimals")
	}
	var w, fr int64
	var err error
	if whole != "" {
		if w, err = strconv.ParseInt(whole, 10, 64); err != nil || w < 0 || strings.ContainsAny(whole, "+-") {
			return 0, errors.New("not a non-negative number")
		}
	}
	if frac != "" {
		if fr, err = strconv.ParseInt(frac, 10, 64); err != nil || strings.ContainsAny(frac, "+-") {
			return 0, errors.New("not a non-negative number")
		}
		for range 6 - len(frac) {
			fr *= 10
		}
	}
	if w > 1_000_000 {
		return 0, errors.New("over $1,000,000 per million tokens")
	}
	return Micros(w*1_000_000 + fr), nil
}

// parseDate checks a YYYY-MM-DD date.
func parseDate(s string) (string, error) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return "", errors.New("want YYYY-MM-DD")
	}
	for i, c := range s {
		if i != 4 && i != 7 && (c < '0' || c > '9') {
			return "", errors.New("want YYYY-MM-DD")
		}
	}
	return s, nil
}

// Rows lists the table's rows, the fallback last, for display.
func (t *Table) Rows() []Row {
	out := make([]Row, 0, len(t.rows))
	for _, k := range slices.Sorted(slices.Values(t.keys)) {
		out = append(out, t.rows[k])
	}
	return append(out, t.fallback)
}

// Normalize is a model id as the table's keys are written: lower case, with
// what providers and CLIs add around the model's name removed — a provider
// prefix ("anthropic/", "models/", "openrouter/openai/"), a variant or
// context tag ("[1m]", "@20250929", ":latest"), and a trailing date
// ("-20250929", "-2025-09-29").
func Normalize(id string) string {
	s := strings.ToLower(strings.TrimSpace(id))
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.IndexAny(s, "[@:"); i >= 0 {
		s = s[:i]
	}
	s = trimDate(s)
	return strings.TrimRight(s, "-_. ")
}

// trimDate removes a trailing -YYYYMMDD or -YYYY-MM-DD.
func trimDate(s string) string {
	if n := len(s); n > 9 && s[n-9] == '-' && digits(s[n-8:]) {
		return s[:n-9]
	}
	if n := len(s); n > 11 && s[n-11] == '-' && s[n-6] == '-' && s[n-3] == '-' &&
		digits(s[n-10:n-6]+s[n-5:n-3]+s[n-2:]) {
		return s[:n-11]
	}
	return s
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// Resolve finds the row that prices modelID: the longest key the normalised
// id starts with, where what follows the key is nothing or a variant word
// ("-thinking", "-preview", "-max"), never a further version number: a
// "claude-opus-4-7" the table has not seen is unknown, not priced as
// "claude-opus-4". Known is false when no key matched; the row is then the
// fallback, and the caller shows the cost flagged, never drops it.
func (t *Table) Resolve(modelID string) (row Row, known bool) {
	n := Normalize(modelID)
	for _, k := range t.keys {
		if !strings.HasPrefix(n, k) {
			continue
		}
		rest := n[len(k):]
		if rest == "" || (rest[0] == '-' || rest[0] == '_') && !startsWithDigit(rest[1:]) {
			return t.rows[k], true
		}
	}
	return t.fallback, false
}

func startsWithDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

// Amounts is a cost per rate class.
type Amounts struct {
	Input      Micros `json:"input"`
	Output     Micros `json:"output"`
	CacheWrite Micros `json:"cache_write"`
	CacheRead  Micros `json:"cache_read"`
}

// Total sums the four classes.
func (a Amounts) Total() Micros { return a.Input + a.Output + a.CacheWrite + a.CacheRead }

func (a Amounts) add(o Amounts) Amounts {
	return Amounts{a.Input + o.Input, a.Output + o.Output, a.CacheWrite + o.CacheWrite, a.CacheRead + o.CacheRead}
}

// ModelCost is one model's tokens priced per class.
type ModelCost struct {
	// Model is the id as the agent reported it; Row the key that priced it.
	Model  string          `json:"model"`
	Row    string          `json:"row"`
	Known  bool            `json:"known"`
	Tokens sessions.Tokens `json:"tokens"`
	Cost   Amounts         `json:"cost"`
}

// Breakdown is a usage's equivalent API cost: per model and class, and the
// sums. Label says what it is.
type Breakdown struct {
	Label   string      `json:"label"`
	Models  []ModelCost `json:"models"`
	ByClass Amounts     `json:"by_class"`
	Total   Micros      `json:"total_micro_usd"`
	// Unknown: some model was priced on the fallback row.
	Unknown bool `json:"unknown,omitempty"`
}

// String is the figure as every view shows it, labelled: "$1.23 equivalent
// API cost", with a note when a model was priced on the fallback row.
func (b Breakdown) String() string {
	s := b.Total.String() + " " + Label
	if b.Unknown {
		s += " (some models unknown, priced at the fallback rate)"
	}
	return s
}

// Cost prices u per model and rate class with t, and sums.
func (t *Table) Cost(u sessions.Usage) Breakdown {
	b := Breakdown{Label: Label, Models: make([]ModelCost, 0, len(u))}
	for _, m := range u.Models() {
		row, known := t.Resolve(m)
		tk := u[m]
		c := Amounts{
			Input:      price(tk.Input, row.Rates.Input),
			Output:     price(tk.Output, row.Rates.Output),
			CacheWrite: price(tk.CacheWrite, row.Rates.CacheWrite),
			CacheRead:  price(tk.CacheRead, row.Rates.CacheRead),
		}
		b.Models = append(b.Models, ModelCost{Model: m, Row: row.Key, Known: known, Tokens: tk, Cost: c})
		b.ByClass = b.ByClass.add(c)
		b.Unknown = b.Unknown || !known
	}
	b.Total = b.ByClass.Total()
	return b
}

// price is tokens at a rate per million tokens, rounded half up to the
// micro-dollar, per class (the classes are then summed, never blended).
func price(tokens int64, perMTok Micros) Micros {
	if tokens <= 0 || perMTok <= 0 {
		return 0
	}
	// Whole millions of tokens cost exactly the rate each; the rest times
	// the rate stays below 10^6 × 10^12 (parseDollars caps a rate), inside
	// int64.
	mil, rest := tokens/1_000_000, tokens%1_000_000
	return Micros(mil)*perMTok + Micros((rest*int64(perMTok)+500_000)/1_000_000)
}

var builtin = Builtin()

// Resolve resolves modelID on the built-in table.
func Resolve(modelID string) (Row, bool) { return builtin.Resolve(modelID) }

// Cost prices u on the built-in table.
func Cost(u sessions.Usage) Breakdown { return builtin.Cost(u) }
