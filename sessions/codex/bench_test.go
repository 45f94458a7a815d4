package codex

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// benchStream is a realistic session: every captured stdout stream, then
// command rounds whose completed items carry 1 MB of output (app-server
// repeats a command's whole output in item/completed's aggregatedOutput).
func benchStream(b *testing.B, rounds int) []byte {
	b.Helper()
	var buf bytes.Buffer
	for i, c := range agenttest.Captures(b, "*.jsonl") {
		// Answers to requests are kept once: each capture answers its own
		// initialize, thread/start and turn/start with ids 1 to 3.
		for line := range bytes.Lines(c.Data) {
			if bytes.HasPrefix(line, []byte(`{"id":`)) && !bytes.Contains(line, []byte(`"method"`)) && i != 0 {
				continue
			}
			buf.Write(line)
		}
	}
	out := agenttest.BigOutput()
	const th = `"threadId":"T","turnId":"U"`
	for i := range rounds {
		id := fmt.Sprintf("call_bench_%d", i)
		fmt.Fprintf(&buf, `{"method":"item/started","params":{"item":{"type":"commandExecution","id":"%s","command":"/bin/bash -lc make","cwd":"/w","processId":null,"source":"unifiedExecStartup","status":"inProgress","commandActions":[],"aggregatedOutput":null,"exitCode":null,"durationMs":null},%s}}`+"\n", id, th)
		for range 20 {
			fmt.Fprintf(&buf, `{"method":"item/commandExecution/outputDelta","params":{%s,"itemId":"%s","delta":"building target ok\n"}}`+"\n", th, id)
		}
		fmt.Fprintf(&buf, `{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"%s","command":"/bin/bash -lc make","cwd":"/w","processId":"1","source":"unifiedExecStartup","status":"completed","commandActions":[],"aggregatedOutput":%s,"exitCode":0,"durationMs":5000},%s}}`+"\n", id, out, th)
		fmt.Fprintf(&buf, `{"method":"item/agentMessage/delta","params":{%s,"itemId":"m","delta":"Build passed."}}`+"\n", th)
	}
	buf.WriteString(`{"method":"turn/completed","params":{"threadId":"T","turn":{"id":"U","items":[],"status":"completed","error":null}}}` + "\n")
	return buf.Bytes()
}

func benchDecode(b *testing.B, rounds, maxLine int) {
	stream := benchStream(b, rounds)
	agenttest.BenchDecode(b, stream, "lines", func(r io.Reader) agenttest.Decoder[Line, Counters] { return primed(r, maxLine) })
}

// BenchmarkDecodeStream: the captures plus four 1 MB command outputs.
func BenchmarkDecodeStream(b *testing.B) { benchDecode(b, 4, 4<<20) }

// BenchmarkDecodeStreamSmall is the captures alone: the per-line cost of
// ordinary traffic.
func BenchmarkDecodeStreamSmall(b *testing.B) { benchDecode(b, 0, 0) }
