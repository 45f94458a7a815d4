package agentkit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestRPCID(t *testing.T) {
	for raw, want := range map[string]string{`"abc"`: "abc", ` 7 `: "7", `"a\"b"`: `a"b`, `"unterminated`: `"unterminated`, ``: ``} {
		if got := RPCID(json.RawMessage(raw)); got != want {
			t.Errorf("RPCID(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestRememberIsBounded(t *testing.T) {
	var m map[string]int
	if m = Remember(m, "", 1); m != nil {
		t.Fatalf("an empty id made the map: %v", m)
	}
	for i := range MaxTracked + 1 {
		m = Remember(m, strings.Repeat("x", i+1), i)
	}
	if len(m) != 1 || m[strings.Repeat("x", MaxTracked+1)] != MaxTracked {
		t.Fatalf("after MaxTracked+1 entries the map holds %d, want only the newest", len(m))
	}
}

func TestClipAndOrDefault(t *testing.T) {
	if got := Clip(strings.Repeat("a", 65)); got != strings.Repeat("a", 64)+"…" {
		t.Errorf("Clip of 65 bytes = %q", got)
	}
	if got := Clip("short"); got != "short" {
		t.Errorf("Clip(short) = %q", got)
	}
	if OrDefault("", "d") != "d" || OrDefault("s", "d") != "s" {
		t.Error("OrDefault")
	}
	if evs := One(sessions.EvActivity, "d"); len(evs) != 1 || evs[0].Kind != sessions.EvActivity || evs[0].Detail != "d" {
		t.Errorf("One = %+v", evs)
	}
}
