package push_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/notify/push"
	"github.com/session-supervisor/session-supervisor/notify/push/ntfytest"
	"github.com/session-supervisor/session-supervisor/notify/push/webhooktest"
)

// These tests send over real loopback sockets to servers that speak the
// services' protocols, and look at what arrived the way the other side does:
// a phone subscribed to the ntfy topic's JSON stream, a webhook receiver that
// verifies the signature.

// wait bounds a test's waiting on the other side; generous for a busy machine.
const wait = 20 * time.Second

func next(t *testing.T, sub *ntfytest.Subscription) ntfytest.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	e, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("no message arrived: %v", err)
	}
	return e
}

func TestNtfyMessagesArriveOnTheStream(t *testing.T) {
	srv := ntfytest.Start(t, ntfytest.Options{})
	sub := srv.Phone(t, "sup-phone", "")
	ch := push.MustChannel(t, push.NewNtfy, push.NtfyConfig{Server: srv.URL, Topic: "sup-phone"})
	if ch.Name() != "ntfy" {
		t.Errorf("Name = %q", ch.Name())
	}
	cases := []struct {
		msg  push.Message
		want ntfytest.Event
	}{
		{
			push.Message{Kind: push.Escalation, Priority: push.High, Title: "api-refactor needs you — ü", Body: "Stalled 12 min, nudged twice.\nBash: rm -rf build/ — allow?", Tags: []string{"warning", "claude"}, ClickURL: "https://example.com/open/s1"},
			ntfytest.Event{Title: "api-refactor needs you — ü", Message: "Stalled 12 min, nudged twice.\nBash: rm -rf build/ — allow?", Tags: []string{"warning", "claude"}, Priority: 4, Click: "https://example.com/open/s1"},
		},
		{
			push.Message{Kind: push.Summary, Priority: push.Urgent, Title: "3 sessions need attention", Body: "a, b, c"},
			ntfytest.Event{Title: "3 sessions need attention", Message: "a, b, c", Priority: 5},
		},
		{
			push.Message{Kind: push.Waiting, Title: "docs finished its turn", Body: "waiting for you"},
			ntfytest.Event{Title: "docs finished its turn", Message: "waiting for you", Priority: 3},
		},
	}
	for _, c := range cases {
		rc := ch.Send(context.Background(), c.msg)
		if !rc.OK || rc.Status != http.StatusOK || rc.Err != "" || rc.Channel != "ntfy" {
			t.Fatalf("receipt %+v, want OK 200", rc)
		}
		got := next(t, sub)
		if got.Event != "message" || got.Topic != "sup-phone" || got.ID == "" || got.Time == 0 {
			t.Errorf("event %+v is not a message of the topic", got)
		}
		if got.Title != c.want.Title || got.Message != c.want.Message || got.Priority != c.want.Priority ||
			got.Click != c.want.Click || strings.Join(got.Tags, ",") != strings.Join(c.want.Tags, ",") {
			t.Errorf("arrived %+v\nwant     %+v", got, c.want)
		}
	}
}

