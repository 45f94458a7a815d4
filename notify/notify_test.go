package notify

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

type sent struct{ title, body string }

func recorder(out *[]sent, err error) Sender {
	return func(title, body string, icon []byte) error {
		if err != nil {
			return err
		}
		*out = append(*out, sent{title, body})
		return nil
	}
}

func s(id string, st sessions.State, mod func(*sessions.Session)) sessions.Session {
	x := sessions.Session{ID: id, Name: "name-" + id, State: st, TurnGeneration: 1, Evidence: "evidence of " + id}
	if mod != nil {
		mod(&x)
	}
	return x
}

func escalated(x *sessions.Session) { x.NeedsAttention = true }
func permission(x *sessions.Session) {
	x.WaitReason = sessions.WaitPermission
}

func TestEscalationNotifiesOncePerIncident(t *testing.T) {
	var out []sent
	n := New(recorder(&out, nil), nil, nil, nil)
	n.Observe(s("a", sessions.Working, nil), true, t0)
	n.Observe(s("a", sessions.Interrupted, escalated), true, t0)
	n.Observe(s("a", sessions.Interrupted, escalated), true, t0.Add(time.Second)) // snapshot repeats it
	if len(out) != 1 || out[0].title != "name-a needs attention" || out[0].body != "evidence of a" {
		t.Fatalf("sent %+v", out)
	}
	// Ack clears it; a later incident (a new turn) notifies again.
	n.Observe(s("a", sessions.Idle, nil), true, t0.Add(2*time.Minute))
	n.Observe(s("a", sessions.Errored, func(x *sessions.Session) { x.NeedsAttention = true; x.TurnGeneration = 2 }), true, t0.Add(3*time.Minute))
	if len(out) != 2 {
		t.Fatalf("second incident: sent %+v", out)
	}
}

func TestNoStormAfterRestart(t *testing.T) {
	var out []sent
	initial := []sessions.Session{s("a", sessions.Errored, escalated), s("b", sessions.WaitingOnUser, permission)}
	n := New(recorder(&out, nil), nil, initial, nil)
	for _, x := range initial {
		n.Observe(x, true, t0) // the first snapshot after start
	}
	if len(out) != 0 {
		t.Fatalf("conditions from before the start notified: %+v", out)
	}
}

func TestWaitingOnUserBehindSetting(t *testing.T) {
	cases := []struct {
		name    string
		reason  sessions.WaitReason
		setting bool
		want    string
	}{
		{"permission on", sessions.WaitPermission, true, "name-a asks for permission"},
		{"question on", sessions.WaitQuestion, true, "name-a has a question for you"},
		{"plan on", sessions.WaitPlan, true, "name-a waits for you to approve a plan"},
		{"review never", sessions.WaitReview, true, ""},
		{"permission off", sessions.WaitPermission, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out []sent
			n := New(recorder(&out, nil), nil, nil, nil)
			n.Observe(s("a", sessions.Working, nil), tc.setting, t0)
			n.Observe(s("a", sessions.WaitingOnUser, func(x *sessions.Session) { x.WaitReason = tc.reason }), tc.setting, t0)
			got := ""
			if len(out) == 1 {
				got = out[0].title
			}
			if len(out) > 1 || got != tc.want {
				t.Fatalf("sent %+v, want title %q", out, tc.want)
			}
		})
	}
}

func TestRateLimitAcrossSessions(t *testing.T) {
	var out []sent
	n := New(recorder(&out, nil), nil, nil, nil)
	for i := range 10 {
		id := string(rune('a' + i))
		n.Observe(s(id, sessions.Working, nil), true, t0)
		n.Observe(s(id, sessions.Errored, escalated), true, t0.Add(time.Duration(i)*time.Second))
	}
	if len(out) != 3 || n.Held != 7 {
		t.Fatalf("sent %d, held %d; want 3 and 7", len(out), n.Held)
	}
	// Within the window nothing more goes out, however often it is offered.
	n.Flush(t0.Add(30 * time.Second))
	if len(out) != 3 {
		t.Fatalf("flushed within the window: sent %d", len(out))
	}
	// One session is acknowledged meanwhile: its escalation is no longer
	// true and is not delivered.
	n.Observe(s("d", sessions.Idle, nil), true, t0.Add(90*time.Second))
	// After the window the held ones and a new one go out as one.
	n.Observe(s("z", sessions.Working, nil), true, t0.Add(2*time.Minute))
	n.Observe(s("z", sessions.Errored, escalated), true, t0.Add(2*time.Minute))
	if len(out) != 4 || n.Sent != 4 {
		t.Fatalf("after the window: sent %d (%d), want 4", len(out), n.Sent)
	}
	if got := out[3]; got.title != "7 sessions need attention" || strings.Contains(got.body, "name-d needs attention") ||
		!strings.Contains(got.body, "name-e needs attention") || !strings.Contains(got.body, "name-z needs attention") {
		t.Errorf("the coalesced notification: %+v", got)
	}
	n.Flush(t0.Add(5 * time.Minute))
	if len(out) != 4 {
		t.Errorf("nothing was held, yet %d sent", len(out))
	}
}

