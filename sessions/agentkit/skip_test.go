package agentkit

import (
	"errors"
	"testing"
)

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
	}
}
