package geminiterm

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// FuzzFeed: any bytes, fed as lines in any order, never panic the summary
// or the rule stack, and the phase stays a known one.
func FuzzFeed(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range bytes.Split(b, []byte("\n")) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"$rewindTo":null}`))
	f.Add([]byte(`{"id":"x","type":"user","content":"not parts"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var s Summary
		for _, l := range bytes.Split(line, []byte("\n")) {
			s.Feed(l)
		}
		s.Feed(line)
		if s.Phase.String() == "phase(?)" {
			t.Fatalf("phase %d", s.Phase)
		}
		Infer(Evidence{Liveness: observe.Liveness{Alive: true, Known: true}, Chat: true, Summary: s, ChildrenKnown: true, Now: time.Now()})
	})
}