// Run offers what the limiter held to it on its own, with no message
// coming: a single held escalation is delivered as itself once the
// window has passed.
func TestRunDeliversHeldNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var out []sent
		rec := recorder(&out, nil)
		n := New(func(title, body string, icon []byte) error {
			mu.Lock()
			defer mu.Unlock()
			return rec(title, body, icon)
		}, nil, nil, nil)
		now := time.Now()
		for i := range 4 {
			id := string(rune('a' + i))
			n.Observe(s(id, sessions.Working, nil), true, now)
			n.Observe(s(id, sessions.Errored, escalated), true, now)
		}
		ctx, cancel := context.WithCancel(context.Background())
		in := make(chan localapi.Message)
		done := make(chan struct{})
		go func() { n.Run(ctx, in, func() bool { return true }); close(done) }()
		time.Sleep(time.Minute + flushEvery)
		synctest.Wait()
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(out) != 4 || out[3].title != "name-d needs attention" {
			t.Fatalf("sent %+v, want the held escalation of d delivered as itself", out)
		}
	})
}

// A session's name and evidence can hold what a model or a provider wrote:
// the title and body a notification shows carry no secret, no line break,
// no escape sequence or bidi override, and the body is bounded.
func TestTextIsSanitized(t *testing.T) {
	tests := []struct {
		name, sessionName, evidence string
		check                       func(t *testing.T, title, body string)
	}{
		{"secrets, lines and length", "a", "auth failed with key sk-ant-api03-SECRETSECRETSECRET\nstderr: " + strings.Repeat("x", 500),
			func(t *testing.T, _, b string) {
				if strings.Contains(b, "SECRET") || strings.Contains(b, "\n") || len([]rune(b)) > maxBody {
					t.Fatalf("body not sanitized: %q", b)
				}
			}},
		{"escape sequences", "fix\x1b]0;owned\x07 it\u202e", "failed: \x1b[31mred\x1b[0m",
			func(t *testing.T, title, b string) {
				if want := "fix it needs attention"; title != want {
					t.Errorf("title %q, want %q", title, want)
				}
				if want := "failed: red"; b != want {
					t.Errorf("body %q, want %q", b, want)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out []sent
			n := New(recorder(&out, nil), nil, nil, nil)
			n.Observe(s("a", sessions.Working, nil), true, t0)
			n.Observe(s("a", sessions.Errored, func(x *sessions.Session) {
				x.NeedsAttention = true
				x.Name = tt.sessionName
				x.Evidence = tt.evidence
			}), true, t0)
			if len(out) != 1 {
				t.Fatal("nothing sent")
			}
			tt.check(t, out[0].title, out[0].body)
		})
	}
}

func TestNoServiceLogsOnceAndCarriesOn(t *testing.T) {
	var out []sent
	n := New(recorder(&out, errors.New("no notification daemon")), nil, nil, nil)
	for i := range 3 {
		id := string(rune('a' + i))
		n.Observe(s(id, sessions.Working, nil), true, t0)
		n.Observe(s(id, sessions.Errored, escalated), true, t0)
	}
	if n.Failed != 3 || n.Sent != 0 || !n.unavailable {
		t.Fatalf("failed %d sent %d unavailable %v", n.Failed, n.Sent, n.unavailable)
	}
}

// TestSettingDescriptionMatchesDecider holds the notify.waiting_on_user
// description to what the decider does: every wait it notifies is named,
// and a finished turn (review), which never notifies — it would arrive
// after every turn of every session and, through the shared rate limit,
// crowd out escalations — is said not to.
func TestSettingDescriptionMatchesDecider(t *testing.T) {
	var desc string
	for _, d := range settings.MustRegistry().Defs() {
		if d.Key == "notify.waiting_on_user" {
			desc = d.Description
		}
	}
	if desc == "" {
		t.Fatal("no notify.waiting_on_user setting")
	}
	cases := []struct {
		reason sessions.WaitReason
		word   string
	}{
		{sessions.WaitQuestion, "a question"},
		{sessions.WaitPlan, "a plan"},
		{sessions.WaitPermission, "a permission"},
		{sessions.WaitReview, "A finished turn does not notify"},
	}
	for _, tc := range cases {
		d := NewDecider(nil)
		d.Observe(s("a", sessions.Working, nil), true)
		_, notified := d.Observe(s("a", sessions.WaitingOnUser, func(x *sessions.Session) { x.WaitReason = tc.reason }), true)
		said := strings.Contains(desc, tc.word)
		if tc.reason == sessions.WaitReview {
			said = !said // the sentence says it does not notify
		}
		if notified != said {
			t.Errorf("%s: notifies %t, but the description %q says so: %t", tc.reason, notified, desc, said)
		}
	}
}

// Run primes from the subscription's first snapshot (no storm at start),
// then notifies live changes once, reading the setting from memory.
func TestRunPrimesThenNotifies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out []sent
		n := New(recorder(&out, nil), nil, nil, nil)
		in := make(chan localapi.Message, 8)
		waiting := false
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { n.Run(ctx, in, func() bool { return waiting }); close(done) }()

		old := s("a", sessions.Errored, escalated)
		in <- localapi.Message{Type: localapi.MsgSnapshot, Sessions: []sessions.Session{old, s("b", sessions.Working, nil)}}
		in <- localapi.Message{Type: localapi.MsgSnapshot, Sessions: []sessions.Session{old}}
		synctest.Wait()
		if len(out) != 0 {
			t.Fatalf("what held at start notified: %+v", out)
		}
		b := s("b", sessions.Errored, escalated)
		in <- localapi.Message{Type: localapi.MsgEscalation, Session: &b}
		in <- localapi.Message{Type: localapi.MsgSession, Session: &b}
		perm := s("c", sessions.WaitingOnUser, permission)
		in <- localapi.Message{Type: localapi.MsgSession, Session: &perm} // setting off
		synctest.Wait()
		if len(out) != 1 || out[0].title != "name-b needs attention" {
			t.Fatalf("sent %+v, want one escalation", out)
		}
		waiting = true
		perm2 := s("d", sessions.WaitingOnUser, permission)
		in <- localapi.Message{Type: localapi.MsgSession, Session: &perm2}
		synctest.Wait()
		if len(out) != 2 || out[1].title != "name-d asks for permission" {
			t.Fatalf("sent %+v, want the permission too", out)
		}
		cancel()
		<-done
	})
}

