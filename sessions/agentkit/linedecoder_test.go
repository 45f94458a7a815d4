package agentkit_test

import (
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// A LineDecoder decodes each line with the adapter's function under the
// state it keeps, turns an oversize line into the adapter's skip, counts
// both, and lets the adapter's methods reach the state.
func TestLineDecoder(t *testing.T) {
	type line struct {
		text, skip string
		seen       int
	}
	decode := func(st *int, raw agentkit.RawLine) (line, agentkit.Tally) {
		*st++
		return line{text: string(raw.Bytes), seen: *st}, agentkit.Tally{Events: 1, Unknown: string(raw.Bytes) == "?"}
	}
	oversize := func(raw agentkit.RawLine, detail string) line { return line{skip: detail} }
	d := agentkit.NewLineDecoder(strings.NewReader("a\n\n?\n"+strings.Repeat("x", 20)+"\nb"), 0, 8, "test", decode, oversize)
	got := agenttest.Drain(t, d)
	want := []line{{text: "a", seen: 1}, {text: "?", seen: 2}, {skip: "line of 20 bytes exceeds the 8-byte limit"}, {text: "b", seen: 3}}
	if len(got) != len(want) {
		t.Fatalf("lines %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if st := d.Stats(); st != (agentkit.Counters{Lines: 4, Events: 3, Unknown: 1, Oversize: 1}) {
		t.Errorf("Stats = %+v", st)
	}
	st := d.Lock()
	*st = 10
	d.Unlock()
	if n := *d.Lock(); n != 10 {
		t.Errorf("state %d after the adapter set 10", n)
	}
	d.Unlock()
}
