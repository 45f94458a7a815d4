package agentkit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
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

// An EventDecoder numbers each line, tallies its events and its skip from
// the info the adapter's decode made, and makes an oversize line the
// adapter's info with only the Frame set; decode's error is not the
// stream's.
func TestEventDecoder(t *testing.T) {
	type info struct {
		agentkit.Frame
		Kind string
	}
	decode := func(_ *struct{}, b []byte) ([]sessions.Event, info, error) {
		if string(b) == "?" {
			return nil, info{Frame: agentkit.Frame{Size: len(b), Skip: agentkit.SkipUnknown, Detail: "unknown"}}, errors.New("unknown line")
		}
		return []sessions.Event{{Kind: sessions.EvSessionInit}}, info{Frame: agentkit.Frame{Size: len(b)}, Kind: string(b)}, nil
	}
	d := agentkit.NewEventDecoder(strings.NewReader("a\n?\n"+strings.Repeat("x", 20)+"\nbb\n"), 0, 8, "test", decode)
	got := agenttest.Drain(t, d)
	want := []info{
		{Frame: agentkit.Frame{Number: 1, Size: 1}, Kind: "a"},
		{Frame: agentkit.Frame{Number: 2, Size: 1, Skip: agentkit.SkipUnknown, Detail: "unknown"}},
		{Frame: agentkit.Frame{Number: 3, Size: 20, Skip: agentkit.SkipOversize, Detail: "line of 20 bytes exceeds the 8-byte limit"}},
		{Frame: agentkit.Frame{Number: 4, Size: 2}, Kind: "bb"},
	}
	if len(got) != len(want) {
		t.Fatalf("lines %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Info != want[i] || (len(got[i].Events) == 1) != (want[i].Skip == agentkit.SkipNone) {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if st := d.Stats(); st != (agentkit.Counters{Lines: 4, Events: 2, Unknown: 1, Oversize: 1}) {
		t.Errorf("Stats = %+v", st)
	}
}
