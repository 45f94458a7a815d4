package main

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/notify/escalation"
	"github.com/session-supervisor/session-supervisor/notify/push"
	"github.com/session-supervisor/session-supervisor/notify/push/ntfytest"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
)

// The settings make the channels: a topic makes ntfy, a URL the
// webhook; one that cannot be used is a problem named with its reason,
// not a channel.
func TestChannelsFromSettings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        settings.Push
		channels []string
		problem  string
	}{
		{"none", settings.Push{NtfyServer: "https://ntfy.sh", WebhookFormat: "generic"}, nil, ""},
		{"ntfy", settings.Push{NtfyServer: "https://ntfy.sh", NtfyTopic: "ann-42", WebhookFormat: "generic"}, []string{"ntfy"}, ""},
		{"both", settings.Push{NtfyServer: "http://127.0.0.1:1", NtfyTopic: "t", WebhookURL: "https://hooks.example.com/x", WebhookFormat: "slack"}, []string{"ntfy", "webhook"}, ""},
		{"a webhook in clear to another machine", settings.Push{NtfyServer: "https://ntfy.sh", WebhookURL: "http://hooks.example.com/secretpath", WebhookFormat: "generic"}, nil, "webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byName, names, problems := channelsFrom(tc.p)
			if !slices.Equal(names, tc.channels) || len(byName) != len(tc.channels) {
				t.Fatalf("channels %v, want %v (problems %+v)", names, tc.channels, problems)
			}
			if tc.problem == "" && len(problems) != 0 || tc.problem != "" && (len(problems) != 1 || problems[0].Channel != tc.problem) {
				t.Fatalf("problems %+v, want %q", problems, tc.problem)
			}
			for _, pr := range problems {
				if strings.Contains(pr.Error, "secretpath") {
					t.Errorf("the problem repeats the URL's secret path: %q", pr.Error)
				}
			}
		})
	}
}

// What a channel sends of a note: an escalation is high priority and
// names its session; a burst is a summary; the test is a test.
func TestPushMessage(t *testing.T) {
	s := sessions.Session{ID: "id1", Name: "api", Agent: "claude", Cwd: "/w", State: sessions.Interrupted}
	esc := pushMessage(escalation.Note{Title: "api needs you", Urgent: true, Session: s, Incident: "escalated/id1/2", Machine: "devbox"}, "https://desk")
	if esc.Kind != push.Escalation || esc.Priority != push.High || esc.SessionID != "id1" || esc.Machine != "devbox" || esc.ClickURL != "https://desk" || esc.Incident != "escalated/id1/2" {
		t.Errorf("escalation: %+v", esc)
	}
	if m := pushMessage(escalation.Note{Title: "3 sessions need you", Urgent: true}, ""); m.Kind != push.Summary || m.SessionID != "" {
		t.Errorf("burst: %+v", m)
	}
	if m := pushMessage(escalation.Note{Title: testTitle}, ""); m.Kind != push.Test {
		t.Errorf("test: %+v", m)
	}
}

// notify test names what is wrong: no channel, or one not configured.
func TestPusherTestRefuses(t *testing.T) {
	pc := &pushChannels{}
	pc.configure(settings.Settings{Push: settings.Push{NtfyServer: "https://ntfy.sh", WebhookURL: "http://example.com/x", WebhookFormat: "generic"}})
	p := pusher{channels: pc, runner: escalation.NewRunner(escalation.Deps{})}
	if _, err := p.Test(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "no push channel is configured") || !strings.Contains(err.Error(), "webhook is set but unusable") {
		t.Errorf("no channel: %v", err)
	}
	if _, err := p.Test(context.Background(), []string{"pushover"}); err == nil || !strings.Contains(err.Error(), `"pushover" is not a configured push channel`) {
		t.Errorf("an unknown channel: %v", err)
	}
}

