package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
)

// Record writes a row from outside the loop (a push's receipt) to the
// session's stored timeline and publishes it; an unknown session records
// nothing and says so.
func TestRecordWritesAndPublishes(t *testing.T) {
	s := seedSession("dddd0000-0000-4000-8000-000000000001", time.Now().UTC().Truncate(time.Millisecond))
	g := newRig(t, rigConfig{noAgent: true, seed: []sessions.Session{s}})
	sub := g.rt.Subscribe(16, false)
	defer g.rt.Bus().Unsubscribe(sub)
	<-sub.C // the snapshot
	detail := sessions.TimelineDetail{Message: "pushed through ntfy", Channel: "ntfy", Status: 200, Outcome: "ok"}
	if err := g.rt.Record(s.ID, "notified", detail); err != nil {
		t.Fatal(err)
	}
	m := <-sub.C
	if m.Type != localapi.MsgTimeline || m.Event == nil || m.Event.Kind != "notified" || m.Event.ID == 0 {
		t.Fatalf("published %+v, want the stored notified row", m)
	}
	rows, err := g.rt.Timeline(context.Background(), s.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || rows[0].Kind != "notified" || !strings.Contains(string(rows[0].Detail), `"channel":"ntfy"`) || !strings.Contains(string(rows[0].Detail), `"status":200`) {
		t.Fatalf("stored timeline %+v, want the receipt first", rows)
	}
	if err := g.rt.Record("no-such-session", "notified", detail); err == nil {
		t.Fatal("recorded for an unknown session")
	}
}
