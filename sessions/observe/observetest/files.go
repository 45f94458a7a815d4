package observetest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Append appends data to the file at path as an agent writes it (creating
// the file and its directories).
func Append[D string | []byte](t testing.TB, path string, data ...D) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	for _, d := range data {
		if _, err := fh.Write([]byte(d)); err != nil {
			t.Fatal(err)
		}
	}
}

// Lines joins lines, each with its newline (nil for none).
func Lines(ls ...[]byte) []byte {
	if len(ls) == 0 {
		return nil
	}
	return append(bytes.Join(ls, []byte("\n")), '\n')
}

// ReadLines is the non-blank lines of testdata/name (a file the real CLI
// wrote).
func ReadLines(t testing.TB, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// Word names an observed state the way a test lists the states a follower
// saw: the state, then its wait and its tool when it has them
// ("waiting_on_user/permission/command").
func Word(st sessions.ObservedState, withTool bool) string {
	s := st.State.String()
	if st.Wait != sessions.NoWait {
		s += "/" + st.Wait.String()
	}
	if withTool && st.Tool != "" {
		s += "/" + st.Tool
	}
	return s
}

// Path feeds lines one by one to feed and returns the distinct words (Word)
// of the states infer decides after each: what a follower sees on the way.
func Path(lines [][]byte, feed func([]byte), infer func() sessions.ObservedState, withTool bool) []string {
	var seen []string
	for _, l := range lines {
		feed(l)
		w := Word(infer(), withTool)
		if len(seen) == 0 || seen[len(seen)-1] != w {
			seen = append(seen, w)
		}
	}
	return seen
}

// TestdataLines is every non-blank line of every testdata/*.jsonl (the
// files the real CLI wrote).
func TestdataLines(t testing.TB) [][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	var out [][]byte
	for _, name := range files {
		out = append(out, ReadLines(t, filepath.Base(name))...)
	}
	return out
}

// BigJSON is a JSON string of 256 KB of build output: a command's result
// as a session's file keeps it.
func BigJSON() []byte {
	big, _ := json.Marshal(strings.Repeat("build output line ok\n", (256<<10)/21))
	return big
}

// BenchFeed measures reading lines into a summary (a fresh one each op,
// every line fed once); skipped says how many lines it dropped, which
// must be none. The bytes per op are the lines with their newlines.
func BenchFeed[T any, S interface {
	*T
	Feed([]byte)
}](b *testing.B, lines [][]byte, skipped func(S) int) {
	var n int64
	for _, l := range lines {
		n += int64(len(l)) + 1
	}
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		sum := S(new(T))
		for _, l := range lines {
			sum.Feed(l)
		}
		if k := skipped(sum); k != 0 {
			b.Fatalf("%d lines skipped", k)
		}
	}
}

// SeedLines adds every real line of testdata shorter than 4 KB to a fuzz
// corpus of line pairs (as the first line, the second empty).
func SeedLines(f *testing.F) {
	for _, l := range TestdataLines(f) {
		if len(l) < 4096 {
			f.Add(l, []byte(nil))
		}
	}
}

// WithRounds is the testdata lines, then rounds of a turn whose lines
// round(i, big) writes around big (BigJSON): a session's file that kept
// many large outputs.
func WithRounds(t testing.TB, rounds int, round func(i int, big []byte) [][]byte) [][]byte {
	out := TestdataLines(t)
	big := BigJSON()
	for i := range rounds {
		out = append(out, round(i, big)...)
	}
	return out
}

// Decided checks what every rule stack promises for any evidence: a state
// with its evidence sentence, by a named rule, and a failure named when it
// says Errored.
func Decided(t testing.TB, st sessions.ObservedState, rule string) {
	t.Helper()
	if st.Evidence == "" || st.State.String() == "" || rule == "" {
		t.Fatalf("no decision: %+v (%s)", st, rule)
	}
	if st.State == sessions.Errored && st.Failure.Kind == sessions.NoFailure {
		t.Fatalf("errored without a failure: %+v", st)
	}
}
