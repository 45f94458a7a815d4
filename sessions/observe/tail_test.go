package observe

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func appendFile(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func pollLines(t testing.TB, tl *Tailer) ([]string, bool) {
	t.Helper()
	lines, reset, err := tl.Poll()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range lines {
		out = append(out, string(l))
	}
	return out, reset
}

func TestTailerFollowsAppendsTruncationAndRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	tl := NewTailer(path)
	steps := []struct {
		name      string
		do        func()
		want      []string
		wantReset bool
	}{
		{"missing file yields nothing", func() {}, nil, false},
		{"first read", func() { appendFile(t, path, "a\nb\n") }, []string{"a", "b"}, true},
		{"nothing new", func() {}, nil, false},
		{"a partial last line waits for its newline", func() { appendFile(t, path, "c1") }, nil, false},
		{"the partial line completes", func() { appendFile(t, path, "c2\nd\n") }, []string{"c1c2", "d"}, false},
		{"blank lines are skipped", func() { appendFile(t, path, "\n\ne\n") }, []string{"e"}, false},
		{"truncated in place: start over", func() {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			appendFile(t, path, "x\n")
		}, []string{"x"}, true},
		{"rotated: another file under the name", func() {
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
			appendFile(t, path, "new1\nnew2\n")
		}, []string{"new1", "new2"}, true},
		{"removed: reset, nothing", func() { os.Remove(path) }, nil, true},
		{"back again", func() { appendFile(t, path, "z\n") }, []string{"z"}, true},
	}
	for _, st := range steps {
		st.do()
		got, reset := pollLines(t, tl)
		if strings.Join(got, "|") != strings.Join(st.want, "|") || reset != st.wantReset {
			t.Fatalf("%s: got %q reset=%v, want %q reset=%v", st.name, got, reset, st.want, st.wantReset)
		}
	}
}

// A 50 MB single line (a /compact summary) is skipped by measured length,
// never held in memory, and the lines around it still arrive.
func TestTailerSkipsHugeLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendFile(t, path, "")
	tl := NewTailer(path)
	pollLines(t, tl)
	appendFile(t, path, "before\n")
	big := bytes.Repeat([]byte("x"), 50<<20)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	// Written in two halves with a poll between: the line is still open
	// when the tailer first sees it.
	f.Write(big[:25<<20])
	got, _ := pollLines(t, tl)
	if strings.Join(got, "|") != "before" {
		t.Fatalf("got %q", got)
	}
	if len(tl.partial) > MaxLine {
		t.Fatalf("holding %d bytes of an open line", len(tl.partial))
	}
	f.Write(big[25<<20:])
	f.WriteString("\nafter\n")
	f.Close()
	got, _ = pollLines(t, tl)
	if strings.Join(got, "|") != "after" || tl.Skipped != 1 {
		t.Fatalf("got %q skipped %d, want [after] and 1 skipped", got, tl.Skipped)
	}
}

// A large transcript is read only at its tail: the first poll reads at
// most the start window, and later polls only what was appended.
func TestTailerReadsLargeFileOnlyAtTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	line := strings.Repeat("y", 999) + "\n"
	f, _ := os.Create(path)
	for i := 0; i < 64<<10; i++ { // 64 MB
		f.WriteString(line)
	}
	f.WriteString("last\n")
	f.Close()
	tl := NewTailer(path)
	got, reset := pollLines(t, tl)
	if !reset || got[len(got)-1] != "last" {
		t.Fatalf("first poll ended with %q reset=%v", got[len(got)-1], reset)
	}
	if tl.BytesRead > startWindow {
		t.Fatalf("read %d bytes, want at most the %d-byte window", tl.BytesRead, startWindow)
	}
	for _, l := range got[:len(got)-1] {
		if len(l) != 999 {
			t.Fatalf("a cut line came through: %d bytes", len(l))
		}
	}
	before := tl.BytesRead
	appendFile(t, path, "more\n")
	got, _ = pollLines(t, tl)
	if strings.Join(got, "|") != "more" || tl.BytesRead-before != 5 {
		t.Fatalf("got %q after reading %d bytes", got, tl.BytesRead-before)
	}
}
