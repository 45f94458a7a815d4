package sessions

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestToolInputSummary(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"a command", `{"command":"rm -rf build/","description":"clean"}`, "rm -rf build/"},
		{"a file", `{"file_path":"/w/src/main.go","content":"package main"}`, "/w/src/main.go"},
		{"a URL", `{"url":"https://example.com/docs","prompt":"read"}`, "https://example.com/docs"},
		{"anything else, compact", `{ "questions" : [ ] }`, `{"questions":[]}`},
		{"a secret is redacted", `{"command":"curl -H 'Authorization: Bearer sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123' x"}`, ""},
		{"control characters and lines go", "{\"command\":\"echo a\\u001b[31m\\nrm b\"}", "echo a rm b"},
		{"clipped", `{"command":"` + long + `"}`, strings.Repeat("x", 119) + "…"},
		{"empty", ``, ""},
		{"not JSON", `{"command":`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ToolInputSummary(json.RawMessage(tc.raw))
			if tc.name == "a secret is redacted" {
				if strings.Contains(got, "sk-ant-api03") || !strings.HasPrefix(got, "curl") {
					t.Errorf("got %q", got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
