package notify

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/session-supervisor/session-supervisor/requiretool"
	"github.com/session-supervisor/session-supervisor/sessions"
)

// fakeService plays org.freedesktop.Notifications on a private bus.
type fakeService struct {
	mu      sync.Mutex
	calls   []string
	actions [][]string
}

func (f *fakeService) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, summary)
	f.actions = append(f.actions, actions)
	return uint32(100 + len(f.calls)), nil
}

// startService plays the notification service on a private bus and
// connects a Clickable to it.
func startService(t *testing.T) (*dbus.Conn, *fakeService, *Clickable) {
	t.Helper()
	addr := requiretool.SessionBus(t)
	server, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	svc := &fakeService{}
	if err := server.Export(svc, fdoPath, fdoIface); err != nil {
		t.Fatal(err)
	}
	if reply, err := server.RequestName(fdoName, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning %s: %v %v", fdoName, reply, err)
	}
	client, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newClickable(client, "Session Supervisor", "session-supervisor")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return server, svc, c
}

// TestClickOpensItsSession: a notification goes out with a default
// action; the service reporting that action for its id yields the session
// the notification was about; a closed one, or another action, yields
// nothing.
// emitter emits a signal of the notification interface on server, as the
// desktop's notification daemon does.
func emitter(t *testing.T, server *dbus.Conn) func(member string, args ...any) {
	return func(member string, args ...any) {
		t.Helper()
		if err := server.Emit(fdoPath, fdoIface+"."+member, args...); err != nil {
			t.Fatal(err)
		}
	}
}

// received is the next value on ch; the test fails when none comes within
// 10 s, saying what it waited for.
func received[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s reported", what)
	}
	var zero T
	return zero
}

// nothingMore fails the test with failure (a format for the value) when ch
// holds a value: the signals handled so far must not have sent one.
func nothingMore[T any](t *testing.T, ch <-chan T, failure string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf(failure, v)
	default:
	}
}

func TestClickOpensItsSession(t *testing.T) {
	server, svc, c := startService(t)

	for _, n := range []Notification{
		{Title: "alpha needs attention", SessionID: "sess-a"},
		{Title: "beta asks permission", SessionID: "sess-b"},
		{Title: "gamma needs attention", SessionID: "sess-c"},
	} {
		if err := c.Send(n, nil); err != nil {
			t.Fatal(err)
		}
	}
	svc.mu.Lock()
	if len(svc.actions) != 3 || strings.Join(svc.actions[0], ",") != "default,Open" {
		t.Fatalf("actions sent %v, want a default action on each", svc.actions)
	}
	svc.mu.Unlock()
	emit := emitter(t, server)
	emit("NotificationClosed", uint32(101), uint32(2)) // alpha dismissed
	emit("ActionInvoked", uint32(101), "default")      // too late: forgotten
	emit("ActionInvoked", uint32(103), "snooze")       // not the default action
	emit("ActionInvoked", uint32(102), "default")      // beta clicked
	if got := received(t, c.Clicks(), "click"); got != "sess-b" {
		t.Fatalf("click opened %q, want sess-b", got)
	}
	// Signals are handled in order: the ones before beta's are done.
	nothingMore(t, c.Clicks(), "a second click %q was reported")

	// A terminal session's notification offers "Go to terminal"; choosing
	// it yields the session on Terminals, not on Clicks.
	if err := c.Send(Notification{Title: "delta needs attention", SessionID: "sess-d", Terminal: true}, nil); err != nil {
		t.Fatal(err)
	}
	svc.mu.Lock()
	got := strings.Join(svc.actions[3], ",")
	svc.mu.Unlock()
	if got != "default,Open,terminal,Go to terminal" {
		t.Fatalf("actions of a terminal session's notification: %s", got)
	}
	emit("ActionInvoked", uint32(104), "terminal")
	if got := received(t, c.Terminals(), "Go to terminal"); got != "sess-d" {
		t.Fatalf("Go to terminal for %q, want sess-d", got)
	}
	nothingMore(t, c.Clicks(), "Go to terminal also opened %q")
}

// A managed session's permission request offers Allow and Deny for that
// request; choosing one yields the answer tied to it, once; a notification
// without a request offers neither.
func TestPermissionActions(t *testing.T) {
	server, svc, c := startService(t)
	// What the decider makes of a managed session asking for Bash.
	d := NewDecider(nil)
	note, ok := d.Observe(sessions.Session{ID: "sess-p", Name: "deploy", Source: sessions.Managed, State: sessions.WaitingOnUser,
		WaitReason: sessions.WaitPermission, TurnGeneration: 1, Permission: &sessions.Permission{RequestID: "req-7", Tool: "Bash", Input: "make build"}}, true)
	if !ok || note.RequestID != "req-7" || !strings.HasPrefix(note.Body, "Bash: make build — allow?") {
		t.Fatalf("the permission note: %+v", note)
	}
	for _, n := range []Notification{note, {Title: "beta needs attention", SessionID: "sess-b"}} {
		if err := c.Send(n, nil); err != nil {
			t.Fatal(err)
		}
	}
	svc.mu.Lock()
	got := []string{strings.Join(svc.actions[0], ","), strings.Join(svc.actions[1], ",")}
	svc.mu.Unlock()
	if got[0] != "default,Open,allow,Allow,deny,Deny" || got[1] != "default,Open" {
		t.Fatalf("actions: %q", got)
	}
	emit := emitter(t, server)
	emit("ActionInvoked", uint32(102), "allow") // no request on beta's
	emit("ActionInvoked", uint32(101), "deny")
	emit("ActionInvoked", uint32(101), "allow") // the same notification again: forgotten
	if a := received(t, c.Answers(), "answer"); a != (Answer{SessionID: "sess-p", RequestID: "req-7", Allow: false}) {
		t.Fatalf("answer %+v, want a denial of req-7", a)
	}
	// Signals are handled in order: once beta's click arrives, the repeat
	// before it was handled, and answered nothing.
	emit("ActionInvoked", uint32(102), "default")
	received(t, c.Clicks(), "click")
	nothingMore(t, c.Answers(), "a second answer %+v")
	// A terminal session's request is answered where it runs.
	if n, _ := NewDecider(nil).Observe(sessions.Session{ID: "t", Source: sessions.Observed, State: sessions.WaitingOnUser,
		WaitReason: sessions.WaitPermission, TurnGeneration: 1, Permission: &sessions.Permission{RequestID: "r", Tool: "Bash"}}, true); n.RequestID != "" {
		t.Fatalf("a terminal session's note offers answers: %+v", n)
	}
}

// Headless there is no window: no Open is offered, Allow and Deny still
// are.
func TestWithoutOpen(t *testing.T) {
	_, svc, c := startService(t)
	c.WithoutOpen()
	for _, n := range []Notification{{Title: "a", SessionID: "s1", RequestID: "r1"}, {Title: "b", SessionID: "s2"}} {
		if err := c.Send(n, nil); err != nil {
			t.Fatal(err)
		}
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if got := strings.Join(svc.actions[0], ","); got != "allow,Allow,deny,Deny" {
		t.Errorf("a permission request's actions: %q", got)
	}
	if len(svc.actions[1]) != 0 {
		t.Errorf("an escalation's actions: %q, want none", svc.actions[1])
	}
}
