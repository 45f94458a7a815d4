package agentkit

import (
	"errors"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// TestUnmarshalLine: a line trimmed and decoded, or skipped with its reason,
// alone and into a decoder's frame (Frame.Unmarshal).
func TestUnmarshalLine(t *testing.T) {
	errBad := errors.New("bad line")
	type obj struct {
		A string   `json:"a"`
		B []string `json:"b"`
	}
	for _, tt := range []struct {
		line, trimmed string
		skip          SkipReason
		fails         bool
		a             string
	}{
		{line: "  \r", skip: SkipEmpty},
		{line: " [1]", trimmed: "[1]", skip: SkipMalformed, fails: true},
		{line: `{"a":`, trimmed: `{"a":`, skip: SkipMalformed, fails: true},
		{line: ` {"a":"x","b":"not a list"} `, trimmed: `{"a":"x","b":"not a list"}`, skip: SkipNone, a: "x"},
		{line: `{"a":"y"}`, trimmed: `{"a":"y"}`, skip: SkipNone, a: "y"},
	} {
		var v obj
		trimmed, skip, detail, err := UnmarshalLine([]byte(tt.line), &v, errBad)
		if string(trimmed) != tt.trimmed || skip != tt.skip || (err != nil) != tt.fails || v.A != tt.a {
			t.Errorf("UnmarshalLine(%q) = %q, %q, %q, %v (A %q); want %q, %q, error %v, A %q", tt.line, trimmed, skip, detail, err, v.A, tt.trimmed, tt.skip, tt.fails, tt.a)
		}
		if tt.fails && (!errors.Is(err, errBad) || detail == "") {
			t.Errorf("UnmarshalLine(%q): error %v, detail %q; want one wrapping %v and a detail", tt.line, err, detail, errBad)
		}
		// A decoder's line info: the frame says the same, with the size.
		var f Frame
		var fv obj
		ftrimmed, ok, ferr := f.Unmarshal([]byte(tt.line), &fv, errBad)
		want := Frame{Size: len(tt.line), Skip: tt.skip, Detail: detail}
		if string(ftrimmed) != tt.trimmed || ok != (tt.skip == SkipNone) || (ferr != nil) != tt.fails || f != want || fv.A != tt.a {
			t.Errorf("Frame.Unmarshal(%q) = %q, %t, %v (frame %+v, A %q); want %q, %t, error %v, frame %+v, A %q",
				tt.line, ftrimmed, ok, ferr, f, fv.A, tt.trimmed, tt.skip == SkipNone, tt.fails, want, tt.a)
		}
		if tt.fails && !errors.Is(ferr, errBad) {
			t.Errorf("Frame.Unmarshal(%q): error %v, want one wrapping %v", tt.line, ferr, errBad)
		}
	}
}

func TestTallyOf(t *testing.T) {
	two := []sessions.Event{{}, {}}
	for _, tt := range []struct {
		events []sessions.Event
		skip   SkipReason
		want   Tally
	}{
		{two, SkipNone, Tally{Events: 2}},
		{nil, SkipEmpty, Tally{}},
		{nil, SkipMalformed, Tally{Malformed: true}},
		{nil, SkipUnknown, Tally{Unknown: true}},
		{nil, SkipOversize, Tally{}},
	} {
		if got := TallyOf(tt.events, tt.skip); got != tt.want {
			t.Errorf("TallyOf(%d events, %q) = %+v; want %+v", len(tt.events), tt.skip, got, tt.want)
		}
	}
}
