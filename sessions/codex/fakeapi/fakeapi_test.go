package fakeapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The TUI names a thread with a side request that quotes the prompt, marker
// included, beside the turn's own request (measured with 0.171.0: the title
// request 95 ms after the turn's). Whichever comes first, the scenario's
// attempts are the turn's alone: its first attempt still runs the command,
// and the title request is filed apart.
func TestTitleRequestsAreFiledApart(t *testing.T) {
	prompt := "run the slow one [[scenario:slowtool]]"
	user := func(text string) map[string]any {
		return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}
	}
	title := map[string]any{"input": []any{user("Generate a concise, single-line task title of at most 36 characters. Do not answer the request.\n\n" + prompt)}}
	turn := map[string]any{"input": []any{user(prompt)}}
	for _, tc := range []struct {
		name  string
		order []map[string]any
		turn  int // the turn's index in order
	}{
		{"title first", []map[string]any{title, turn}, 1},
		{"turn first", []map[string]any{turn, title}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var bodies []string
			for _, req := range tc.order {
				b, _ := json.Marshal(req)
				resp, err := http.Post(s.URL()+"/responses", "application/json", strings.NewReader(string(b)))
				if err != nil {
					t.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				bodies = append(bodies, string(out))
			}
			got := s.Requests("slowtool")
			if len(got) != 1 || got[0].Attempt != 1 || got[0].UserText != prompt {
				t.Errorf("slowtool saw %+v, want the turn's request alone as attempt 1", got)
			}
			if n := len(s.Requests("title")); n != 1 {
				t.Errorf("%d title requests filed, want 1", n)
			}
			if !strings.Contains(bodies[tc.turn], "exec_command") {
				t.Errorf("the turn was not answered with the command:\n%s", bodies[tc.turn])
			}
		})
	}
}
