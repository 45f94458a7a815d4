package geminiterm

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkFeed is the cost of one chat line (the real CLI's, a turn with a
// tool call and its output).
func BenchmarkFeed(b *testing.B) {
	data, err := os.ReadFile("testdata/text-then-tool.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var s Summary
		for _, l := range lines {
			s.Feed(l)
		}
	}
	b.ReportMetric(float64(len(lines)), "lines/op")
}

// BenchmarkStepUnchanged is one look at a session whose chat did not
// change: a stat, no read.
func BenchmarkStepUnchanged(b *testing.B) {
	w := newWorld(b)
	path := w.chatPath(sid1)
	appendTo(b, path, w.meta(sid1), seed, prompt("p1", "go"), reply("g1", "done"))
	w.Observe()
	w.Step()
	b.ReportAllocs()
	for b.Loop() {
		w.O.Step()
	}
}
