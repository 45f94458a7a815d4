package gemini

import (
	"reflect"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
	"github.com/session-supervisor/session-supervisor/sessions/gemini/fakeapi"
)

// TestRealUsage: the real Gemini CLI over ACP, on the fake API answering a
// tool call and a reply with known counts, reports each turn's tokens by
// model in the prompt's answer; two turns count twice, never more. The CLI
// folds the cached tokens into input, so the session's input is the calls'
// input and cache read together.
func TestRealUsage(t *testing.T) {
	t.Parallel()
	w := newRealWorld(t)
	p := w.start(t, "yolo", "")
	s := sessions.Session{ID: "u", State: sessions.Idle}
	per := sessions.Tokens{}
	for _, u := range []fakeserver.Usage{fakeserver.UsageCall, fakeserver.UsageAnswer} {
		per = per.Add(sessions.Tokens{Input: int64(u.Input + u.CacheRead), Output: int64(u.Output)})
	}
	for i, want := range []sessions.Tokens{per, per.Add(per)} {
		if err := p.SendPrompt("[[scenario:usage]] run it"); err != nil {
			t.Fatal(err)
		}
		s = sessions.Apply(s, sessions.Event{Kind: sessions.EvTurnStarted}, time.Now())
		for _, e := range collect(t, p, turnEnd) {
			s = sessions.Apply(s, e, time.Now())
		}
		if got := (sessions.Usage{fakeapi.Model: want}); !reflect.DeepEqual(s.Usage.Total, got) {
			t.Errorf("after turn %d: usage %+v, want %+v", i+1, s.Usage.Total, got)
		}
	}
}
