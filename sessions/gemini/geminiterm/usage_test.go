package geminiterm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// TestChatUsage: the real CLI's chat file counts each gemini message once
// (one is appended twice), cached tokens apart from input and thoughts as
// output; a file longer than the summary's tail window is read whole; the
// same file read again by another observer adds nothing to the session.
func TestChatUsage(t *testing.T) {
	real, err := os.ReadFile(filepath.Join("testdata", "text-then-tool.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const model = "gemini-2.5-flash"
	early := `{"id":"e1","timestamp":"2026-11-30T22:54:00Z","type":"gemini","content":"x","tokens":{"input":100,"output":7,"cached":60,"thoughts":3,"tool":2,"total":110},"model":"gemini-2.5-pro"}`
	filler := `{"$set":{"lastUpdated":"` + strings.Repeat("x", 1<<20) + `"}}`
	for _, tc := range []struct {
		name string
		text string
		want sessions.Usage
	}{
		{"real", string(real), sessions.Usage{model: {Input: 30, Output: 15}}},
		{"past the tail window", early + "\n" + strings.Repeat(filler+"\n", 3) + string(real),
			sessions.Usage{model: {Input: 30, Output: 15}, "gemini-2.5-pro": {Input: 42, Output: 10, CacheRead: 60}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "session.jsonl")
			os.WriteFile(p, []byte(tc.text), 0o600)
			chat := Chat{Path: p}
			var s sessions.Session
			for range 2 { // the app, then the app restarted
				c := &chatUsage{}
				reps := c.reports(chat, &Summary{SessionID: "s1"})
				for _, r := range reps {
					s = sessions.Apply(s, sessions.Event{Kind: sessions.EvMetrics, Usage: &r}, time.Now())
				}
				if len(reps) != len(tc.want) || c.Skipped != 0 {
					t.Fatalf("%d reports (%d lines skipped), want %d", len(reps), c.Skipped, len(tc.want))
				}
			}
			for m, want := range tc.want {
				if got := s.Usage.Total[m]; got != want {
					t.Errorf("%s: %+v, want %+v", m, got, want)
				}
			}
		})
	}
}
