//go:build linux

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/session-supervisor/session-supervisor/notify/push/ntfytest"
	"github.com/session-supervisor/session-supervisor/sessions"
)

// A real Claude Code session whose model stream stalls, with no nudge
// allowed, escalates: the desktop (the test's notification service on a
// private bus) is told exactly once at once, and ntfy (a loopback server
// speaking ntfy's protocol, read as a phone reads it: the topic's JSON
// stream) exactly once after notify.push_after_minutes, with a receipt on
// the session's timeline. Nothing more arrives afterwards.
func TestPushAfterTheDesktop(t *testing.T) {
	t.Parallel()
	requireTools(t, "dbus-daemon")
	busAddr := startBus(t)
	conn, err := dbus.Connect(busAddr)
	if err != nil {
		t.Fatalf("connecting to the test bus: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	notes := &notifications{}
	if err := conn.Export(notes, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	ownName(t, conn, "org.freedesktop.Notifications")

	const token, topic = "tk_e2etoken0000000000000000000", "supervisor-e2e"
	srv := ntfytest.Start(t, ntfytest.Options{Token: token})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	phone, err := ntfytest.Subscribe(ctx, srv.URL, topic, token)
	if err != nil {
		t.Fatal(err)
	}
	defer phone.Close()

	const pushAfter = 8 * time.Second
	h := startAgentE2E(t, claudeE2EAgent, e2eOpts{longIdle: true, bus: busAddr}, append(ce2eFast,
		"supervisor.nudge_max_attempts", "0",
		"notify.push_after_minutes", "0.1333", // 8 s
		"notify.ntfy.server", srv.URL, "notify.ntfy.topic", topic, "notify.ntfy.token", token)...)
	id := h.launch("[[scenario:stall]] go")
	h.waitUnderWay(id, "stall")
	h.mustCLI("settings", "set", "supervisor.stall_suspect_minutes", "0.1")
	h.mustCLI("settings", "set", "supervisor.stall_hard_minutes", "0.2")
	s := h.waitFor(id, "the stalled session to escalate", func(s sessions.Session) bool { return s.NeedsAttention })
	escalated := time.Now()

	desktop := func() []string {
		var out []string
		for _, c := range notes.list() {
			if strings.Contains(c, "needs attention") {
				out = append(out, c)
			}
		}
		return out
	}
	eventually(t, "the desktop notification", 30*time.Second, func() bool { return len(desktop()) > 0 })
	first, err := phone.Next(contextFor(t, 60*time.Second))
	if err != nil {
		t.Fatalf("no ntfy message: %v (desktop: %q)", err, desktop())
	}
	waited := time.Since(escalated)
	t.Logf("desktop: %q; ntfy %s after the escalation: %q / %q", desktop(), waited.Round(time.Millisecond), first.Title, first.Message)
	if waited < pushAfter-2*time.Second {
		t.Errorf("pushed %s after the escalation, before notify.push_after_minutes (%s)", waited, pushAfter)
	}
	if first.Title != s.DisplayName()+" needs you" || first.Priority != 4 || !strings.Contains(first.Message, "claude") {
		t.Errorf("the push says %+v", first)
	}
	// Exactly once each: nothing more within twice the delay.
	if more, err := phone.Next(contextFor(t, 2*pushAfter)); err == nil {
		t.Errorf("a second ntfy message: %+v", more)
	}
	if got := desktop(); len(got) != 1 {
		t.Errorf("desktop notifications %q, want exactly one", got)
	}
	rows := h.timeline(id)
	found := false
	for _, r := range rows {
		if d := r.detail(); r.Kind == "notified" && d["channel"] == "ntfy" && d["outcome"] == "ok" && d["status"] == float64(200) {
			found = true
		}
	}
	if !found {
		t.Errorf("no ntfy receipt on the timeline: %+v", rows)
	}
	// The CLI's test reaches the same channel.
	if out := h.mustCLI("notify", "test"); !strings.Contains(out, "ntfy: sent") {
		t.Errorf("notify test: %q", out)
	}
	if e, err := phone.Next(contextFor(t, 10*time.Second)); err != nil || e.Title != "Session Supervisor test" {
		t.Errorf("the test message: %+v, %v", e, err)
	}
	h.stopApp()
}

// contextFor is a context that ends after d or with the test.
func contextFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
