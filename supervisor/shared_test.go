package supervisor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// A conversation the app manages, resumed by the user in a terminal (a
// `claude --resume ID` process registering the same session id): the tick
// shows each session the other, records it on both timelines, escalates
// each once (not again on the next tick), refuses a background resume of a
// dead session of that conversation, and lets go when the terminal process
// ends.
func TestTwoProcessesOnOneConversation(t *testing.T) {
	w := newTermWorld(t)
	g := newRig(t, rigConfig{external: []ExternalSource{w.src}})
	m := g.launch("managed", []fcStep{fcText, fcResult})
	m = g.wait(m.ID, "the first turn done", inReview)
	if m.AgentSessionID == "" {
		t.Fatal("the managed session has no agent session id")
	}

	// A dead terminal session of the same conversation, from earlier.
	dead := deadTerminal(g.cwd)
	dead.ID, dead.AgentSessionID = "0b5e0000-0000-4000-8000-00000000000b", m.AgentSessionID
	g.rt.mu.Lock()
	g.rt.sess[dead.ID] = g.rt.newEntry(dead)
	g.rt.mu.Unlock()

	w.file.SessionID, w.file.Cwd = m.AgentSessionID, g.cwd
	w.register()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g.rt.startExternal(ctx)
	term := waitFor(t, g.rt, 5*time.Second, "discovered", func(s sessions.Session) bool { return s.ProcessAlive })

	for range 2 { // the second tick must not escalate again
		g.rt.Tick(ctx, settings.Defaults())
		g.rt.Settle()
	}
	m, _ = g.rt.Session(m.ID)
	term, _ = g.rt.Session(term.ID)
	if m.SharedWith != term.ID || term.SharedWith != m.ID {
		t.Fatalf("shared: managed names %q, terminal names %q (want each other: %s, %s)", m.SharedWith, term.SharedWith, m.ID, term.ID)
	}
	for _, s := range []sessions.Session{m, term} {
		rows := dbTimeline(t, g.store, s.ID)
		kinds := rowKinds(rows)
		if n := count(kinds, core.TimelineEscalated); n != 1 || !s.NeedsAttention {
			t.Fatalf("%s: escalated %d times (attention %v), want once: %v", s.DisplayName(), n, s.NeedsAttention, kinds)
		}
		i := slices.Index(kinds, core.TimelineSharedConversation)
		if i < 0 || !strings.Contains(rowDetail(t, rows[i])["message"].(string), "runs its conversation") {
			t.Fatalf("%s: no shared_conversation row: %v", s.DisplayName(), kinds)
		}
	}
	// The dead session is not resumed beside the live ones, by the user or by itself.
	if _, err := g.rt.Resume(context.Background(), dead.ID); !errors.Is(err, localapi.ErrConflict) ||
		!strings.Contains(err.Error(), "its conversation runs in session") {
		t.Fatalf("resume beside a live process of the conversation: %v", err)
	}

	// The managed process ends while the terminal's runs: a prompt sent to
	// the managed session would start a second process on the
	// conversation, and is refused with the reason.
	g.rt.mu.Lock()
	proc := g.rt.sess[m.ID].proc
	g.rt.mu.Unlock()
	proc.Signal(syscall.SIGKILL)
	g.wait(m.ID, "its process gone", func(s sessions.Session) bool { return !s.ProcessAlive })
	if _, err := g.rt.Send(context.Background(), m.ID, "go on"); !errors.Is(err, localapi.ErrConflict) ||
		!strings.Contains(err.Error(), "runs its conversation") {
		t.Fatalf("send beside the terminal's process: %v", err)
	}

	w.cmd.Process.Kill()
	w.cmd.Wait()
	g.rt.Tick(ctx, settings.Defaults()) // the probe finds it gone
	g.rt.Settle()
	waitFor(t, g.rt, 5*time.Second, "gone", func(s sessions.Session) bool { return s.ID == term.ID && !s.ProcessAlive })
	g.rt.Tick(ctx, settings.Defaults())
	g.rt.Settle()
	m, _ = g.rt.Session(m.ID)
	if m.SharedWith != "" || m.Supervision.SharedEscalated != "" {
		t.Fatalf("still shared after the terminal process ended: %+v", m)
	}
	if kinds := rowKinds(dbTimeline(t, g.store, m.ID)); count(kinds, core.TimelineSharedConversation) != 2 {
		t.Fatalf("managed timeline %v: want the share and its end", kinds)
	}
}

func count(list []string, v string) (n int) {
	for _, x := range list {
		if x == v {
			n++
		}
	}
	return n
}

// Two starts on one conversation decided at once (a background resume of
// the terminal session and a nudge of the managed one, on their own
// queues): the second is refused while the first is under way, and may go
// once it is released.
func TestConversationStartIsExclusive(t *testing.T) {
	g := newRig(t, rigConfig{noAgent: true})
	m := g.rt.newEntry(sessions.Session{ID: "m", Agent: "claude", AgentSessionID: "c1", Source: sessions.Managed})
	term := g.rt.newEntry(sessions.Session{ID: "t", Agent: "claude", AgentSessionID: "c1", Source: sessions.Observed})
	g.rt.mu.Lock()
	g.rt.sess["m"], g.rt.sess["t"] = m, term
	release, err := g.rt.claimConversationLocked(m)
	if err != nil {
		g.rt.mu.Unlock()
		t.Fatal(err)
	}
	_, err = g.rt.claimConversationLocked(term)
	g.rt.mu.Unlock()
	if !errors.Is(err, localapi.ErrConflict) || !strings.Contains(err.Error(), "another process is being started") {
		t.Fatalf("second start: %v", err)
	}
	release()
	g.rt.mu.Lock()
	release, err = g.rt.claimConversationLocked(term)
	g.rt.mu.Unlock()
	if err != nil {
		t.Fatalf("after the first was released: %v", err)
	}
	release()
}
