package agentkit

import (
	"encoding/json"
	"testing"
)

// TestJSONLine: one line, newline-terminated, with a prompt's text byte for
// byte (no HTML escaping) and a newline in a value escaped.
func TestJSONLine(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{map[string]string{"text": "a < b && c > d"}, `{"text":"a < b && c > d"}` + "\n"},
		{map[string]string{"text": "two\nlines"}, `{"text":"two\nlines"}` + "\n"},
		{struct {
			ID  json.RawMessage `json:"id"`
			Raw json.RawMessage `json:"raw"`
		}{json.RawMessage(`7`), json.RawMessage(`{"a": [1, 2]}`)}, `{"id":7,"raw":{"a":[1,2]}}` + "\n"},
	} {
		if got := string(JSONLine(tc.v)); got != tc.want {
			t.Errorf("JSONLine(%+v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestJSONLinePanicsOnABug: a value that cannot be encoded is the
// adapter's bug, not input to skip.
func TestJSONLinePanicsOnABug(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("JSONLine encoded a channel")
		}
	}()
	JSONLine(map[string]any{"c": make(chan int)})
}

// TestRawRPCID: an id kept as a key goes back as the agent sent it, and
// RPCID keys it again the same.
func TestRawRPCID(t *testing.T) {
	for id, want := range map[string]string{"7": `7`, "-3": `-3`, "abc": `"abc"`, `a"b`: `"a\"b"`, "1.5": `"1.5"`, "": `""`} {
		got := RawRPCID(id)
		if string(got) != want {
			t.Errorf("RawRPCID(%q) = %s, want %s", id, got, want)
		}
		if back := RPCID(got); back != id {
			t.Errorf("RPCID(RawRPCID(%q)) = %q", id, back)
		}
	}
}
