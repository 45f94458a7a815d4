package push

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/enum"
)

// WebhookFormat is the body a webhook sends: what its receiver understands.
type WebhookFormat int

const (
	// Generic is the versioned JSON object documented at WebhookBody.
	Generic WebhookFormat = iota
	// Slack is a Slack incoming webhook's {"text": …}.
	Slack
	// Discord is a Discord webhook's {"content": …}.
	Discord
)

var webhookFormatNames = [...]string{Generic: "generic", Slack: "slack", Discord: "discord"}

// String is the format's name in settings.
func (f WebhookFormat) String() string { return enum.Name(f, "format", webhookFormatNames[:]) }

// ParseWebhookFormat reads a format's name as String writes it (any case).
func ParseWebhookFormat(s string) (WebhookFormat, error) {
	for _, f := range []WebhookFormat{Generic, Slack, Discord} {
		if strings.EqualFold(strings.TrimSpace(s), f.String()) {
			return f, nil
		}
	}
	return 0, fmt.Errorf("unknown webhook format %q: want generic, slack or discord", s)
}

// WebhookConfig configures a webhook channel.
type WebhookConfig struct {
	// URL receives the POST. It is a secret: Slack and Discord webhook URLs
	// are their own credential, so errors and receipts show only its scheme
	// and host.
	URL    string
	Format WebhookFormat
	// Secret, when set, signs every request (see WebhookBody and Verify).
	Secret string
	// Client sends the requests; nil for one that follows no redirect.
	Client *http.Client
	// Timeout bounds one Send; 0 for DefaultTimeout.
	Timeout time.Duration
}

// Header names of the signature.
const (
	TimestampHeader = "X-Session-Supervisor-Timestamp"
	SignatureHeader = "X-Session-Supervisor-Signature"
)

// WebhookVersion is the generic body's version.
const WebhookVersion = 1

