package agentkit

import (
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// TestLineReader: the framing every line-framed adapter shares (the
// adapters' decoder tests check the same through their Decoders).
func TestLineReader(t *testing.T) {
	type want struct {
		text     string
		number   int64
		size     int
		oversize bool
	}
	for _, tc := range []struct {
		name    string
		in      string
		maxLine int
		want    []want
	}{
		{"lines and blank lines", "a\n\n  \nbc\n", 10, []want{{"a", 1, 1, false}, {"bc", 2, 2, false}}},
		{"CRLF endings", "a\r\nbc\r\n", 10, []want{{"a", 1, 1, false}, {"bc", 2, 2, false}}},
		{"a last line without a newline", "a\nbc", 10, []want{{"a", 1, 1, false}, {"bc", 2, 2, false}}},
		{"exactly the limit", "abcd\nabcd\r\n", 4, []want{{"abcd", 1, 4, false}, {"abcd", 2, 4, false}}},
		{"over the limit, then on", "abcde\nab\n", 4, []want{{"", 1, 5, true}, {"ab", 2, 2, false}}},
		{"over the limit with CRLF", "abcde\r\nab\n", 4, []want{{"", 1, 6, true}, {"ab", 2, 2, false}}},
		{"a long line cut by the end", "ab\n" + strings.Repeat("x", 50), 10, []want{{"ab", 1, 2, false}, {"", 2, 50, true}}},
		{"longer than the read buffer", strings.Repeat("y", 3*readBufSize) + "\nz\n", 4 * readBufSize,
			[]want{{strings.Repeat("y", 3*readBufSize), 1, 3 * readBufSize, false}, {"z", 2, 1, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lr := NewLineReader(iotest.HalfReader(strings.NewReader(tc.in)), tc.maxLine, "test")
			for i, w := range tc.want {
				got, err := lr.Next()
				if err != nil || string(got.Bytes) != w.text || got.Number != w.number || got.Size != w.size || got.Oversize != w.oversize {
					t.Fatalf("line %d: %q #%d size %d oversize %v (%v); want %q #%d size %d oversize %v",
						i+1, got.Bytes, got.Number, got.Size, got.Oversize, err, w.text, w.number, w.size, w.oversize)
				}
			}
			if _, err := lr.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the last line: %v, want EOF", err)
			}
			if _, err := lr.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("EOF is not sticky: %v", err)
			}
		})
	}
}

// A read error ends the stream, wrapped with the agent's name and the line.
func TestLineReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	lr := NewLineReader(io.MultiReader(strings.NewReader("a\n"), iotest.ErrReader(boom)), 10, "codex")
	if l, err := lr.Next(); err != nil || string(l.Bytes) != "a" {
		t.Fatalf("first line %q %v", l.Bytes, err)
	}
	_, err := lr.Next()
	if !errors.Is(err, boom) || err.Error() != "codex stream: read line 2: boom" {
		t.Fatalf("err = %v", err)
	}
}

// TestLineBufferReleased checks the buffer policy for lines longer than
// the read buffer: reused across a burst, dropped once small lines are
// back, so an idle session does not pin the memory of its biggest line.
func TestLineBufferReleased(t *testing.T) {
	big := strings.Repeat("z", 3*readBufSize)
	var b strings.Builder
	b.WriteString(big + "\n" + big + "\n")
	for range idleRelease + 1 {
		b.WriteString("{}\n")
	}
	lr := NewLineReader(strings.NewReader(b.String()), 16<<20, "test")
	for i := 0; ; i++ {
		l, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || l.Oversize {
			t.Fatalf("line %d: %+v %v", i+1, l, err)
		}
		if i == 1 && cap(lr.acc) < len(big) {
			t.Fatalf("no line buffer after two long lines (cap %d)", cap(lr.acc))
		}
	}
	if lr.acc != nil {
		t.Errorf("line buffer of %d bytes still held after %d small lines", cap(lr.acc), idleRelease+1)
	}
}

// NextLine counts every line once: oversize ones without decoding them,
// decoded ones with their events and skips.
func TestNextLineCounts(t *testing.T) {
	lr := NewLineReader(strings.NewReader("ok\nbad\n?\n"+strings.Repeat("x", 20)+"\n"), 10, "test")
	var mu sync.Mutex
	var stats Counters
	decode := func(raw RawLine) (string, Tally) {
		switch string(raw.Bytes) {
		case "bad":
			return "malformed", Tally{Malformed: true}
		case "?":
			return "unknown", Tally{Unknown: true}
		}
		return "decoded", Tally{Events: 2}
	}
	oversize := func(raw RawLine) string { return lr.OversizeDetail(raw.Size) }
	var got []string
	for {
		l, err := NextLine(lr, &mu, &stats, oversize, decode)
		if err != nil {
			break
		}
		got = append(got, l)
	}
	want := []string{"decoded", "malformed", "unknown", "line of 20 bytes exceeds the 10-byte limit"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", got, want)
	}
	if stats != (Counters{Lines: 4, Events: 2, Malformed: 1, Unknown: 1, Oversize: 1}) || stats.Skipped() != 3 {
		t.Errorf("counters %+v", stats)
	}
}
