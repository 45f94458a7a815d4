package copilotterm

import (
	"fmt"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/observe/observetest"
)

// benchEvents is every real events file in testdata, then tool rounds
// whose results are 256 KB each (the file keeps every tool's result).
func benchEvents(b *testing.B, rounds int) [][]byte {
	b.Helper()
	return observetest.WithRounds(b, rounds, func(i int, big []byte) [][]byte {
		return [][]byte{
			[]byte(`{"type":"assistant.turn_start","data":{"turnId":"0"}}`),
			[]byte(fmt.Sprintf(`{"type":"assistant.message","data":{"content":"","toolRequests":[{"toolCallId":"c%d","name":"bash"}]}}`, i)),
			[]byte(fmt.Sprintf(`{"type":"tool.execution_start","data":{"toolCallId":"c%d","toolName":"bash","arguments":{"command":"make"}}}`, i)),
			[]byte(fmt.Sprintf(`{"type":"tool.execution_complete","data":{"toolCallId":"c%d","success":true,"result":{"content":%s}}}`, i, big)),
			[]byte(`{"type":"assistant.turn_end","data":{"turnId":"0"}}`),
		}
	})
}

func benchFeed(b *testing.B, rounds int) {
	observetest.BenchFeed(b, benchEvents(b, rounds), func(s *Summary) int { return s.Skipped })
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
