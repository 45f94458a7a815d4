package pipeio

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestWriteLineDeadline: a pipe nobody reads fills up; the write gives up
// at its deadline, reports the input broken and closes it.
func TestWriteLineDeadline(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if broken, err := WriteLine(w, []byte("hello\n"), time.Second, "agent"); broken || err != nil {
		t.Fatalf("a small line: broken %v, %v", broken, err)
	}
	broken, err := WriteLine(w, []byte(strings.Repeat("x", 1<<20)), 100*time.Millisecond, "agent")
	if !broken || !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "agent's stdin") {
		t.Fatalf("a 1 MB line nobody reads: broken %v, %v; want broken at the deadline", broken, err)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Error("the broken input is still open")
	}
}

func TestRingKeepsTheTail(t *testing.T) {
	r := &Ring{Max: 8}
	for _, s := range []string{"abc", "defgh", "ijkl"} {
		if n, err := r.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := r.String(); got != "efghijkl" {
		t.Errorf("ring holds %q, want the last 8 bytes", got)
	}
}
