package copilot

import (
	"io"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// BenchmarkDecodeStream decodes a captured tool turn (50 lines, 14 KB) from
// Copilot CLI 1.0.102: the cost per turn of the adapter.
func BenchmarkDecodeStream(b *testing.B) {
	agenttest.BenchDecode(b, agenttest.Captures(b, "tool.jsonl")[0].Data, "lines",
		func(r io.Reader) agenttest.Decoder[Line, Counters] { return NewDecoder(r, 0) })
}