// TestGateLeavesNotificationsToTheDesktop: while the gate says a desktop
// shows notifications, the supervisor's own notifier sends nothing, and an
// incident it left to the desktop is not sent later either (never twice);
// a new incident after the desktop left is sent.
func TestGateLeavesNotificationsToTheDesktop(t *testing.T) {
	var out []sent
	n := New(recorder(&out, nil), nil, nil, nil)
	attached := true
	n.SetGate(func() bool { return !attached })
	n.Observe(s("a", sessions.Working, nil), true, t0)
	n.Observe(s("a", sessions.Interrupted, escalated), true, t0)
	if len(out) != 0 || n.Deferred != 1 {
		t.Fatalf("with a desktop attached: sent %+v, deferred %d; want nothing sent, 1 deferred", out, n.Deferred)
	}
	attached = false
	n.Observe(s("a", sessions.Interrupted, escalated), true, t0.Add(time.Minute)) // a snapshot repeats it
	if len(out) != 0 {
		t.Fatalf("the incident the desktop showed was sent again: %+v", out)
	}
	n.Observe(s("a", sessions.Idle, nil), true, t0.Add(2*time.Minute)) // acknowledged
	n.Observe(s("a", sessions.Errored, func(x *sessions.Session) { x.NeedsAttention = true; x.TurnGeneration = 2 }), true, t0.Add(3*time.Minute))
	if len(out) != 1 || out[0].title != "name-a needs attention" {
		t.Fatalf("a new incident with no desktop attached: sent %+v, want one", out)
	}
}

// A notification about a session running in a terminal says so (a sender
// with actions offers "Go to terminal"); a managed one's, or one whose
// process is gone, does not.
func TestNotificationSaysTerminal(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*sessions.Session)
		want bool
	}{
		{"managed", func(x *sessions.Session) { x.PID, x.ProcessAlive = 42, true }, false},
		{"terminal, running", func(x *sessions.Session) { x.Source, x.PID, x.ProcessAlive = sessions.Observed, 42, true }, true},
		{"terminal, gone", func(x *sessions.Session) { x.Source, x.PID = sessions.Observed, 42 }, false},
	} {
		d := NewDecider(nil)
		d.Observe(s("a", sessions.Working, tc.mod), true)
		note, ok := d.Observe(s("a", sessions.Interrupted, func(x *sessions.Session) { tc.mod(x); escalated(x) }), true)
		if !ok || note.Terminal != tc.want {
			t.Errorf("%s: notified %t, Terminal %t; want %t", tc.name, ok, note.Terminal, tc.want)
		}
	}
}