func TestNtfyTokenRequiredWhenSet(t *testing.T) {
	const token, readOnly = "tk_abcdefghijklmnopqrstuvwxyz012", "tk_readonly0000000000000000000"
	srv := ntfytest.Start(t, ntfytest.Options{Token: token, ReadOnlyToken: readOnly})

	// A phone without the token cannot subscribe; with it, it can.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var se *ntfytest.StatusError
	if _, err := ntfytest.Subscribe(ctx, srv.URL, "private", ""); !errors.As(err, &se) || se.Status != http.StatusForbidden {
		t.Fatalf("anonymous subscribe: %v, want 403", err)
	}
	sub := srv.Phone(t, "private", readOnly)

	msg := push.Message{Title: "t", Body: "b"}
	// ntfy answers 403 to anonymous access and 401 to a token it does not
	// know; neither is worth retrying, and neither receipt shows a token.
	cases := []struct {
		name   string
		token  string
		status int
	}{
		{"no token", "", http.StatusForbidden},
		{"wrong token", "tk_wrongwrongwrongwrongwrong12", http.StatusUnauthorized},
		{"read-only token", readOnly, http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := push.MustChannel(t, push.NewNtfy, push.NtfyConfig{Server: srv.URL, Topic: "private", Token: c.token}).Send(context.Background(), msg)
			if rc.OK || rc.Status != c.status || rc.Retry {
				t.Errorf("receipt %+v, want status %d, no retry", rc, c.status)
			}
			if !strings.Contains(rc.Err, "check the access token") {
				t.Errorf("Err %q does not point at the token", rc.Err)
			}
			if c.token != "" && strings.Contains(rc.Err, c.token) {
				t.Errorf("Err %q shows the token", rc.Err)
			}
		})
	}
	rc := push.MustChannel(t, push.NewNtfy, push.NtfyConfig{Server: srv.URL, Topic: "private", Token: token}).Send(context.Background(), push.Message{Title: "with token", Body: "b"})
	if !rc.OK {
		t.Fatalf("receipt with the token: %+v", rc)
	}
	// Only the authorized message reached the phone.
	if got := next(t, sub); got.Title != "with token" {
		t.Errorf("first message on the stream is %+v, want the authorized one", got)
	}
	events, err := ntfytest.Poll(ctx, srv.URL, "private", token)
	if err != nil || len(events) != 1 {
		t.Errorf("server holds %d messages (%v), want 1", len(events), err)
	}
}

// closedPort is an address on 127.0.0.1 where nothing listens: connecting
// is refused at once.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestNtfyFailuresGiveRetryableReceipts(t *testing.T) {
	const timeout = 500 * time.Millisecond
	msg := push.Message{Title: "t", Body: "b"}
	cases := []struct {
		name      string
		setup     func(*ntfytest.Server)
		server    func(*ntfytest.Server) string
		status    int
		retry     bool
		errSays   string
		parentCtx time.Duration // a caller's deadline shorter than the channel's timeout
	}{
		{name: "500", setup: func(s *ntfytest.Server) { s.FailWith(500) }, status: 500, retry: true, errSays: "HTTP 500"},
		{name: "429", setup: func(s *ntfytest.Server) { s.FailWith(429) }, status: 429, retry: true, errSays: "HTTP 429"},
		{name: "400 is a configuration error", setup: func(s *ntfytest.Server) { s.FailWith(400) }, status: 400, retry: false, errSays: "HTTP 400"},
		{name: "hang: the channel's timeout", setup: func(s *ntfytest.Server) { s.Hang(true) }, retry: true, errSays: "no answer within"},
		{name: "hang: the caller's deadline", setup: func(s *ntfytest.Server) { s.Hang(true) }, retry: true, errSays: "no answer within", parentCtx: 150 * time.Millisecond},
		{name: "server went down", setup: func(s *ntfytest.Server) { s.Refuse() }, retry: true, errSays: "refused"},
		{name: "connection refused", server: func(*ntfytest.Server) string { return "http://" + closedPort(t) }, retry: true, errSays: "connection refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := ntfytest.Start(t, ntfytest.Options{})
			url := srv.URL
			if c.server != nil {
				url = c.server(srv)
			}
			var sub *ntfytest.Subscription
			if c.setup != nil {
				sub = srv.Phone(t, "t", "")
				c.setup(srv)
			}
			ch := push.MustChannel(t, push.NewNtfy, push.NtfyConfig{Server: url, Topic: "t", Timeout: timeout})
			ctx := context.Background()
			if c.parentCtx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.parentCtx)
				defer cancel()
			}
			start := time.Now()
			rc := ch.Send(ctx, msg)
			took := time.Since(start)
			t.Logf("%+v after %s", rc, took)
			if rc.OK || rc.Status != c.status || rc.Retry != c.retry || !strings.Contains(rc.Err, c.errSays) {
				t.Errorf("receipt %+v, want status %d, retry %v, Err saying %q", rc, c.status, c.retry, c.errSays)
			}
			limit := timeout
			if c.parentCtx > 0 {
				limit = c.parentCtx
			}
			// The bound that matters: Send never outlives its deadline by
			// more than scheduling slack.
			if took > limit+2*time.Second {
				t.Errorf("Send took %s, deadline %s", took, limit)
			}
			if c.parentCtx > 0 && took >= timeout {
				t.Errorf("Send took %s: it waited for its own timeout, not the caller's deadline", took)
			}
			if strings.Contains(rc.Err, url[len("http://"):]) && c.errSays != "refused" && c.errSays != "connection refused" {
				t.Errorf("Err %q names the server where it need not", rc.Err)
			}
			if sub != nil && c.name != "server went down" {
				// Nothing reached the phone.
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				if e, err := sub.Next(ctx); err == nil {
					t.Errorf("a failed publish arrived: %+v", e)
				}
			}
		})
	}
}