// WebhookBody is the generic webhook body, version 1; receivers in Go can
// decode into it. The webhook's body formats, as a receiver sees them:
//
// Every request is an HTTPS POST of a JSON object with
// "Content-Type: application/json". The format is chosen per webhook:
//
// generic (version 1) — for a receiver of your own. Every key is always
// present (an empty string when unknown); new keys may be added within
// version 1, a key is only removed or changed in meaning with a new version:
//
//	{
//	  "version": 1,
//	  "kind": "escalation",      // escalation | waiting | summary | test
//	  "priority": "high",        // default | high | urgent
//	  "title": "api-refactor needs you",
//	  "text": "Stalled 12 min, nudged twice, interrupted once. Bash: rm -rf build/ — allow?",
//	  "tags": ["warning", "claude"],
//	  "click_url": "",           // an Open link when one is configured, never an approval
//	  "incident": "3f2a…:2",     // stable per incident: de-duplicate retries on it
//	  "session": {
//	    "id": "3f2a…", "name": "api-refactor", "agent": "claude",
//	    "machine": "build-box", "cwd": "/home/me/src/api",
//	    "state": "Interrupted", "reason": "stalled 12 min after a tool call"
//	  },
//	  "at": "2026-12-02T08:41:56Z" // when the supervisor decided it (RFC 3339, UTC)
//	}
//
// slack — a Slack incoming webhook: {"text": "*title*\nlines…\n<url|Open>"}
// in Slack's mrkdwn, with &, < and > escaped as Slack asks so that no text
// from a session can mention @channel or forge a link.
//
// discord — a Discord webhook: {"content": "**title**\nlines…\n<url>",
// "allowed_mentions": {"parse": []}}, clipped to Discord's 2000 characters;
// allowed_mentions keeps an "@everyone" in a session's text from pinging
// anyone.
//
// Signature. When the webhook has a secret, every request (any format)
// carries two headers:
//
//	X-Session-Supervisor-Timestamp: 1796200916
//	X-Session-Supervisor-Signature: sha256=<hex of HMAC-SHA256(secret, timestamp + "." + body)>
//
// where timestamp is the header's value (Unix seconds) and body the request
// body's exact bytes. A receiver recomputes the HMAC, compares it in constant
// time, and refuses a timestamp more than a few minutes from its clock, which
// stops a captured request from being replayed later. Verify does all three.
type WebhookBody struct {
	Version  int            `json:"version"`
	Kind     string         `json:"kind"`
	Priority string         `json:"priority"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	Tags     []string       `json:"tags"`
	ClickURL string         `json:"click_url"`
	Incident string         `json:"incident"`
	Session  WebhookSession `json:"session"`
	At       string         `json:"at"`
}

// WebhookSession is the session a generic body is about.
type WebhookSession struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Agent   string `json:"agent"`
	Machine string `json:"machine"`
	Cwd     string `json:"cwd"`
	State   string `json:"state"`
	Reason  string `json:"reason"`
}

// SlackBody is the Slack format's body.
type SlackBody struct {
	Text string `json:"text"`
}

// DiscordBody is the Discord format's body.
type DiscordBody struct {
	Content         string          `json:"content"`
	AllowedMentions DiscordMentions `json:"allowed_mentions"`
}

// DiscordMentions is Discord's allowed_mentions; an empty Parse allows none.
type DiscordMentions struct {
	Parse []string `json:"parse"`
}

// Limits of the chat services' text, in characters.
const (
	discordMax = 2000
	// slackMax is well under Slack's 40,000: Slack advises keeping a
	// message's text to about 4,000 characters, and longer ones are cut.
	slackMax = 3900
)

// webhookChannel posts to one webhook URL.
type webhookChannel struct {
	url    string
	format WebhookFormat
	secret string
	sender
}

// NewWebhook returns a channel posting to c.URL in c.Format. The URL must be
// https; plain http is accepted only to a loopback host (a receiver on the
// same machine, or a test), because the body and signature would otherwise
// cross the network readable. Its errors name the URL by scheme and host only.
func NewWebhook(c WebhookConfig) (Channel, error) {
	raw := strings.TrimSpace(c.URL)
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return nil, errors.New("webhook URL is not a valid URL")
	}
	if u.Host == "" {
		return nil, errors.New("webhook URL has no host")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback(u.Hostname()) {
			return nil, fmt.Errorf("webhook URL %s must use https (plain http only to a loopback host such as 127.0.0.1, for a local receiver or tests)", hostOnly(u))
		}
	default:
		return nil, fmt.Errorf("webhook URL %s must use https", hostOnly(u))
	}
	if c.Format < Generic || c.Format > Discord {
		return nil, fmt.Errorf("unknown webhook format %d", int(c.Format))
	}
	client := c.Client
	if client == nil {
		client = newClient()
	}
	secrets := []string{raw}
	if u.Path != "/" {
		secrets = append(secrets, u.EscapedPath(), u.Path)
	}
	secrets = append(secrets, u.RawQuery, c.Secret)
	if p, ok := u.User.Password(); ok {
		secrets = append(secrets, p)
	}
	return &webhookChannel{
		url:    raw,
		format: c.Format,
		secret: c.Secret,
		sender: sender{
			name:    "webhook",
			client:  client,
			timeout: timeoutOr(c.Timeout),
			secrets: secretsOf(secrets...),
		},
	}, nil
}

// loopback is whether host names this machine: "localhost" or a loopback IP.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (w *webhookChannel) Name() string { return "webhook" }

// Send posts m once.
func (w *webhookChannel) Send(ctx context.Context, m Message) Receipt {
	return w.do(ctx, w.request(m, time.Now()))
}

// request builds the POST for m, signed at now when there is a secret: pure,
// so the tests compare it.
func (w *webhookChannel) request(m Message, now time.Time) request {
	body := webhookBody(w.format, m)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	if w.secret != "" {
		ts := now.Unix()
		h.Set(TimestampHeader, strconv.FormatInt(ts, 10))
		h.Set(SignatureHeader, Sign(w.secret, ts, body))
	}
	return request{Method: http.MethodPost, URL: w.url, Header: h, Body: body}
}

// webhookBody is m encoded in format f.
func webhookBody(f WebhookFormat, m Message) []byte {
	switch f {
	case Slack:
		return marshal(SlackBody{Text: slackText(m)})
	case Discord:
		return marshal(DiscordBody{Content: discordText(m), AllowedMentions: DiscordMentions{Parse: []string{}}})
	}
	return marshal(genericBody(m))
}

// genericBody is m as the generic format's object.
func genericBody(m Message) WebhookBody {
	tags := cleanTags(m.Tags)
	if tags == nil {
		tags = []string{} // always an array: receivers need not test for null
	}
	at := ""
	if !m.At.IsZero() {
		at = m.At.UTC().Format(time.RFC3339)
	}
	return WebhookBody{
		Version:  WebhookVersion,
		Kind:     m.Kind.String(),
		Priority: m.Priority.String(),
		Title:    m.Title,
		Text:     m.Body,
		Tags:     tags,
		ClickURL: m.ClickURL,
		Incident: m.Incident,
		Session: WebhookSession{
			ID: m.SessionID, Name: m.SessionName, Agent: m.Agent, Machine: m.Machine,
			Cwd: m.Cwd, State: m.State, Reason: m.Reason,
		},
		At: at,
	}
}

// slackEscape escapes what Slack's mrkdwn gives a meaning to: < and > open
// links and mentions (<!channel>), & starts an entity.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// slackText is the title in bold, the body, and an Open link; the body is
// what gets clipped, so the title and the link always arrive.
func slackText(m Message) string {
	head := ""
	if t := strings.TrimSpace(m.Title); t != "" {
		head = "*" + slackEscape.Replace(t) + "*"
	}
	tail := ""
	if m.ClickURL != "" {
		tail = "<" + slackEscape.Replace(m.ClickURL) + "|Open>"
	}
	return joinClipped(head, slackEscape.Replace(m.Body), tail, slackMax)
}

// discordText is the title in bold, the body, and the click URL in angle
// brackets (no preview card), within Discord's 2000 characters.
func discordText(m Message) string {
	head := ""
	if t := strings.TrimSpace(m.Title); t != "" {
		head = "**" + t + "**"
	}
	tail := ""
	if m.ClickURL != "" {
		tail = "<" + m.ClickURL + ">"
	}
	return joinClipped(head, m.Body, tail, discordMax)
}

// joinClipped joins head, body and tail on new lines in at most max
// characters, clipping the body first and then, only if still too long, the
// whole.
func joinClipped(head, body, tail string, max int) string {
	var parts []string
	fixed := 0
	for _, p := range []string{head, tail} {
		if p != "" {
			fixed += len([]rune(p)) + 1
		}
	}
	if body != "" {
		room := max - fixed
		if room < 1 {
			room = 1
		}
		body = clipRunes(body, room)
	}
	for _, p := range []string{head, body, tail} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return clipRunes(strings.Join(parts, "\n"), max)
}

// Sign is the signature header's value for body sent at timestamp (Unix
// seconds): "sha256=" and the hex HMAC-SHA256 of "timestamp.body" keyed by
// secret. Binding the timestamp into the MAC is what makes a replayed
// request detectable.
func Sign(secret string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte("."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// DefaultMaxSkew is the clock difference Verify accepts when given none.
const DefaultMaxSkew = 5 * time.Minute

// Errors Verify returns (wrapped): a receiver may answer each differently,
// for example 401 for all of them and a log line naming which.
var (
	ErrNoSignature  = errors.New("no signature headers")
	ErrBadTimestamp = errors.New("timestamp header is not Unix seconds")
	ErrStale        = errors.New("timestamp too far from now")
	ErrBadSignature = errors.New("signature does not match")
)

// Verify checks a signed webhook request as a receiver must: both headers
// present, the timestamp within maxSkew of now (0 for DefaultMaxSkew) so an
// old request cannot be replayed, and the signature equal, compared in
// constant time, to Sign's over the exact body received.
func Verify(secret string, header http.Header, body []byte, now time.Time, maxSkew time.Duration) error {
	if secret == "" {
		return errors.New("verify webhook: no secret configured")
	}
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	tsText, sig := header.Get(TimestampHeader), header.Get(SignatureHeader)
	if tsText == "" || sig == "" {
		return fmt.Errorf("verify webhook: %w", ErrNoSignature)
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("verify webhook: %w", ErrBadTimestamp)
	}
	skew := now.Sub(time.Unix(ts, 0))
	if skew > maxSkew || skew < -maxSkew {
		return fmt.Errorf("verify webhook: %w (%s, limit %s)", ErrStale, skew.Round(time.Second), maxSkew)
	}
	if !hmac.Equal([]byte(sig), []byte(Sign(secret, ts, body))) {
		return fmt.Errorf("verify webhook: %w", ErrBadSignature)
	}
	return nil
}