// runNotifier runs a notifier started at started, with no desktop gate, on
// the messages sent to in until ctx ends (done closed then); out is what it
// sent. Inside a synctest bubble, synctest.Wait lets it take what was sent.
func runNotifier(ctx context.Context, started time.Time) (in chan<- localapi.Message, out *[]sent, done <-chan struct{}) {
	out = new([]sent)
	n := New(recorder(out, nil), nil, nil, nil)
	n.SetStartedAt(started)
	msgs := make(chan localapi.Message, 8)
	finished := make(chan struct{})
	go func() { n.Run(ctx, msgs, func() bool { return false }); close(finished) }()
	return msgs, out, finished
}

// An incident that escalated after this process started but before its
// notifier subscribed (the desktop comes up after the supervisor answers)
// arrives in the first snapshot: it is notified, not primed away; one from
// before the start is history and stays quiet.
func TestRunNotifiesWhatEscalatedWhileSubscribing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		in, out, done := runNotifier(ctx, started)

		before := s("a", sessions.Errored, escalated)
		before.StateChangedAt = started.Add(-time.Minute)
		after := s("b", sessions.Interrupted, escalated)
		after.StateChangedAt = started.Add(5 * time.Second)
		in <- localapi.Message{Type: localapi.MsgSnapshot, Sessions: []sessions.Session{before, after}}
		synctest.Wait()
		if len(*out) != 1 || (*out)[0].title != "name-b needs attention" {
			t.Fatalf("sent %+v, want only the escalation of this run", *out)
		}
		in <- localapi.Message{Type: localapi.MsgSession, Session: &after}
		synctest.Wait()
		if len(*out) != 1 {
			t.Fatalf("sent %+v: the same incident twice", *out)
		}
		cancel()
		<-done
	})
}

// A desktop attached to a supervisor subscribes to its mirror, empty until
// the supervisor's snapshot arrives: that snapshot primes the notifier
// (what the supervisor notified itself is not notified again), and what
// changed after this process started is still news. A session's message
// ends the priming (a later snapshot is a repair); the link's state, which
// the mirror sends before the supervisor's snapshot, does not.
func TestRunPrimesFromTheFirstSnapshotWithSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		in, out, done := runNotifier(ctx, started)

		notified := s("a", sessions.Interrupted, escalated)
		notified.StateChangedAt = started.Add(-10 * time.Second)
		fresh := s("b", sessions.Interrupted, escalated)
		fresh.StateChangedAt = started.Add(time.Second)
		in <- localapi.Message{Type: localapi.MsgSnapshot}
		in <- localapi.Message{Type: localapi.MsgLink, Link: &localapi.LinkStatus{State: localapi.LinkConnected}}
		in <- localapi.Message{Type: localapi.MsgSnapshot, Sessions: []sessions.Session{notified, fresh}}
		synctest.Wait()
		if len(*out) != 1 || (*out)[0].title != "name-b needs attention" {
			t.Fatalf("sent %+v, want only what escalated after the start", *out)
		}

		// An empty supervisor: its first session comes live, and a later
		// snapshot with an old escalation is a repair, notified.
		in2, out2, done2 := runNotifier(ctx, started)
		in2 <- localapi.Message{Type: localapi.MsgSnapshot}
		working := s("c", sessions.Working, nil)
		in2 <- localapi.Message{Type: localapi.MsgSession, Session: &working}
		missed := s("c", sessions.Interrupted, escalated)
		missed.StateChangedAt = started.Add(-time.Second)
		in2 <- localapi.Message{Type: localapi.MsgSnapshot, Sessions: []sessions.Session{missed}}
		synctest.Wait()
		if len(*out2) != 1 || (*out2)[0].title != "name-c needs attention" {
			t.Fatalf("sent %+v, want the escalation a repair brought", *out2)
		}
		cancel()
		<-done
		<-done2
	})
}

// Another machine's notifier names the machine first in every title (the
// name cleaned like any text from another machine).
func TestMachineNamedInTitle(t *testing.T) {
	cases := []struct {
		machine, title string
	}{
		{"", "name-a needs attention"},
		{"devbox", "devbox: name-a needs attention"},
		{"dev\x1b[31mbox", "devbox: name-a needs attention"},
	}
	for _, tc := range cases {
		var out []sent
		n := New(recorder(&out, nil), nil, nil, nil)
		n.SetMachine(tc.machine)
		n.Observe(s("a", sessions.Working, nil), true, t0)
		n.Observe(s("a", sessions.Interrupted, escalated), true, t0)
		if len(out) != 1 || out[0].title != tc.title {
			t.Errorf("machine %q: sent %+v, want title %q", tc.machine, out, tc.title)
		}
	}
}
