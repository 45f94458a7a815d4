package push

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The pure halves: what each channel would send, compared byte for byte.

// MustChannel is the channel newChannel makes of c, or the test fails. It
// is exported for the package's external tests (send_test.go) too.
func MustChannel[C any](t testing.TB, newChannel func(C) (Channel, error), c C) Channel {
	t.Helper()
	ch, err := newChannel(c)
	if err != nil {
		t.Fatalf("making the channel: %v", err)
	}
	return ch
}

func TestNtfyRequest(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes: over ntfy's 4096
	cases := []struct {
		name     string
		cfg      NtfyConfig
		msg      Message
		wantURL  string
		wantAuth string
		wantBody string
	}{
		{
			name:     "public server, default priority",
			cfg:      NtfyConfig{Topic: "sup-123"},
			msg:      Message{Title: "api-refactor needs you", Body: "stalled 12 min"},
			wantURL:  "https://ntfy.sh/",
			wantBody: `{"topic":"sup-123","message":"stalled 12 min","title":"api-refactor needs you","priority":3}`,
		},
		{
			name:     "self-hosted under a path, token, high, tags, click",
			cfg:      NtfyConfig{Server: "https://example.com/ntfy/", Topic: "t", Token: "tk_abc"},
			msg:      Message{Priority: High, Title: "Ünïcode <title> & more", Body: "Bash: rm -rf build/ — allow?", Tags: []string{"warning", " ", "a,b"}, ClickURL: "https://example.com/s/1"},
			wantURL:  "https://example.com/ntfy/",
			wantAuth: "Bearer tk_abc",
			wantBody: `{"topic":"t","message":"Bash: rm -rf build/ — allow?","title":"Ünïcode <title> & more","tags":["warning","a b"],"priority":4,"click":"https://example.com/s/1"}`,
		},
		{
			name:     "urgent, empty body takes the title",
			cfg:      NtfyConfig{Server: "http://127.0.0.1:8080", Topic: "x"},
			msg:      Message{Priority: Urgent, Title: "3 sessions need attention"},
			wantURL:  "http://127.0.0.1:8080/",
			wantBody: `{"topic":"x","message":"3 sessions need attention","title":"3 sessions need attention","priority":5}`,
		},
		{
			name:     "long body clipped to 4096 bytes on a rune boundary",
			cfg:      NtfyConfig{Topic: "x"},
			msg:      Message{Body: long},
			wantURL:  "https://ntfy.sh/",
			wantBody: `{"topic":"x","message":"` + clip(long, ntfyMaxMessage) + `","priority":3}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := MustChannel(t, NewNtfy, c.cfg).(*ntfyChannel).request(c.msg)
			if r.Method != http.MethodPost || r.URL != c.wantURL {
				t.Errorf("request %s %s, want POST %s", r.Method, r.URL, c.wantURL)
			}
			if got := r.Header.Get("Authorization"); got != c.wantAuth {
				t.Errorf("Authorization %q, want %q", got, c.wantAuth)
			}
			if got := r.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			if string(r.Body) != c.wantBody {
				t.Errorf("body\n got %s\nwant %s", r.Body, c.wantBody)
			}
		})
	}
	if got := clip(long, ntfyMaxMessage); len(got) > ntfyMaxMessage || !utf8.ValidString(got) {
		t.Errorf("clipped message is %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
	}
}

func TestWebhookRequest(t *testing.T) {
	at := time.Date(2026, 12, 2, 8, 41, 56, 0, time.FixedZone("CET", 3600))
	full := Message{
		Kind: Escalation, Priority: High,
		Title: "api-refactor needs you", Body: "Bash: rm -rf build/ — allow? <!channel> & @everyone",
		Tags: []string{"warning", "claude"}, ClickURL: "https://example.com/open?s=1",
		SessionID: "s1", SessionName: "api-refactor", Agent: "claude", Machine: "box",
		Cwd: "/home/me/api", State: "Interrupted", Reason: "stalled 12 min", Incident: "s1:2", At: at,
	}
	cases := []struct {
		name     string
		format   WebhookFormat
		msg      Message
		wantBody string
	}{
		{
			name:     "generic",
			format:   Generic,
			msg:      full,
			wantBody: `{"version":1,"kind":"escalation","priority":"high","title":"api-refactor needs you","text":"Bash: rm -rf build/ — allow? <!channel> & @everyone","tags":["warning","claude"],"click_url":"https://example.com/open?s=1","incident":"s1:2","session":{"id":"s1","name":"api-refactor","agent":"claude","machine":"box","cwd":"/home/me/api","state":"Interrupted","reason":"stalled 12 min"},"at":"2026-12-02T07:41:56Z"}`,
		},
		{
			name:     "generic summary without a session keeps every key",
			format:   Generic,
			msg:      Message{Kind: Summary, Title: "3 sessions need attention"},
			wantBody: `{"version":1,"kind":"summary","priority":"default","title":"3 sessions need attention","text":"","tags":[],"click_url":"","incident":"","session":{"id":"","name":"","agent":"","machine":"","cwd":"","state":"","reason":""},"at":""}`,
		},
		{
			name:     "slack escapes mrkdwn and links Open",
			format:   Slack,
			msg:      full,
			wantBody: `{"text":"*api-refactor needs you*\nBash: rm -rf build/ — allow? &lt;!channel&gt; &amp; @everyone\n<https://example.com/open?s=1|Open>"}`,
		},
		{
			name:     "discord mentions nobody",
			format:   Discord,
			msg:      full,
			wantBody: `{"content":"**api-refactor needs you**\nBash: rm -rf build/ — allow? <!channel> & @everyone\n<https://example.com/open?s=1>","allowed_mentions":{"parse":[]}}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := MustChannel(t, NewWebhook, WebhookConfig{URL: "https://hooks.example.com/services/T/B/X", Format: c.format}).(*webhookChannel)
			r := w.request(c.msg, at)
			if r.Method != http.MethodPost || r.URL != "https://hooks.example.com/services/T/B/X" {
				t.Errorf("request %s %s", r.Method, r.URL)
			}
			if string(r.Body) != c.wantBody {
				t.Errorf("body\n got %s\nwant %s", r.Body, c.wantBody)
			}
			if r.Header.Get(SignatureHeader) != "" || r.Header.Get(TimestampHeader) != "" {
				t.Errorf("unsigned webhook sent signature headers: %v", r.Header)
			}
		})
	}
}

