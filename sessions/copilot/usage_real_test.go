package copilot

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/copilot/fakeapi"
	"github.com/session-supervisor/session-supervisor/sessions/fakeserver"
)

// TestRealUsage: the real Copilot CLI, on the fake API answering a tool
// call and a reply with known counts, prints no token counts on stdout
// (measured on 1.0.102: the JSON output's result has premium requests and
// durations only); its session file, events.jsonl, has one
// session.usage_record per model call, which the process reads when the
// turn's process ends: the calls' usage, cache apart, counted once however
// often the file is read.
func TestRealUsage(t *testing.T) {
	w := newWorld(t)
	p := w.start(t, "[[scenario:usage]] run it")
	s := sessions.Session{ID: "u", State: sessions.Idle}
	_, seen := next(t, p, sessions.EvTurnCompleted)
	for _, e := range seen {
		s = sessions.Apply(s, e, time.Now())
	}
	if len(s.Usage.Total) != 0 {
		t.Errorf("stdout carried usage %+v: update the doc (pricing) and this test", s.Usage.Total)
	}
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	usage := closed(t, p)
	for _, e := range append(usage, usage...) { // read twice: counted once
		s = sessions.Apply(s, e, time.Now())
	}
	var want sessions.Tokens
	for _, u := range []fakeserver.Usage{fakeserver.UsageCall, fakeserver.UsageAnswer} {
		want = want.Add(sessions.Tokens{Input: int64(u.Input), Output: int64(u.Output), CacheRead: int64(u.CacheRead)})
	}
	if got := (sessions.Usage{fakeapi.Model: want}); !reflect.DeepEqual(s.Usage.Total, got) {
		t.Errorf("usage from events.jsonl %+v, want %+v", s.Usage.Total, got)
	}
	home := envValue(w.opts.Env, "HOME")
	if got := EventsPath(w.opts.Env, p.SessionID()); got != filepath.Join(home, ".copilot", "session-state", p.SessionID(), "events.jsonl") {
		t.Errorf("events file %s, want the session's under its HOME", got)
	}
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}
