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

// TestInput: lines arrive whole; a write that passes its deadline closes
// the input, after which writes fail with ErrInputClosed; Close is once.
func TestInput(t *testing.T) {
	tests := []struct {
		name string
		// breakIt ends the input: by Close, or by a write nobody reads.
		breakIt func(in *Input) error
		wantErr error
	}{
		{"closed by the caller", func(in *Input) error { return in.Close() }, nil},
		{"broken by a stuck write", func(in *Input) error {
			return in.WriteLine([]byte(strings.Repeat("x", 1<<20)))
		}, os.ErrDeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			in := NewInput(w, 100*time.Millisecond, "agent")
			if err := in.WriteLine([]byte("hello\n")); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 6)
			if _, err := r.Read(got); err != nil || string(got) != "hello\n" {
				t.Fatalf("read %q, %v", got, err)
			}
			if err := tc.breakIt(in); !errors.Is(err, tc.wantErr) && (tc.wantErr != nil || err != nil) {
				t.Fatalf("ending the input: %v, want %v", err, tc.wantErr)
			}
			if err := in.WriteLine([]byte("more\n")); !errors.Is(err, ErrInputClosed) {
				t.Errorf("a write after the end: %v, want ErrInputClosed", err)
			}
			if err := in.Close(); err != nil {
				t.Errorf("a second Close: %v", err)
			}
		})
	}
}