// The push path end to end but for the clock: the settings' ntfy channel
// (token required) publishing to a loopback ntfy server, read as a phone
// reads its topic. Incidents in quiet hours are held; when they end, one
// summary; a later incident is one message of its own, once.
func TestQuietHoursThroughNtfy(t *testing.T) {
	const token, topic = "tk_quiethours00000000000000000", "quiet-test"
	srv := ntfytest.Start(t, ntfytest.Options{Token: token})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	phone := srv.Phone(t, topic, token)

	quiet, _ := settings.ParseQuietHours("22:00-07:00")
	var mu sync.Mutex
	clock := time.Date(2026, 12, 2, 23, 0, 0, 0, time.Local)
	setClock := func(t time.Time) { mu.Lock(); clock = t; mu.Unlock() }
	pc := &pushChannels{}
	cfg := pc.configure(settings.Settings{Push: settings.Push{NtfyServer: srv.URL, NtfyTopic: topic, NtfyToken: token, Quiet: quiet, WebhookFormat: "generic"}})
	var rows []sessions.TimelineDetail
	runner := escalation.NewRunner(escalation.Deps{Send: pc.send, Desktop: func() bool { return false }, Machine: "devbox",
		Record: func(id string, d sessions.TimelineDetail) error {
			mu.Lock()
			rows = append(rows, d)
			mu.Unlock()
			return nil
		},
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }})
	in := make(chan localapi.Message)
	configs := make(chan escalation.Config, 1)
	configs <- cfg
	done := make(chan struct{})
	go func() { runner.Run(ctx, in, configs); close(done) }()
	defer func() { cancel(); <-done }()

	escalated := func(id string) localapi.Message {
		return localapi.Message{Type: localapi.MsgEscalation, Session: &sessions.Session{ID: id, Name: id, Agent: "claude", State: sessions.Interrupted, NeedsAttention: true, TurnGeneration: 1}}
	}
	in <- localapi.Message{Type: localapi.MsgSnapshot}
	in <- escalated("api")
	setClock(time.Date(2026, 12, 3, 2, 0, 0, 0, time.Local))
	in <- escalated("web")
	nothing, stop := context.WithTimeout(ctx, 2*time.Second)
	if e, err := phone.Next(nothing); err == nil {
		t.Fatalf("pushed during quiet hours: %+v", e)
	}
	stop()
	setClock(time.Date(2026, 12, 3, 7, 0, 0, 0, time.Local))
	in <- localapi.Message{Type: localapi.MsgSnapshot, Sessions: []sessions.Session{*escalated("api").Session, *escalated("web").Session}}
	wait, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	summary, err := phone.Next(wait)
	if err != nil || summary.Title != "2 sessions need you (held during quiet hours)" || !strings.Contains(summary.Message, "api:") || !strings.Contains(summary.Message, "web:") {
		t.Fatalf("after the quiet hours: %+v, %v", summary, err)
	}
	// A new incident later is its own message; nothing came between.
	setClock(time.Date(2026, 12, 3, 7, 5, 0, 0, time.Local))
	in <- escalated("docs")
	next, err := phone.Next(wait)
	if err != nil || next.Title != "docs needs you" || next.Priority != 4 {
		t.Fatalf("the next push: %+v, %v (want docs alone: the summary once)", next, err)
	}
	// The receipt is written once the server answered, which may be just
	// after the phone saw the message.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(rows)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// Each session's receipt is its own write: their order is not the
	// pushes'.
	docs := 0
	for _, r := range rows {
		if r.Channel != "ntfy" || r.Outcome != "ok" || r.Status != 200 {
			t.Errorf("receipt %+v, want an ok ntfy row", r)
		}
		if strings.Contains(r.Message, "docs needs you") {
			docs++
		}
	}
	if len(rows) != 3 || docs != 1 {
		t.Errorf("receipts %+v, want one ok ntfy row per session pushed (api, web, docs)", rows)
	}
}
