package copilot

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// The usage records a real TUI wrote (1.0.102, two model calls) are
// summed by model; a record read twice counts once; a line longer than the
// reader's buffer (a tool's output) and a truncated last line are passed
// over without losing what follows or what came before.
func TestFileUsage(t *testing.T) {
	real, err := os.ReadFile("copilotterm/testdata/tui_tool.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var records [][]byte
	for _, l := range bytes.SplitAfter(real, []byte("\n")) {
		if bytes.HasPrefix(l, usageRecordType) {
			records = append(records, l)
		}
	}
	if len(records) != 2 {
		t.Fatalf("%d usage records in the sample, want 2", len(records))
	}
	huge := []byte(`{"type":"tool.execution_complete","data":{"result":"` + strings.Repeat("x", 200<<10) + `"}}` + "\n")
	want := sessions.Usage{"gpt-4.1": {Input: 200, Output: 40}}
	for _, tc := range []struct {
		name string
		file []byte
		want sessions.Usage
	}{
		{"the real file", real, want},
		{"a record read twice", append(append(bytes.Clone(real), records[0]...), records[0]...), want},
		{"a huge line between the records", bytes.Join([][]byte{records[0], huge, records[1]}, nil), want},
		{"a truncated last record", append(bytes.Clone(records[0]), records[1][:len(records[1])/2]...), sessions.Usage{"gpt-4.1": {Input: 100, Output: 20}}},
		{"no records", []byte("{\"type\":\"user.message\"}\n"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fileUsage(bytes.NewReader(tc.file))
			if err != nil || len(got) != len(tc.want) || got["gpt-4.1"] != tc.want["gpt-4.1"] {
				t.Errorf("usage %v (%v), want %v", got, err, tc.want)
			}
		})
	}
}

// The file is found under the session's COPILOT_HOME, else this
// process's, else ~/.copilot; its reports are running totals under the
// counters a terminal Copilot session uses.
func TestUsageReports(t *testing.T) {
	home := t.TempDir()
	t.Setenv("COPILOT_HOME", "/elsewhere")
	t.Setenv("HOME", "/home/someone")
	path := EventsPath([]string{"COPILOT_HOME=" + home}, "s-1")
	if path != filepath.Join(home, "session-state", "s-1", "events.jsonl") {
		t.Fatalf("path %s", path)
	}
	if got := EventsPath(nil, "s-1"); got != "/elsewhere/session-state/s-1/events.jsonl" {
		t.Errorf("path from this process's COPILOT_HOME: %s", got)
	}
	t.Setenv("COPILOT_HOME", "")
	if got := EventsPath([]string{"HOME=/h"}, "s-1"); got != "/h/.copilot/session-state/s-1/events.jsonl" {
		t.Errorf("path under the session's HOME: %s", got)
	}
	if got := EventsPath(nil, "s-1"); got != "/home/someone/.copilot/session-state/s-1/events.jsonl" {
		t.Errorf("path under this process's HOME: %s", got)
	}
	if got := usageReports(path, "s-1"); got != nil {
		t.Errorf("no file yet: %+v", got)
	}
	real, err := os.ReadFile("copilotterm/testdata/tui_tool.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, real, 0o600); err != nil {
		t.Fatal(err)
	}
	got := usageReports(path, "s-1")
	if len(got) != 1 || got[0] != (sessions.UsageReport{Model: "gpt-4.1", Tokens: sessions.Tokens{Input: 200, Output: 40},
		Mode: sessions.UsageCumulative, Counter: UsageCounter("s-1", "gpt-4.1")}) {
		t.Errorf("reports %+v", got)
	}
}
