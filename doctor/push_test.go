package doctor

import (
	"strings"
	"testing"
	"time"
)

func TestCheckPush(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		push   Push
		status Status
		says   []string
	}{
		{"none configured", Push{}, OK, []string{"only the desktop"}},
		{"working", Push{Channels: []string{"ntfy", "webhook"}}, OK, []string{"pushes go to ntfy and webhook"}},
		{"a failure", Push{Channels: []string{"ntfy"}, Failures: []PushIssue{{Channel: "ntfy", At: now.Add(-3 * time.Minute), Error: "HTTP 401: unauthorized", GaveUp: true}}},
			Warn, []string{"ntfy failed 3m0s ago", "HTTP 401", "gave up"}},
		{"a bad setting", Push{Problems: []PushIssue{{Channel: "webhook", Error: "plain http only to this machine"}}}, Warn, []string{"webhook is set but unusable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := CheckPush(tc.push, now)
			if ch.Status != tc.status {
				t.Errorf("status %s, want %s: %+v", ch.Status, tc.status, ch)
			}
			for _, s := range tc.says {
				if !strings.Contains(ch.Detail, s) {
					t.Errorf("detail %q lacks %q", ch.Detail, s)
				}
			}
			if ch.Fix == "" && tc.status != OK {
				t.Error("no fix")
			}
		})
	}
}

// The app's health carries the push part; doctor reads it.
func TestParseHealthPush(t *testing.T) {
	h, err := ParseHealth(200, []byte(`{"pid":7,"version":"v1","status":"ok","push":{"channels":["ntfy"],"failures":[{"channel":"ntfy","at":"2026-12-02T11:57:00Z","error":"HTTP 500","gave_up":false}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if h.Push == nil || len(h.Push.Channels) != 1 || len(h.Push.Failures) != 1 || h.Push.Failures[0].Error != "HTTP 500" {
		t.Fatalf("push = %+v", h.Push)
	}
	if h, _ := ParseHealth(200, []byte(`{"pid":7,"version":"v1","status":"ok"}`)); h.Push != nil {
		t.Fatalf("an app with no pusher: push = %+v", h.Push)
	}
}
