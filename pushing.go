package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/notify"
	"github.com/session-supervisor/session-supervisor/notify/escalation"
	"github.com/session-supervisor/session-supervisor/notify/push"
	"github.com/session-supervisor/session-supervisor/services"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
)

// pushChannels are the push channels the settings configure, rebuilt on
// every settings change; a channel whose settings cannot be used is a
// problem (shown by health and doctor), not a channel.
type pushChannels struct {
	mu       sync.Mutex
	byName   map[string]push.Channel
	names    []string
	problems []localapi.PushFailure
	clickURL string
}

// channelsFrom builds the channels of p: ntfy when a topic is set, the
// webhook when a URL is set.
func channelsFrom(p settings.Push) (map[string]push.Channel, []string, []localapi.PushFailure) {
	byName := map[string]push.Channel{}
	var names []string
	var problems []localapi.PushFailure
	add := func(name string, c push.Channel, err error) {
		if err != nil {
			problems = append(problems, localapi.PushFailure{Channel: name, Error: err.Error()})
			return
		}
		byName[name] = c
		names = append(names, name)
	}
	if p.NtfyTopic != "" {
		c, err := push.NewNtfy(push.NtfyConfig{Server: p.NtfyServer, Topic: p.NtfyTopic, Token: p.NtfyToken})
		add("ntfy", c, err)
	}
	if p.WebhookURL != "" {
		format, err := push.ParseWebhookFormat(p.WebhookFormat)
		var c push.Channel
		if err == nil {
			c, err = push.NewWebhook(push.WebhookConfig{URL: p.WebhookURL, Format: format, Secret: p.WebhookSecret})
		}
		add("webhook", c, err)
	}
	return byName, names, problems
}

// configure replaces the channels and returns the runner's config.
func (pc *pushChannels) configure(s settings.Settings) escalation.Config {
	byName, names, problems := channelsFrom(s.Push)
	pc.mu.Lock()
	pc.byName, pc.names, pc.problems, pc.clickURL = byName, names, problems, s.Push.ClickURL
	pc.mu.Unlock()
	return escalation.Config{
		Policy:   escalation.Policy{PushAfter: s.Push.After, PushWaiting: s.Push.WaitingOnUser, Quiet: s.Push.Quiet, Gather: escalation.DefaultGather},
		Channels: names,
	}
}

// send delivers a note through the named channel as a push message.
func (pc *pushChannels) send(ctx context.Context, name string, n escalation.Note) escalation.Receipt {
	pc.mu.Lock()
	c, click := pc.byName[name], pc.clickURL
	pc.mu.Unlock()
	if c == nil {
		return escalation.Receipt{Err: name + " is no longer configured"}
	}
	r := c.Send(ctx, pushMessage(n, click))
	return escalation.Receipt{OK: r.OK, Status: r.Status, Err: r.Err, Retry: r.Retry}
}

// pushMessage is what a channel sends of a note.
func pushMessage(n escalation.Note, click string) push.Message {
	m := push.Message{Kind: push.Summary, Priority: push.Default, Title: n.Title, Body: n.Body(), ClickURL: click, Tags: []string{"bell"}, At: time.Now(),
		Incident: n.Incident, Machine: n.Machine}
	if n.Urgent {
		m.Priority, m.Tags = push.High, []string{"warning"}
	}
	if s := n.Session; s.ID != "" {
		m.Kind = push.Waiting
		if n.Urgent {
			m.Kind = push.Escalation
		}
		m.SessionID, m.SessionName, m.Agent, m.Cwd, m.State = s.ID, s.DisplayName(), s.Agent, s.Cwd, s.State.String()
		m.Reason = s.WaitReason.String()
		m.Tags = append(m.Tags, s.Agent)
	}
	if n.Title == testTitle {
		m.Kind = push.Test
	}
	return m
}

// testTitle is the title escalation.Runner.Test gives its sample.
const testTitle = "Session Supervisor test"

// pusher answers the local API for the push channels.
type pusher struct {
	channels *pushChannels
	runner   *escalation.Runner
}