func TestNtfyRetryAfterFailureDelivers(t *testing.T) {
	srv := ntfytest.Start(t, ntfytest.Options{})
	sub := srv.Phone(t, "t", "")
	ch := push.MustChannel(t, push.NewNtfy, push.NtfyConfig{Server: srv.URL, Topic: "t"})
	srv.FailWith(503)
	if rc := ch.Send(context.Background(), push.Message{Title: "once"}); rc.OK || !rc.Retry {
		t.Fatalf("first attempt %+v, want a retryable failure", rc)
	}
	srv.FailWith(0)
	if rc := ch.Send(context.Background(), push.Message{Title: "once"}); !rc.OK {
		t.Fatalf("retry %+v", rc)
	}
	if got := next(t, sub); got.Title != "once" {
		t.Errorf("arrived %+v", got)
	}
	if n := srv.Attempts(); n != 2 {
		t.Errorf("server saw %d attempts, want 2", n)
	}
}

func TestWebhookFormatsArriveSignedAndDecoded(t *testing.T) {
	const secret = "whsec_0123456789abcdef"
	msg := push.Message{
		Kind: push.Escalation, Priority: push.High,
		Title: "api-refactor needs you", Body: "Interrupted: stalled 12 min\nnudged twice, interrupted once",
		Tags: []string{"warning"}, ClickURL: "https://example.com/open/s1",
		SessionID: "s1", SessionName: "api-refactor", Agent: "claude", Machine: "box", Cwd: "/home/me/api",
		State: "Interrupted", Reason: "stalled 12 min", Incident: "s1:2", At: time.Now(),
	}
	for _, f := range []push.WebhookFormat{push.Generic, push.Slack, push.Discord} {
		t.Run(f.String(), func(t *testing.T) {
			rcv := webhooktest.Start(t, webhooktest.Options{Format: f, Secret: secret, MaxSkew: time.Minute})
			ch := push.MustChannel(t, push.NewWebhook, push.WebhookConfig{URL: rcv.URL, Format: f, Secret: secret})
			rc := ch.Send(context.Background(), msg)
			if !rc.OK || rc.Channel != "webhook" || rc.Err != "" {
				t.Fatalf("receipt %+v", rc)
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			q, err := rcv.Next(ctx)
			if err != nil || q.Err != nil {
				t.Fatalf("receiver: %v / %v", err, q.Err)
			}
			if q.Status != rc.Status {
				t.Errorf("receiver answered %d, receipt says %d", q.Status, rc.Status)
			}
			switch f {
			case push.Generic:
				b := q.Generic
				if b.Kind != "escalation" || b.Priority != "high" || b.Title != msg.Title || b.Text != msg.Body ||
					b.Incident != "s1:2" || b.ClickURL != msg.ClickURL || b.Session.Name != "api-refactor" ||
					b.Session.Cwd != "/home/me/api" || b.Session.Reason != "stalled 12 min" {
					t.Errorf("generic body %+v", b)
				}
				if at, err := time.Parse(time.RFC3339, b.At); err != nil || at.Unix() != msg.At.Unix() {
					t.Errorf("at %q (%v), want %s", b.At, err, msg.At)
				}
			case push.Slack:
				if !strings.HasPrefix(q.Slack.Text, "*api-refactor needs you*\n") || !strings.HasSuffix(q.Slack.Text, "|Open>") {
					t.Errorf("slack text %q", q.Slack.Text)
				}
			case push.Discord:
				if !strings.HasPrefix(q.Discord.Content, "**api-refactor needs you**\n") || q.Discord.AllowedMentions.Parse == nil {
					t.Errorf("discord body %+v", q.Discord)
				}
			}
		})
	}
}

func TestWebhookSignatureRefused(t *testing.T) {
	rcv := webhooktest.Start(t, webhooktest.Options{Secret: "whsec_receiver_secret"})
	cases := []struct {
		name   string
		secret string
		want   error
	}{
		{"unsigned", "", push.ErrNoSignature},
		{"other secret", "whsec_a_different_one", push.ErrBadSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := push.MustChannel(t, push.NewWebhook, push.WebhookConfig{URL: rcv.URL, Secret: c.secret}).Send(context.Background(), push.Message{Title: "t"})
			if rc.OK || rc.Status != http.StatusUnauthorized || rc.Retry {
				t.Errorf("receipt %+v, want 401 without retry", rc)
			}
			for _, s := range []string{"whsec_", "secretpath", "/hooks/"} {
				if strings.Contains(rc.Err, s) {
					t.Errorf("Err %q shows %q", rc.Err, s)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			q, err := rcv.Next(ctx)
			if err != nil || !errors.Is(q.Err, c.want) {
				t.Errorf("receiver refused with %v (%v), want %v", q.Err, err, c.want)
			}
		})
	}
}

// echoServer answers 400 with everything it was sent, as a misbehaving proxy
// might: the request line, the headers and the body.
func echoServer(t *testing.T, status int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(status)
		io.WriteString(w, r.Method+" "+r.URL.String()+" "+r.Header.Get("Authorization")+" "+string(b))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSecretsNeverInReceipts(t *testing.T) {
	const token = "tk_topsecret_token_value_123"
	const path = "/api/webhooks/123456/WEBHOOKTOKENxyz"
	echo := echoServer(t, http.StatusBadRequest)
	// The hung server reads the body first: only then does net/http watch the
	// connection and end the request's context when the client gives up.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	refused := "http://" + closedPort(t)

	type sendCase struct {
		name    string
		ch      push.Channel
		secrets []string
	}
	var cases []sendCase
	for _, base := range []string{echo.URL, hang.URL, refused} {
		cases = append(cases,
			sendCase{"ntfy " + base, push.MustChannel(t, push.NewNtfy, push.NtfyConfig{Server: base, Topic: "t", Token: token, Timeout: 300 * time.Millisecond}), []string{token}},
			sendCase{"webhook " + base, push.MustChannel(t, push.NewWebhook, push.WebhookConfig{URL: base + path + "?token=QUERYSECRET", Secret: "whsec_signing", Timeout: 300 * time.Millisecond}), []string{"WEBHOOKTOKENxyz", "/api/webhooks", "QUERYSECRET", "whsec_signing"}},
		)
	}
	for _, c := range cases {
		rc := c.ch.Send(context.Background(), push.Message{Title: "t", Body: "b"})
		t.Logf("%s: %+v", c.name, rc)
		if rc.OK || rc.Err == "" {
			t.Errorf("%s: receipt %+v, want a failure", c.name, rc)
		}
		for _, s := range c.secrets {
			if strings.Contains(rc.Err, s) {
				t.Errorf("%s: Err %q shows a secret (%q)", c.name, rc.Err, s)
			}
		}
		if len(rc.Err) > 400 {
			t.Errorf("%s: Err is %d bytes", c.name, len(rc.Err))
		}
	}
}

func TestWebhookRedirectIsNotFollowed(t *testing.T) {
	rcv := webhooktest.Start(t, webhooktest.Options{})
	redirect := httptest.NewServer(http.RedirectHandler(rcv.URL, http.StatusFound))
	t.Cleanup(redirect.Close)
	rc := push.MustChannel(t, push.NewWebhook, push.WebhookConfig{URL: redirect.URL + "/h"}).Send(context.Background(), push.Message{Title: "t"})
	if rc.OK || rc.Status != http.StatusFound || rc.Retry || !strings.Contains(rc.Err, "redirected") {
		t.Errorf("receipt %+v, want a 302 reported, not followed", rc)
	}
	if n := rcv.Pending(); n != 0 {
		t.Errorf("the redirect was followed: the receiver got %d requests", n)
	}
}

func TestWebhookFailureStatuses(t *testing.T) {
	rcv := webhooktest.Start(t, webhooktest.Options{Format: push.Slack})
	ch := push.MustChannel(t, push.NewWebhook, push.WebhookConfig{URL: rcv.URL, Format: push.Slack})
	for _, c := range []struct {
		status int
		retry  bool
	}{{500, true}, {502, true}, {429, true}, {404, false}, {403, false}} {
		rcv.FailWith(c.status)
		if rc := ch.Send(context.Background(), push.Message{Title: "t"}); rc.OK || rc.Status != c.status || rc.Retry != c.retry {
			t.Errorf("answer %d: receipt %+v, want retry %v", c.status, rc, c.retry)
		}
	}
}

// A hung channel holds up only its own Send: another channel sending at the
// same time is answered as usual. The hung one is ended by its caller's
// context (the app quitting), which leaves a retryable receipt.
func TestHungChannelDoesNotHoldAnother(t *testing.T) {
	slow := ntfytest.Start(t, ntfytest.Options{})
	slow.Hang(true)
	fast := ntfytest.Start(t, ntfytest.Options{})
	sub := fast.Phone(t, "t", "")
	hung := push.MustChannel(t, push.NewNtfy, push.NtfyConfig{Server: slow.URL, Topic: "t"}) // the default 10 s timeout
	ok := push.MustChannel(t, push.NewNtfy, push.NtfyConfig{Server: fast.URL, Topic: "t"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan push.Receipt, 1)
	go func() { done <- hung.Send(ctx, push.Message{Title: "slow"}) }()
	if rc := ok.Send(context.Background(), push.Message{Title: "fast"}); !rc.OK {
		t.Fatalf("healthy channel: %+v", rc)
	}
	if got := next(t, sub); got.Title != "fast" {
		t.Errorf("arrived %+v", got)
	}
	select {
	case rc := <-done:
		t.Fatalf("the hung Send returned while its server hung: %+v", rc)
	default:
	}
	cancel()
	if rc := <-done; rc.OK || !rc.Retry || rc.Err != "canceled" {
		t.Errorf("hung receipt %+v, want canceled and retryable", rc)
	}
}

// An untrusted certificate is a configuration error, not a passing one; a
// configured client that trusts it delivers.
func TestWebhookTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := srv.URL + "/api/webhooks/1/TOKENPART"
	rc := push.MustChannel(t, push.NewWebhook, push.WebhookConfig{URL: url, Format: push.Discord}).Send(context.Background(), push.Message{Title: "t"})
	if rc.OK || rc.Retry || !strings.Contains(rc.Err, "TLS certificate not trusted") || strings.Contains(rc.Err, "TOKENPART") {
		t.Errorf("untrusted certificate: receipt %+v", rc)
	}
	rc = push.MustChannel(t, push.NewWebhook, push.WebhookConfig{URL: url, Format: push.Discord, Client: srv.Client()}).Send(context.Background(), push.Message{Title: "t"})
	if !rc.OK || rc.Status != http.StatusNoContent {
		t.Errorf("trusting client: receipt %+v", rc)
	}
}