func TestDiscordClipKeepsTitleAndLink(t *testing.T) {
	m := Message{Title: "title", Body: strings.Repeat("ж", 5000), ClickURL: "https://example.com/x"}
	got := discordText(m)
	if n := utf8.RuneCountInString(got); n > discordMax {
		t.Fatalf("content has %d characters, Discord takes %d", n, discordMax)
	}
	if !strings.HasPrefix(got, "**title**\n") || !strings.HasSuffix(got, "…\n<https://example.com/x>") {
		t.Errorf("clipped content lost its title or link: %q…%q", got[:20], got[len(got)-40:])
	}
	if n := utf8.RuneCountInString(slackText(Message{Body: strings.Repeat("x", 10000)})); n > slackMax {
		t.Errorf("slack text has %d characters, want ≤ %d", n, slackMax)
	}
}

func TestWebhookRequestSigned(t *testing.T) {
	now := time.Unix(1796200916, 0)
	for _, f := range []WebhookFormat{Generic, Slack, Discord} {
		w := MustChannel(t, NewWebhook, WebhookConfig{URL: "http://127.0.0.1:9/h", Format: f, Secret: "s3cret-value"}).(*webhookChannel)
		r := w.request(Message{Title: "t", Body: "b"}, now)
		if got := r.Header.Get(TimestampHeader); got != "1796200916" {
			t.Errorf("%s: timestamp header %q", f, got)
		}
		if err := Verify("s3cret-value", r.Header, r.Body, now, time.Minute); err != nil {
			t.Errorf("%s: own signature does not verify: %v", f, err)
		}
		if strings.Contains(r.Header.Get(SignatureHeader), "s3cret") {
			t.Errorf("%s: the signature header carries the secret", f)
		}
	}
}

