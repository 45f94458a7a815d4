package agenttest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// SeedLines adds every line of the package's captured streams
// (testdata/*.jsonl) and then extra to a fuzz corpus.
func SeedLines(f *testing.F, extra ...string) {
	f.Helper()
	for _, c := range Captures(f, "*.jsonl") {
		sc := bufio.NewScanner(bytes.NewReader(c.Data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f.Add(bytes.Clone(sc.Bytes()))
		}
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

// FuzzDecodeLine is the fuzz target of an adapter's DecodeLine (decode):
// whatever a line of f's corpus or of the fuzzer holds, its decoding keeps
// what CheckDecodedLine checks (skip is the skip its info says), and what
// more checks of the line and its events (nil: nothing more).
func FuzzDecodeLine[I any](f *testing.F, decode func([]byte) ([]sessions.Event, I, error), skip func(I) agentkit.SkipReason,
	malformed, unknown error, more func(t *testing.T, line []byte, events []sessions.Event)) {
	f.Fuzz(func(t *testing.T, line []byte) {
		events, info, err := decode(line)
		CheckDecodedLine(t, events, skip(info), info, err, malformed, unknown)
		if more != nil {
			more(t, line, events)
		}
	})
}

// CheckDecodedLine checks what every line decoder promises for one line: an
// error is malformed or unknown, and comes with that skip; a line skipped
// for another reason than being empty failed; a skipped line yields no
// events; no event is of an unknown kind. info is the line's info, printed
// on failure.
func CheckDecodedLine(t testing.TB, events []sessions.Event, skip agentkit.SkipReason, info any, err, malformed, unknown error) {
	t.Helper()
	switch {
	case err != nil:
		if !errors.Is(err, malformed) && !errors.Is(err, unknown) {
			t.Fatalf("unexpected error class: %v", err)
		}
		if skip != agentkit.SkipMalformed && skip != agentkit.SkipUnknown {
			t.Fatalf("error %v with skip %q: %+v", err, skip, info)
		}
	case skip != agentkit.SkipNone && skip != agentkit.SkipEmpty:
		t.Fatalf("skip %q without an error", skip)
	}
	if skip != agentkit.SkipNone && len(events) != 0 {
		t.Fatalf("skipped line (%q) with events %v: %+v", skip, events, info)
	}
	for _, e := range events {
		if e.Kind == sessions.EvUnknown {
			t.Fatalf("decoder emitted EvUnknown: %+v", e)
		}
	}
}

// Capture is one captured stream of the package's testdata.
type Capture struct {
	Name string // its path, "testdata/text.jsonl"
	Data []byte
}

// Captures reads every file in testdata matching pattern ("*.jsonl"), in
// name order.
func Captures(tb testing.TB, pattern string) []Capture {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", pattern))
	out := make([]Capture, 0, len(files))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, Capture{Name: name, Data: data})
	}
	return out
}

// CheckStream reads stream to its end through a decoder open gives with a
// 128-byte line limit, for a fuzz target: it must not fail or panic, decode
// no line longer than the limit (info gives a line's skip and size) and
// count every line it returned.
func CheckStream[L any](t testing.TB, stream []byte, open func(r io.Reader, maxLine int) Decoder[L, agentkit.Counters], info func(L) (agentkit.SkipReason, int)) {
	t.Helper()
	d := open(bytes.NewReader(stream), 128)
	lines := Drain(t, d)
	for _, l := range lines {
		if skip, size := info(l); skip == agentkit.SkipNone && size > 128 {
			t.Fatalf("decoded a line of %d bytes past the limit", size)
		}
	}
	if st := d.Stats(); st.Lines != int64(len(lines)) {
		t.Fatalf("stats %+v for %d lines", st, len(lines))
	}
}
