package textsafe

import (
	"errors"
	"strings"
	"testing"
)

var cases = []struct {
	name, in, want string
}{
	{"plain", "fix the build\tnow\n", "fix the build\tnow\n"},
	{"unicode kept", "café — 日本語 ✓", "café — 日本語 ✓"},
	{"colour", "\x1b[31mred\x1b[0m text", "red text"},
	{"csi with params", "a\x1b[1;2;38;5;200mb\x1b[?25lc", "abc"},
	{"cursor movement", "ok\x1b[2K\x1b[1Agone", "okgone"},
	{"osc title bel", "\x1b]0;pwned\x07visible", "visible"},
	{"osc hyperlink st", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
	{"dcs", "\x1bPq#0;2;0;0;0\x1b\\after", "after"},
	{"two-byte escape", "\x1bcreset\x1b7saved", "resetsaved"},
	{"charset designation", "\x1b(Bascii", "ascii"},
	{"c0 controls", "a\x00b\x07c\x08d\re\x7ff", "abcdef"},
	{"c1 csi", "x\u009b31my", "xy"},
	{"c1 osc", "x\u009d0;t\u0007y", "xy"},
	{"c1 other", "a\u0085b\u0084c", "abc"},
	{"bidi override", "file\u202Etxt.exe", "filetxt.exe"},
	{"bidi isolates and marks", "\u2066a\u2069\u200eb\u200f\u061c", "ab"},
	{"invalid utf-8", "a\xffb", "a\ufffdb"},
	{"unterminated osc ends at newline", "\x1b]0;title\nnext line", "\nnext line"},
	{"unterminated csi ends at newline", "\x1b[12\nrest", "\nrest"},
	{"lone escape at end", "end\x1b", "end"},
	{"escape before non-ascii", "\x1bé", "é"},
}

func TestClean(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Clean(c.in); got != c.want {
				t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// Every case written through a Writer one byte at a time (a sequence or a
// UTF-8 character cut by each write boundary) gives what Clean gives.
func TestWriterSplitWrites(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			w := NewWriter(&out)
			for i := 0; i < len(c.in); i++ {
				n, err := w.Write([]byte{c.in[i]})
				if n != 1 || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if out.String() != c.want {
				t.Errorf("byte by byte: %q, want %q", out.String(), c.want)
			}
		})
	}
}

// A sequence that spans two writes is still removed, and the writer goes
// on printing after it.
func TestWriterSequenceAcrossWrites(t *testing.T) {
	var out strings.Builder
	w := NewWriter(&out)
	for _, p := range []string{"one \x1b]0;ti", "tle\x07two \x1b[3", "1mthree\n"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), "one two three\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterReportsTheUnderlyingError(t *testing.T) {
	if _, err := NewWriter(failingWriter{}).Write([]byte("x")); err == nil || err.Error() != "disk full" {
		t.Errorf("err = %v, want the underlying writer's", err)
	}
}

func TestStateString(t *testing.T) {
	for st := text; st <= escInter; st++ {
		if s := st.String(); s == "unknown" || s == "" {
			t.Errorf("state %d has no name", int(st))
		}
	}
	if state(99).String() != "unknown" {
		t.Error("an out-of-range state must read as unknown")
	}
}

// Plain text, the common case, costs no allocation.
func TestCleanPlainDoesNotAllocate(t *testing.T) {
	s := strings.Repeat("a plain evidence line\t", 10)
	if n := testing.AllocsPerRun(100, func() { _ = Clean(s) }); n != 0 {
		t.Errorf("Clean of plain text allocated %.0f times", n)
	}
}

func BenchmarkClean(b *testing.B) {
	for _, in := range []struct{ name, s string }{
		{"plain", strings.Repeat("waiting for review: the model replied ", 8)},
		{"escapes", strings.Repeat("\x1b[31mwaiting\x1b[0m for \u202ereview ", 8)},
	} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.s)))
			for b.Loop() {
				_ = Clean(in.s)
			}
		})
	}
}
