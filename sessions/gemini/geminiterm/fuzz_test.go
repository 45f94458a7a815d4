package geminiterm

import (
	"bytes"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
)

// FuzzFeed: any bytes, fed as lines in any order, never panic the summary
// or the rule stack, and the phase stays a known one.
func FuzzFeed(f *testing.F) {
	for _, l := range observetest.TestdataLines(f) {
		f.Add(l)
	}
	f.Add([]byte{}) // a blank line
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
