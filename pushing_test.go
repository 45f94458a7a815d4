package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/notify/escalation"
	"github.com/session-supervisor/session-supervisor/notify/push"
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
