package claude

import (
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
)

// TestRealCLIUsage: the real Claude Code CLI, on the fake API answering a
// tool call and then a reply with known token counts and a dated model id
// (or one no pricing table knows), prints usage that the decoder counts
// once per API call: the session's usage is exactly the two replies' sum,
// under the model id the API named.
func TestRealCLIUsage(t *testing.T) {
	bin := fakeapi.ClaudeBinary(t)
	api := agenttest.FakeAPI(t, fakeapi.Start)
	proxy := agenttest.Serve(t, fakeapi.StartRefusingProxy)
	for _, c := range []struct{ scenario, model string }{
		{"usage", fakeapi.UsageModel},
		{"usage_unknown", fakeapi.UsageUnknownModel},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			cmd := exec.Command(bin, "-p", "--output-format", "stream-json", "--verbose", "[[scenario:"+c.scenario+"]] run it")
			cmd.Dir = t.TempDir()
			cmd.Env = fakeapi.HermeticEnv(t.TempDir(), api.URL(), proxy)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
			defer timer.Stop()
			s := sessions.Apply(sessions.Session{ID: "u", State: sessions.Idle}, sessions.Event{Kind: sessions.EvTurnStarted}, time.Now())
			for _, l := range agenttest.Drain(t, NewDecoder(out, 0)) {
				for _, e := range l.Events {
					s = sessions.Apply(s, e, time.Now())
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("the CLI: %v", err)
			}
			tok := func(u fakeapi.Usage) sessions.Tokens {
				return sessions.Tokens{Input: int64(u.Input), Output: int64(u.Output), CacheWrite: int64(u.CacheWrite), CacheRead: int64(u.CacheRead)}
			}
			want := sessions.Usage{c.model: tok(fakeapi.UsageToolCall).Add(tok(fakeapi.UsageAnswer))}
			if !reflect.DeepEqual(s.Usage.Total, want) {
				t.Errorf("usage %+v, want %+v", s.Usage.Total, want)
			}
		})
	}
}
