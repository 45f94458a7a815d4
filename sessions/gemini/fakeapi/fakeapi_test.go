package fakeapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServer: the scenario comes from the last marker; a function response
// is read back; errors carry the API's body; anything else is a logged 404.
func TestServer(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stream := s.URL() + "/v1beta/models/" + Model + ":streamGenerateContent?alt=sse"
	cases := []struct {
		name, body   string
		status       int
		contains     string
		scenario     string
		toolOutput   string
		wantUserText string
	}{
		{"text", `{"contents":[{"role":"user","parts":[{"text":"[[scenario:text]] hi"}]}]}`, 200, `"finishReason":"STOP"`, "text", "", "[[scenario:text]] hi"},
		{"tool call", `{"contents":[{"role":"user","parts":[{"text":"[[scenario:tool]] go"}]}]}`, 200, `"functionCall"`, "tool", "", "[[scenario:tool]] go"},
		{"tool output", `{"contents":[{"role":"user","parts":[{"text":"[[scenario:tool]] go"}]},{"role":"model","parts":[{"functionCall":{}}]},{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"hi\n"}}}]}]}`,
			200, ` printed: hi"}]`, "tool", "hi\n", ""},
		{"later marker wins", `{"contents":[{"role":"user","parts":[{"text":"[[scenario:tool]]"}]},{"role":"user","parts":[{"text":"[[scenario:401]]"}]}]}`, 401, `"UNAUTHENTICATED"`, "401", "", "[[scenario:401]]"},
		{"rate limit", `{"contents":[{"role":"user","parts":[{"text":"[[scenario:429]]"}]}]}`, 429, `"retryDelay":"1s"`, "429", "", "[[scenario:429]]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := post(t, stream, c.body)
			if status != c.status || !strings.Contains(body, c.contains) {
				t.Fatalf("status %d body %s; want %d with %s", status, body, c.status, c.contains)
			}
			log := s.Log()
			e := log[len(log)-1]
			if e.Scenario != c.scenario || e.ToolOutput != c.toolOutput || e.UserText != c.wantUserText {
				t.Errorf("logged %+v", e)
			}
		})
	}
	if status, _ := post(t, s.URL()+"/v1beta/models/"+Model+":generateContent", `{}`); status != 404 {
		t.Errorf("generateContent answered %d, want a refusal", status)
	}
	if status, body := post(t, s.URL()+"/v1beta/models/"+Model+":countTokens", `{}`); status != 200 || !strings.Contains(body, "totalTokens") {
		t.Errorf("countTokens answered %d %s", status, body)
	}
	if n := len(s.Requests("tool")); n != 2 {
		t.Errorf("%d tool requests logged, want 2", n)
	}
}