func TestVerify(t *testing.T) {
	now := time.Unix(1796200916, 0)
	body := []byte(`{"version":1}`)
	signed := func(ts int64, b []byte, secret string) http.Header {
		h := http.Header{}
		h.Set(TimestampHeader, itoa(ts))
		h.Set(SignatureHeader, Sign(secret, ts, b))
		return h
	}
	// The known answer, computed independently:
	// printf '1796200916.{"version":1}' | openssl dgst -sha256 -hmac key
	if got, want := Sign("key", 1796200916, body), "sha256=23cffa0239fbdeb5813a82f1de64620bc283d343287f99937e2ce78c1dcaed33"; got != want {
		t.Errorf("Sign = %q, want %q", got, want)
	}
	cases := []struct {
		name   string
		header http.Header
		body   []byte
		secret string
		want   error
	}{
		{"valid", signed(now.Unix(), body, "key"), body, "key", nil},
		{"valid within skew", signed(now.Unix()-299, body, "key"), body, "key", nil},
		{"tampered body", signed(now.Unix(), body, "key"), []byte(`{"version":2}`), "key", ErrBadSignature},
		{"wrong secret", signed(now.Unix(), body, "other"), body, "key", ErrBadSignature},
		{"old timestamp", signed(now.Unix()-301, body, "key"), body, "key", ErrStale},
		{"future timestamp", signed(now.Unix()+301, body, "key"), body, "key", ErrStale},
		{"timestamp changed after signing", func() http.Header {
			h := signed(now.Unix()-10, body, "key")
			h.Set(TimestampHeader, itoa(now.Unix()))
			return h
		}(), body, "key", ErrBadSignature},
		{"no headers", http.Header{}, body, "key", ErrNoSignature},
		{"bad timestamp", func() http.Header {
			h := signed(now.Unix(), body, "key")
			h.Set(TimestampHeader, "yesterday")
			return h
		}(), body, "key", ErrBadTimestamp},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(c.secret, c.header, c.body, now, 5*time.Minute)
			if c.want == nil && err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
		})
	}
	if err := Verify("", signed(now.Unix(), body, ""), body, now, 0); err == nil {
		t.Error("Verify with no secret accepted a request")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestConstructorsRefuseAndKeepSecrets(t *testing.T) {
	cases := []struct {
		name    string
		make    func() error
		wantIn  string
		secrets []string
	}{
		{"ntfy ftp", func() error { _, err := NewNtfy(NtfyConfig{Server: "ftp://h", Topic: "t"}); return err }, "http", nil},
		{"ntfy no host", func() error { _, err := NewNtfy(NtfyConfig{Server: "https://", Topic: "t"}); return err }, "no host", nil},
		{"ntfy credentials in URL", func() error {
			_, err := NewNtfy(NtfyConfig{Server: "https://user:pa55word@ntfy.example.com", Topic: "t"})
			return err
		}, "https://ntfy.example.com", []string{"pa55word", "user"}},
		{"ntfy bad topic", func() error { _, err := NewNtfy(NtfyConfig{Topic: "my topic/secret"}); return err }, "topic", []string{"my topic/secret"}},
		{"ntfy reserved topic", func() error { _, err := NewNtfy(NtfyConfig{Topic: "Docs"}); return err }, "its own pages", nil},
		{"ntfy long topic", func() error { _, err := NewNtfy(NtfyConfig{Topic: strings.Repeat("a", 65)}); return err }, "64", nil},
		{"ntfy token with newline", func() error { _, err := NewNtfy(NtfyConfig{Topic: "t", Token: "tk_x\r\nX: y"}); return err }, "one line", []string{"tk_x"}},
		{"webhook http to a remote host", func() error {
			_, err := NewWebhook(WebhookConfig{URL: "http://hooks.slack.com/services/T1/B2/XXSECRET"})
			return err
		}, "http://hooks.slack.com must use https (plain http only to a loopback host", []string{"XXSECRET", "/services"}},
		{"webhook other scheme", func() error {
			_, err := NewWebhook(WebhookConfig{URL: "ftp://discord.com/api/webhooks/1/TOKEN"})
			return err
		}, "https", []string{"TOKEN", "/api"}},
		{"webhook unparsable", func() error {
			_, err := NewWebhook(WebhookConfig{URL: "https://discord.com/api/webhooks/1/TOKEN\x7f%zz"})
			return err
		}, "not a valid URL", []string{"TOKEN"}},
		{"webhook bad format", func() error {
			_, err := NewWebhook(WebhookConfig{URL: "https://h/x", Format: WebhookFormat(9)})
			return err
		}, "format", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.make()
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.wantIn) {
				t.Errorf("error %q does not say %q", err, c.wantIn)
			}
			for _, s := range c.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q shows %q", err, s)
				}
			}
		})
	}
	for _, ok := range []string{"http://127.0.0.1:8080/h", "http://localhost/h", "http://[::1]:1/h", "https://hooks.slack.com/services/T/B/X"} {
		if _, err := NewWebhook(WebhookConfig{URL: ok}); err != nil {
			t.Errorf("NewWebhook(%s): %v", ok, err)
		}
	}
}