func (p pusher) Test(ctx context.Context, names []string) ([]localapi.PushReceipt, error) {
	p.channels.mu.Lock()
	configured, problems := slices.Clone(p.channels.names), slices.Clone(p.channels.problems)
	p.channels.mu.Unlock()
	if len(names) == 0 {
		names = configured
	}
	if len(names) == 0 {
		why := "no push channel is configured: set notify.ntfy.topic or notify.webhook.url"
		for _, pr := range problems {
			why += fmt.Sprintf("; %s is set but unusable: %s", pr.Channel, pr.Error)
		}
		return nil, fmt.Errorf("%s", why)
	}
	for _, n := range names {
		if !slices.Contains(configured, n) {
			return nil, fmt.Errorf("%q is not a configured push channel (configured: %s)", n, orNone(configured))
		}
	}
	receipts := p.runner.Test(ctx, names)
	out := make([]localapi.PushReceipt, 0, len(names))
	for _, n := range names {
		r := receipts[n]
		out = append(out, localapi.PushReceipt{Channel: n, OK: r.OK, Status: r.Status, Error: r.Err})
	}
	return out, nil
}

func (p pusher) Status() localapi.PushStatus {
	p.channels.mu.Lock()
	s := localapi.PushStatus{Channels: slices.Clone(p.channels.names), Problems: slices.Clone(p.channels.problems)}
	p.channels.mu.Unlock()
	if s.Channels == nil {
		s.Channels = []string{}
	}
	for _, f := range p.runner.Failures() {
		s.Failures = append(s.Failures, localapi.PushFailure{Channel: f.Channel, At: f.At, Error: f.Err, GaveUp: f.GaveUp})
	}
	return s
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// pushBuffer is the push runner's subscription queue: it only reacts to
// state changes, and a snapshot repairs what an overflow dropped.
const pushBuffer = 256

// pushWhileAway runs the push channels beside the supervisor, in every
// mode (a desktop or none): what needs the user goes to ntfy and the
// webhook after notify.push_after_minutes, at once when desktop reports
// that no desktop shows notifications.
//
// It returns what the local API and the window ask: a test, the state.
func (d *daemon) pushWhileAway(desktop func() bool) localapi.Pusher {
	channels := &pushChannels{}
	home, _ := os.UserHomeDir()
	machine, _ := os.Hostname()
	runner := escalation.NewRunner(escalation.Deps{
		Send: channels.send,
		Record: func(id string, detail sessions.TimelineDetail) error {
			return d.rt.Record(id, "notified", detail)
		},
		Desktop: desktop, Machine: machine, Home: home, Log: d.log,
	})
	configs := make(chan escalation.Config, 1)
	configs <- channels.configure(d.settings.Get())
	changes, cancelChanges := d.settings.Subscribe()
	sub := d.rt.Subscribe(pushBuffer, false)
	p := pusher{channels: channels, runner: runner}
	d.api.SetPusher(p)
	err := d.services.Add(services.Service{Name: "the push channels", Run: func(ctx context.Context) error {
		defer d.rt.Bus().Unsubscribe(sub)
		defer cancelChanges()
		var follow sync.WaitGroup
		defer follow.Wait()
		follow.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case s, ok := <-changes:
					if !ok {
						return
					}
					select {
					case configs <- channels.configure(s):
					case <-ctx.Done():
						return
					}
				}
			}
		})
		runner.Run(ctx, sub.C, configs)
		return nil
	}})
	if err != nil {
		cancelChanges()
		d.rt.Bus().Unsubscribe(sub)
		d.api.SetPusher(nil)
		d.log.Warn("the push channels did not start", "err", err)
	}
	return p
}

// screenLockWatch watches the session's screen saver where the platform
// tells (freedesktop and GNOME over the session bus); elsewhere, or with
// no session bus, the screen never counts as locked.
func screenLockWatch() *notify.LockWatch {
	if !notificationServiceReachable() || runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return nil
	}
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil
	}
	return notify.NewLockWatch(conn, lockCheckEvery)
}

// lockCheckEvery bounds how stale the lock state may be: a push waits at
// most this long past the moment the screen locked.
const lockCheckEvery = 30 * time.Second
