package claude

import (
	"io"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// seedLines adds every captured line plus edge cases to a fuzz corpus.
func seedLines(f *testing.F) {
	agenttest.SeedLines(f,
		"", "{", "}", "null", "[]", `{"type":null}`, `{"type":"user","message":{"content":"x"}}`,
		`{"type":"assistant","message":{"content":[null,1,"x",{"type":"tool_use"}]}}`,
		`{"type":"result","is_error":true,"api_error_status":-1,"errors":[1,{}]}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1e308}}`,
		`{"type":"system","subtype":"api_retry","retry_delay_ms":-1e308}`,
		`{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","input":[}}`,
	)
}

func FuzzDecodeLine(f *testing.F) {
	seedLines(f)
	agenttest.FuzzDecodeLine(f, DecodeLine, func(i LineInfo) agentkit.SkipReason { return i.Skip }, ErrMalformed, ErrUnknown,
		func(t *testing.T, _ []byte, events []sessions.Event) {
			for _, e := range events {
				if e.Kind == sessions.EvWaitingOnUser && e.Reason == sessions.NoWait {
					t.Fatalf("waiting without a reason: %+v", e)
				}
				if e.Delay < 0 || e.Delay > maxRetryDelay {
					t.Fatalf("delay out of range: %v", e.Delay)
				}
			}
		})
}

// FuzzDecoder feeds arbitrary bytes as a whole stream through a small line
// limit: the decoder must neither panic nor lose count.
func FuzzDecoder(f *testing.F) {
	seedLines(f)
	f.Add([]byte("a\nb\r\n\n{\"type\":\"keep_alive\"}"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		agenttest.CheckStream(t, stream, func(r io.Reader, maxLine int) agenttest.Decoder[Line, Counters] { return NewDecoder(r, maxLine) },
			func(l Line) (agentkit.SkipReason, int) { return l.Info.Skip, l.Info.Size })
	})
}