func TestEnumsAndFormats(t *testing.T) {
	for k, want := range map[Kind]string{Escalation: "escalation", Waiting: "waiting", Summary: "summary", Test: "test", Kind(7): "kind(7)"} {
		if k.String() != want {
			t.Errorf("Kind %d = %q, want %q", int(k), k, want)
		}
	}
	for p, want := range map[Priority]string{Default: "default", High: "high", Urgent: "urgent", Priority(7): "priority(7)"} {
		if p.String() != want {
			t.Errorf("Priority %d = %q, want %q", int(p), p, want)
		}
	}
	for _, f := range []WebhookFormat{Generic, Slack, Discord} {
		got, err := ParseWebhookFormat(" " + strings.ToUpper(f.String()))
		if err != nil || got != f {
			t.Errorf("ParseWebhookFormat(%s) = %v, %v", f, got, err)
		}
	}
	if _, err := ParseWebhookFormat("teams"); err == nil || !strings.Contains(err.Error(), "generic, slack or discord") {
		t.Errorf("ParseWebhookFormat(teams) = %v, want an error listing the formats", err)
	}
}

func TestStatusErrorAndRedact(t *testing.T) {
	s := sender{secrets: secretsOf("tk_secret", "/services/T/B/X", "/")}
	cases := []struct {
		code      int
		body      string
		retry     bool
		wantIn    string
		wantNotIn string
	}{
		{401, `{"code":40101,"http":401,"error":"unauthorized"}`, false, "HTTP 401 Unauthorized (check the access token", ""},
		{404, "no_service", false, "does not exist", ""},
		{410, "", false, "does not exist", ""},
		{302, "", false, "redirected", ""},
		{408, "", true, "HTTP 408", ""},
		{429, "slow down", true, "slow down", ""},
		{500, "echo: Authorization: Bearer tk_secret POST /services/T/B/X\n\x1b[31mred", true, "[redacted]", "tk_secret"},
		{503, strings.Repeat("x", 1000), true, "…", strings.Repeat("x", maxErrBody+1)},
	}
	for _, c := range cases {
		got := s.redact(statusError(c.code, []byte(c.body)))
		if retryStatus(c.code) != c.retry {
			t.Errorf("retryStatus(%d) = %v", c.code, !c.retry)
		}
		if !strings.Contains(got, c.wantIn) {
			t.Errorf("%d: %q does not say %q", c.code, got, c.wantIn)
		}
		if c.wantNotIn != "" && strings.Contains(got, c.wantNotIn) {
			t.Errorf("%d: %q shows %q", c.code, got, c.wantNotIn)
		}
		if strings.ContainsAny(got, "\n\x1b") || strings.Contains(got, "/services/T/B/X") {
			t.Errorf("%d: %q has a control character or the URL path", c.code, got)
		}
	}
}
