package codex

import (
	"reflect"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
	"github.com/session-supervisor/session-supervisor/sessions/codex/fakeapi"
	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
)

// TestRealUsage: the real Codex app server, on the fake API answering with
// known token counts, reports its thread's running total; the session
// counts each API call once, under the configured model (a dated id a
// pricing table knows, or one it does not), and a thread resumed in a new
// process, whose running total includes its past, does not count that past
// twice.
func TestRealUsage(t *testing.T) {
	for _, model := range []string{"gpt-5.1-codex-2025-11-13", "gpt-fake-unknown"} {
		t.Run(model, func(t *testing.T) {
			w := newRealWorldWith(t, fakeapi.Config{Model: model})

			s := sessions.Session{ID: "u", State: sessions.Idle}
			turn := func(p *Process, prompt string) {
				t.Helper()
				s = sessions.Apply(s, sessions.Event{Kind: sessions.EvTurnStarted}, time.Now())
				if err := p.SendPrompt(prompt); err != nil {
					t.Fatal(err)
				}
				for _, e := range agenttest.Until(t, p, "the turn's end", agenttest.Is(sessions.EvTurnCompleted)) {
					s = sessions.Apply(s, e, time.Now())
				}
				// The usage notification may follow turn/completed: read
				// to the end of the process's output.
				if err := p.CloseInput(); err != nil {
					t.Fatal(err)
				}
				for e := range p.Events() {
					s = sessions.Apply(s, e, time.Now())
				}
				_, _, _ = p.Wait()
			}
			tok := func(u fakeserver.Usage) sessions.Tokens {
				return sessions.Tokens{Input: int64(u.Input), Output: int64(u.Output), CacheWrite: int64(u.CacheWrite), CacheRead: int64(u.CacheRead)}
			}

			turn(w.start(t, ProcessOptions{}), "[[scenario:usage]] run it")
			first := tok(fakeserver.UsageCall).Add(tok(fakeserver.UsageAnswer))
			if want := (sessions.Usage{model: first}); !reflect.DeepEqual(s.Usage.Total, want) {
				t.Fatalf("after the first turn: usage %+v, want %+v", s.Usage.Total, want)
			}

			turn(w.start(t, ProcessOptions{ResumeID: s.AgentSessionID}), "[[scenario:usage]] again")
			want := sessions.Usage{model: first.Add(first)}
			if !reflect.DeepEqual(s.Usage.Total, want) {
				t.Errorf("after a turn in the resumed thread: usage %+v, want %+v (each call once)", s.Usage.Total, want)
			}
			if !reflect.DeepEqual(s.Usage.Turn, sessions.Usage{model: first}) {
				t.Errorf("the resumed turn's usage %+v, want %+v", s.Usage.Turn, first)
			}
		})
	}
}
