package opencode

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// benchStream is a realistic session: every captured event stream, then
// tool rounds whose completed part carries 1 MB of output (OpenCode repeats
// a command's output in the tool part's state and metadata), with text
// deltas between them.
func benchStream(b *testing.B, rounds int) []byte {
	b.Helper()
	var buf bytes.Buffer
	for _, c := range agenttest.Captures(b, "*.sse") {
		buf.Write(c.Data)
	}
	out := agenttest.BigOutput()
	for i := range rounds {
		id := fmt.Sprintf("call_bench_%d", i)
		fmt.Fprintf(&buf, `data: {"type":"message.part.updated","properties":{"sessionID":"ses_b","part":{"id":"prt_%d","messageID":"msg_b","sessionID":"ses_b","type":"tool","tool":"bash","callID":"%s","state":{"status":"running","input":{"command":"make"}}}}}`+"\n\n", i, id)
		for range 20 {
			buf.WriteString(`data: {"type":"message.part.delta","properties":{"sessionID":"ses_b","messageID":"msg_b","partID":"prt_t","field":"text","delta":"building "}}` + "\n\n")
		}
		fmt.Fprintf(&buf, `data: {"type":"message.part.updated","properties":{"sessionID":"ses_b","part":{"id":"prt_%d","messageID":"msg_b","sessionID":"ses_b","type":"tool","tool":"bash","callID":"%s","state":{"status":"completed","input":{"command":"make"},"output":%s,"metadata":{"output":%s,"exit":0}}}}}`+"\n\n", i, id, out, out)
	}
	return buf.Bytes()
}

func benchDecode(b *testing.B, rounds, maxEvent int) {
	stream := benchStream(b, rounds)
	agenttest.BenchDecode(b, stream, "events", func(r io.Reader) agenttest.Decoder[Frame, Counters] { return NewDecoder(r, maxEvent, "") })
}

// BenchmarkDecodeStream: the captures plus four 2 MB tool parts.
func BenchmarkDecodeStream(b *testing.B) { benchDecode(b, 4, 0) }

// BenchmarkDecodeStreamSmall is the captures alone: the per-event cost of
// ordinary traffic.
func BenchmarkDecodeStreamSmall(b *testing.B) { benchDecode(b, 0, 0) }
