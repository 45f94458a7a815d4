//go:build linux

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/session-supervisor/session-supervisor/notify/push/ntfytest"
	"github.com/session-supervisor/session-supervisor/requiretool"
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
	busAddr, _, notes := startNotifications(t)

	const token, topic = "tk_e2etoken0000000000000000000", "supervisor-e2e"
	srv := ntfytest.Start(t, ntfytest.Options{Token: token})
	phone := srv.Phone(t, topic, token)

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

// A managed Claude Code session asking to run a command: the desktop
// notification (the headless supervisor's, on a private bus) offers Allow
// and Deny bound to that request; Allow lets the command run. Allow on a
// request already answered elsewhere (the CLI) answers nothing.
func TestAllowFromTheNotification(t *testing.T) {
	t.Parallel()
	busAddr, conn, notes := startNotifications(t)
	invoke := func(id uint32, action string) {
		t.Helper()
		if err := conn.Emit("/org/freedesktop/Notifications", "org.freedesktop.Notifications.ActionInvoked", id, action); err != nil {
			t.Fatal(err)
		}
	}

	h := startAgentE2E(t, claudeE2EAgent, e2eOpts{bus: busAddr}, ce2eFast...)
	out := filepath.Join(h.work, "build", "out.txt")
	id := h.launch("[[scenario:write]] make it", "--permission-mode", "default", "--name", "build")
	pending := h.waitFor(id, "the approval request", ce2eIn(sessions.WaitingOnUser, sessions.WaitPermission))
	var note uint32
	eventually(t, "a notification offering Allow", 30*time.Second, func() bool { note = notes.offering("build asks for permission", "allow"); return note != 0 })
	// It says what the command is.
	if c := notes.list()[note-1]; !strings.Contains(c, "|Bash: mkdir -p build") || !strings.Contains(c, "— allow?") {
		t.Errorf("the permission notification says %q", c)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("build/out.txt exists before the command was allowed")
	}
	invoke(note, "allow")
	s := h.waitFor(id, "the allowed turn to complete", ce2eIn(sessions.WaitingOnUser, sessions.WaitReview))
	if _, err := os.Stat(out); err != nil || s.Permission != nil {
		t.Fatalf("after Allow: the command ran: %v; pending %+v", err, s.Permission)
	}
	answered := 0
	for _, r := range h.timeline(id) {
		if r.Kind == "permission_answered" {
			answered++
			if d := r.detail(); d["allow"] != true {
				t.Errorf("answered %v", d)
			}
		}
	}
	if answered != 1 {
		t.Fatalf("%d permission answers on the timeline after Allow on %s, want 1", answered, pending.Permission.RequestID)
	}

	// A second request, answered from the CLI first: Allow on its
	// notification afterwards answers nothing (the request is gone).
	if err := os.RemoveAll(filepath.Join(h.work, "build")); err != nil {
		t.Fatal(err)
	}
	h.mustCLI("send", id, "[[scenario:write]] again")
	h.waitFor(id, "the second approval request", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitPermission && s.TurnGeneration == 2
	})
	var second uint32
	eventually(t, "the second notification offering Allow", 30*time.Second, func() bool {
		second = notes.offering("build asks for permission", "allow")
		return second != 0 && second != note
	})
	h.mustCLI("deny", id, "--message", "not now")
	h.waitFor(id, "the denied turn to end", func(s sessions.Session) bool { return s.TurnGeneration == 2 && !s.InTurn && s.Permission == nil })
	invoke(second, "allow")
	// The app says it did not answer: the request is no longer open.
	eventually(t, "the refused answer in the app's log", 30*time.Second, func() bool {
		return strings.Contains(h.run.stderr.String(), "a permission answer from a notification was not sent")
	})
	if _, err := os.Stat(out); err == nil {
		t.Error("Allow after the request was denied ran the command")
	}
	answers := 0
	for _, r := range h.timeline(id) {
		if r.Kind == "permission_answered" {
			answers++
		}
	}
	if answers != 2 {
		t.Errorf("%d permission answers on the timeline, want 2 (the Allow, the CLI's deny)", answers)
	}
	h.stopApp()
}

// startNotifications starts a private session bus whose notification
// service is the test's, and returns its address, the test's connection
// and what the service received.
func startNotifications(t *testing.T) (string, *dbus.Conn, *notifications) {
	t.Helper()
	requireTools(t, "dbus-daemon")
	busAddr := requiretool.SessionBus(t)
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
	return busAddr, conn, notes
}
