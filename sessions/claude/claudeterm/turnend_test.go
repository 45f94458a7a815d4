package claudeterm

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TurnEnded reads a managed session's transcript (the one the real 2.1.197
// wrote for `claude -p`: three turns, each ending on an end_turn message)
// as it stands at several points, and says whether its last turn ended.
func TestTurnEndedOnARealManagedTranscript(t *testing.T) {
	real, err := os.ReadFile("testdata/transcript_sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(real, []byte("\n"))
	const cwd, id = "/home/user/work/stdin_followup", "caa81986-6719-4f17-80e8-a43f312139de"
	src := &Source{ConfigDir: t.TempDir()}
	path := src.TranscriptPath(cwd, id)
	write := func(parts ...[]byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, bytes.Join(parts, nil), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A tool call and its result in the same turn, in the CLI's record shape.
	toolUse := []byte(`{"type":"assistant","isSidechain":false,"timestamp":"2026-11-29T18:04:24.000Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_9","name":"Bash","input":{"command":"ls"}}],"stop_reason":"tool_use"}}` + "\n")
	toolResult := []byte(`{"type":"user","isSidechain":false,"timestamp":"2026-11-29T18:04:25.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"a.txt"}]}}` + "\n")
	final := []byte(`{"type":"assistant","isSidechain":false,"timestamp":"2026-11-29T18:04:26.500Z","message":{"role":"assistant","content":[{"type":"text","text":"Listed."}],"stop_reason":"end_turn"}}` + "\n")
	prompt := lines[13] // the third turn's prompt, at 18:04:23.737

	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name    string
		content [][]byte
		ok      bool
		at      time.Time
	}{
		{"the whole transcript: the third turn ended", [][]byte{real}, true, at("2026-11-29T18:04:23.787Z")},
		{"the third prompt only: in flight", [][]byte{bytes.Join(lines[:14], nil)}, false, time.Time{}},
		{"a tool open", [][]byte{bytes.Join(lines[:14], nil), toolUse}, false, time.Time{}},
		{"the tool finished, no final message yet", [][]byte{bytes.Join(lines[:14], nil), toolUse, toolResult}, false, time.Time{}},
		{"the final message after the tool", [][]byte{bytes.Join(lines[:14], nil), toolUse, toolResult, final}, true, at("2026-11-29T18:04:26.500Z")},
		{"a tail that starts inside the turn", [][]byte{prompt, toolUse, toolResult, final}, true, at("2026-11-29T18:04:26.500Z")},
	} {
		write(tc.content...)
		got, ok := src.TurnEnded(cwd, id)
		if ok != tc.ok || !got.Equal(tc.at) {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, ok, tc.at, tc.ok)
		}
	}
	if _, ok := src.TurnEnded(cwd, "no-such-session"); ok {
		t.Error("a missing transcript said the turn ended")
	}
	if _, ok := src.TurnEnded(cwd, ""); ok {
		t.Error("no session id said the turn ended")
	}
}
