package opencode

import (
	"reflect"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
	"github.com/session-supervisor/session-supervisor/sessions/opencode/fakeapi"
)

// TestRealUsage: real `opencode serve`, on the fake API answering a tool
// call and a reply with known counts, sends each assistant message's
// tokens with every update of the message; the session counts each message
// once, cached input apart, under "provider/model".
func TestRealUsage(t *testing.T) {
	w := newRealWorld(t, fakeapi.Config{})
	p := w.start(t, ProcessOptions{})
	if err := p.SendPrompt("[[scenario:usage]] run it"); err != nil {
		t.Fatal(err)
	}
	end := p.until("the turn's end", turnEnd)
	if end.Kind != sessions.EvTurnCompleted {
		t.Fatalf("turn ended %s %+v", end.Kind, end.Failure)
	}
	// The last message's final update may follow the idle status.
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	for e := range p.Events() {
		p.got = append(p.got, e)
	}
	s := sessions.Session{ID: "u", State: sessions.Idle}
	for _, e := range p.got {
		s = sessions.Apply(s, e, time.Now())
	}
	var want sessions.Tokens
	for _, u := range []fakeserver.Usage{fakeserver.UsageCall, fakeserver.UsageAnswer} {
		want = want.Add(sessions.Tokens{Input: int64(u.Input), Output: int64(u.Output), CacheRead: int64(u.CacheRead)})
	}
	if got := (sessions.Usage{"fake/m1": want}); !reflect.DeepEqual(s.Usage.Total, got) {
		t.Errorf("usage %+v, want %+v", s.Usage.Total, got)
	}
}
