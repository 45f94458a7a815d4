package copilotterm

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// benchEvents is every real events file in testdata, then tool rounds
// whose results are 256 KB each (the file keeps every tool's result).
func benchEvents(b *testing.B, rounds int) [][]byte {
	b.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	var out [][]byte
	for _, name := range files {
		out = append(out, readLines(b, filepath.Base(name))...)
	}
	big, _ := json.Marshal(strings.Repeat("build output line ok\n", (256<<10)/21))
	for i := range rounds {
		out = append(out,
			[]byte(`{"type":"assistant.turn_start","data":{"turnId":"0"}}`),
			[]byte(fmt.Sprintf(`{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"c%d","name":"bash"}]}}`, i)),
			[]byte(fmt.Sprintf(`{"type":"tool.execution_start","data":{"toolCallId":"c%d","toolName":"bash","arguments":{"command":"make"}}}`, i)),
			[]byte(fmt.Sprintf(`{"type":"tool.execution_complete","data":{"toolCallId":"c%d","success":true,"result":{"content":%s}}}`, i, big)),
			[]byte(`{"type":"assistant.turn_end","data":{"turnId":"0"}}`))
	}
	return out
}

func benchFeed(b *testing.B, rounds int) {
	lines := benchEvents(b, rounds)
	var n int64
	for _, l := range lines {
		n += int64(len(l)) + 1
	}
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		var s Summary
		for _, l := range lines {
			s.Feed(l)
		}
		if s.Skipped != 0 {
			b.Fatalf("%d lines skipped", s.Skipped)
		}
	}
}

// BenchmarkEventsFeed: the real events files plus sixteen 256 KB results.
func BenchmarkEventsFeed(b *testing.B) { benchFeed(b, 16) }

// BenchmarkEventsFeedSmall is the real events alone (each file's
// system.message carries ~28 KB of instructions).
func BenchmarkEventsFeedSmall(b *testing.B) { benchFeed(b, 0) }

// BenchmarkScanProcs is one read of this machine's process table for
// Copilot TUIs (what every rescan costs).
func BenchmarkScanProcs(b *testing.B) {
	for b.Loop() {
		if _, err := ScanProcs(); err != nil {
			b.Fatal(err)
		}
	}
}
