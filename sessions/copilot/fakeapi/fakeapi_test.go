package fakeapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func post(t *testing.T, s *Server, body string) (*http.Response, []map[string]any) {
	t.Helper()
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var chunks []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks = append(chunks, c)
	}
	return resp, chunks
}

// TestScenarios: the last marker in the body picks the scenario, a tool
// result as the last message is recorded as the command's output, errors
// carry their status and headers, and anything else is a 404.
func TestScenarios(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := `{"messages":[{"role":"system","content":"sys"},{"role":"user","content":"<current_datetime>now</current_datetime>\n\n[[scenario:tool]] run it"}]}`
	resp, chunks := post(t, s, first)
	if resp.StatusCode != 200 || len(chunks) < 2 || !strings.Contains(mustJSON(chunks), `"name":"bash"`) {
		t.Fatalf("tool call: %d %s", resp.StatusCode, mustJSON(chunks))
	}
	second := `{"messages":[{"role":"user","content":"[[scenario:tool]] run it"},{"role":"assistant","content":""},{"role":"tool","content":"hi\n"}]}`
	if _, chunks := post(t, s, second); !strings.Contains(mustJSON(chunks), "printed hi") {
		t.Errorf("after the tool output: %s", mustJSON(chunks))
	}
	resp, _ = post(t, s, `{"messages":[{"role":"user","content":[{"type":"text","text":"[[scenario:tool]] old [[scenario:429]] new"}]}]}`)
	if resp.StatusCode != 429 || resp.Header.Get("retry-after") != "1" {
		t.Errorf("429: %d retry-after %q", resp.StatusCode, resp.Header.Get("retry-after"))
	}
	if r, err := http.Get(s.URL() + "/models"); err != nil || r.StatusCode != 404 {
		t.Errorf("GET /models: %v %v", r, err)
	}
	reqs := s.Requests("tool")
	if len(reqs) != 2 || reqs[0].UserText != "[[scenario:tool]] run it" || reqs[1].ToolOutput != "hi\n" || reqs[0].Attempt != 1 || reqs[1].Attempt != 2 {
		t.Errorf("tool requests %+v", reqs)
	}
	if got := s.Requests("429"); len(got) != 1 || got[0].Status != 429 {
		t.Errorf("429 requests %+v", got)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRefusingProxy(t *testing.T) {
	url, refused, closeFn, err := StartRefusingProxy()
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	resp, err := http.Get(url + "/anything")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || refused() != 1 {
		t.Errorf("status %d refused %d, want 403 and one counted", resp.StatusCode, refused())
	}
}

// TestHermeticEnv: both environments keep state under the test's home, the
// shared runtime, the fake's model and the refusing proxy; each talks to the
// fake its own way, and no real GitHub token reaches the CLI.
func TestHermeticEnv(t *testing.T) {
	const fake, proxy = "http://127.0.0.1:1/v1", "http://127.0.0.1:2"
	common := []string{"HOME=/h", "COPILOT_HOME=/h/.copilot", "XDG_CACHE_HOME=/c", "COPILOT_AUTO_UPDATE=false",
		"COPILOT_MODEL=" + Model, "NO_COLOR=1", "HTTPS_PROXY=" + proxy, "NO_PROXY=127.0.0.1,localhost"}
	for _, tc := range []struct {
		name      string
		env       []string
		want, not []string
	}{
		{"BYOK", HermeticEnv("/h", "/c", fake, proxy),
			[]string{"COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL=" + fake, "COPILOT_PROVIDER_TYPE=openai", "COPILOT_PROVIDER_API_KEY=sk-fake"},
			[]string{"GITHUB_TOKEN", "GH_TOKEN", "COPILOT_API_URL"}},
		{"Copilot's own API", CopilotAPIEnv("/h", "/c", fake, proxy),
			[]string{"COPILOT_GITHUB_TOKEN=gho_fake", "COPILOT_DEBUG_GITHUB_API_URL=" + fake, "COPILOT_API_URL=" + fake},
			[]string{"COPILOT_OFFLINE", "COPILOT_PROVIDER_", "GH_TOKEN", "\nGITHUB_TOKEN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := "\n" + strings.Join(tc.env, "\n") + "\n"
			for _, want := range append(slices.Clone(common), tc.want...) {
				if !strings.Contains(env, "\n"+want+"\n") {
					t.Errorf("environment lacks %s", want)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(env, not) {
					t.Errorf("environment has %s", not)
				}
			}
		})
	}
}
