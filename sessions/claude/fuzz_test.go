package claude

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// seedLines adds every captured line plus edge cases to a fuzz corpus.
func seedLines(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f.Add(bytes.Clone(sc.Bytes()))
		}
	}
	for _, s := range []string{
		"", "{", "}", "null", "[]", `{"type":null}`, `{"type":"user","message":{"content":"x"}}`,
		`{"type":"assistant","message":{"content":[null,1,"x",{"type":"tool_use"}]}}`,
		`{"type":"result","is_error":true,"api_error_status":-1,"errors":[1,{}]}`,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1e308}}`,
		`{"type":"system","subtype":"api_retry","retry_delay_ms":-1e308}`,
		`{"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","input":[}}`,
	} {
		f.Add([]byte(s))
	}
}

func FuzzDecodeLine(f *testing.F) {
	seedLines(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		events, info, err := DecodeLine(line)
		switch {
		case err != nil:
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknown) {
				t.Fatalf("unexpected error class: %v", err)
			}
			if len(events) != 0 || info.Skip == agentkit.SkipNone {
				t.Fatalf("skipped line with events %v or no reason %+v", events, info)
			}
		case info.Skip != agentkit.SkipNone && info.Skip != agentkit.SkipEmpty:
			t.Fatalf("skip %q without an error", info.Skip)
		}
		for _, e := range events {
			if e.Kind == sessions.EvUnknown {
				t.Fatalf("decoder emitted EvUnknown: %+v", e)
			}
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
		d := NewDecoder(bytes.NewReader(stream), 128)
		lines := int64(0)
		for {
			l, err := d.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			lines++
			if l.Info.Skip == agentkit.SkipNone && l.Info.Size > 128 {
				t.Fatalf("decoded a line of %d bytes past the limit", l.Info.Size)
			}
		}
		if st := d.Stats(); st.Lines != lines {
			t.Fatalf("stats %+v for %d lines", st, lines)
		}
	})
}
