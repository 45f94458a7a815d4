package gemini

import (
	"bytes"
	"strings"
	"testing"
)

// BenchmarkDecodeTurn decodes a typical turn: a permission request, a tool,
// forty reply chunks and the end of the turn.
func BenchmarkDecodeTurn(b *testing.B) {
	lines := []string{lineNew, linePermission, lineToolDone, lineToolCall}
	for range 40 {
		lines = append(lines, lineChunk)
	}
	lines = append(lines, lineEndTurn)
	in := []byte(strings.Join(lines, "\n") + "\n")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		d := NewDecoder(bytes.NewReader(in), 0)
		d.expect(2, methodSessionNew)
		d.expect(3, methodPrompt)
		n := 0
		for {
			l, err := d.Next()
			if err != nil {
				break
			}
			n += len(l.Events)
		}
		if n < 45 {
			b.Fatalf("%d events", n)
		}
	}
}
