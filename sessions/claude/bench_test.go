package claude

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// benchStream is a realistic session: every captured stdout stream, then
// tool rounds whose results carry 1 MB of output (as Bash prints it: once in
// the tool_result content, once in tool_use_result.stdout).
func benchStream(b *testing.B, rounds int) []byte {
	b.Helper()
	var buf bytes.Buffer
	for _, c := range agenttest.Captures(b, "*.jsonl") {
		if strings.HasPrefix(filepath.Base(c.Name), "transcript") {
			continue // not stdout
		}
		buf.Write(c.Data)
	}
	out := agenttest.BigOutput()
	for i := range rounds {
		id := fmt.Sprintf("toolu_bench_%d", i)
		fmt.Fprintf(&buf, `{"type":"assistant","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{"type":"tool_use","id":"%s","name":"Bash","input":{"command":"make","description":"build"}}],"stop_reason":null},"parent_tool_use_id":null,"session_id":"s"}`+"\n", i, id)
		fmt.Fprintf(&buf, `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"%s","type":"tool_result","content":%s,"is_error":false}]},"parent_tool_use_id":null,"session_id":"s","tool_use_result":{"stdout":%s,"stderr":"","interrupted":false}}`+"\n", id, out, out)
		buf.WriteString(`{"type":"assistant","message":{"model":"claude-opus-4-8","content":[{"type":"text","text":"Build passed."}]},"parent_tool_use_id":null,"session_id":"s"}` + "\n")
	}
	buf.WriteString(`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s"}` + "\n")
	return buf.Bytes()
}

func benchDecode(b *testing.B, rounds, maxLine int) {
	stream := benchStream(b, rounds)
	agenttest.BenchDecode(b, stream, "lines", func(r io.Reader) agenttest.Decoder[Line, Counters] { return NewDecoder(r, maxLine) })
}

// BenchmarkDecodeStream: the captures plus four 1 MB tool results.
func BenchmarkDecodeStream(b *testing.B) { benchDecode(b, 4, 4<<20) }

// BenchmarkDecodeStreamSmall is the same session without the big tool
// results: the per-line cost of ordinary traffic.
func BenchmarkDecodeStreamSmall(b *testing.B) { benchDecode(b, 0, 0) }
