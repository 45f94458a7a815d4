// Package push sends one message through one push channel: an ntfy topic or
// a webhook (a generic JSON receiver, a Slack or a Discord incoming webhook).
//
// It is the part of the away-from-the-desk escalation that talks to the
// network, and nothing else: deciding when to send, de-duplicating per
// incident, retrying with backoff and quiet hours belong to the caller. A
// channel makes one attempt per Send and reports it as a Receipt, which the
// caller writes to the timeline and uses to decide whether a retry is worth
// it.
//
// Building a request (method, URL, headers, body) is a pure function of the
// channel's configuration and the message, tested on its own; Send only does
// the HTTP. Every text that leaves the package through a Receipt or an error
// is free of the channel's secrets: the ntfy token, the webhook's signing
// secret and the webhook URL's path and query (a Slack or Discord webhook URL
// is itself the credential), so receipts can be stored and shown as they are.
package push

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/session-supervisor/session-supervisor/enum"
)

// Kind is what a message is about. Receivers see it in the generic webhook
// body, so they can route or mute kinds without parsing the text.
type Kind int

const (
	// Escalation: a session needs the user; nothing automatic is left.
	Escalation Kind = iota
	// Waiting: a session finished its turn or asks a question (off by default).
	Waiting
	// Summary: several sessions at once ("3 sessions need attention"), or
	// what quiet hours held back.
	Summary
	// Test: a sample sent by `notify test` or the Settings' "Send test".
	Test
)

var kindNames = [...]string{
	Escalation: "escalation",
	Waiting:    "waiting",
	Summary:    "summary",
	Test:       "test",
}

// String is the word used on the wire (the generic body's "kind").
func (k Kind) String() string { return enum.Name(k, "kind", kindNames[:]) }

// Priority is how loudly the phone should ring. ntfy maps it to its 1–5
// scale; the generic webhook body carries the word.
type Priority int

const (
	// Default rings as any notification does.
	Default Priority = iota
	// High is for what needs the user soon (an escalation).
	High
	// Urgent is for what should break through (ntfy's "max": long vibration,
	// pop-over on Android).
	Urgent
)

var priorityNames = [...]string{Default: "default", High: "high", Urgent: "urgent"}

// String is the word used on the wire (the generic body's "priority").
func (p Priority) String() string { return enum.Name(p, "priority", priorityNames[:]) }

// Message is what a channel sends. Every text field has already passed the
// app's sanitizer (sessions.SanitizeMessage) before it gets here; channels do
// not add secrets, and they only clip to what each service accepts.
type Message struct {
	Kind     Kind
	Priority Priority
	Title    string   // "api-refactor needs you"
	Body     string   // the lines of the notification
	Tags     []string // short words, e.g. "warning", "claude" (ntfy maps some to emoji)
	// ClickURL is opened when the notification is tapped: an Open link,
	// never a link that approves anything (a push channel must not be a way
	// to answer a permission request).
	ClickURL string
	// The session it is about, for the generic webhook body.
	SessionID, SessionName, Agent, Machine, Cwd, State, Reason string
	// Incident is a stable id of the incident (the session id and its
	// escalation generation): a receiver uses it to de-duplicate retries.
	Incident string
	At       time.Time
}

// Receipt is the outcome of one delivery attempt; it becomes a timeline row.
type Receipt struct {
	Channel string // "ntfy", "webhook"
	OK      bool
	Status  int // HTTP status, 0 when none came
	// Err says why it failed, short and safe to show and store: never the
	// token, the secret or the webhook URL's path, and at most about 200
	// bytes of what the server answered.
	Err string
	// Retry is whether trying again later may succeed: a refused or reset
	// connection, a timeout, 408, 429 or a 5xx. A 4xx is a configuration
	// error (a wrong token, a deleted webhook) that retrying only repeats.
	Retry bool
}

// Channel sends one message through one push service. A channel holds no
// state between sends, so Send may be called from several goroutines (one
// per incident's retry, say).
type Channel interface {
	// Name is the receipt's channel ("ntfy", "webhook").
	Name() string
	// Send makes one attempt. It returns when the service answered, or at
	// the channel's timeout (default 10 s) or ctx's end, whichever is first,
	// so a dead server never holds up the caller or another channel.
	Send(ctx context.Context, m Message) Receipt
}

// DefaultTimeout bounds one Send when the configuration sets none: long
// enough for a slow phone-push relay, short enough that a hung server does
// not hold a retry queue for long.
const DefaultTimeout = 10 * time.Second

// maxErrBody is how much of a failed response's body a receipt keeps: enough
// for ntfy's JSON error or Slack's "invalid_token", not a proxy's HTML page.
const maxErrBody = 200

// request is a built HTTP request, before any I/O: what the pure builders
// return and the tests compare.
type request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
}

// newClient is the client a channel uses when its configuration gives none.
// It follows no redirect: a POST turned into a GET by a 301 would be
// reported as delivered, and a redirect to another host would be a surprise
// destination for a signed body.
func newClient() *http.Client {
	return &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// sender is the I/O half every channel shares: one attempt of a built
// request, turned into a receipt with its secrets removed.
type sender struct {
	name    string
	client  *http.Client
	timeout time.Duration
	// secrets are removed from every receipt text (tokens, the webhook URL's
	// path and the URL itself), in case a server or a transport echoes them.
	secrets []string
}

// do sends r once, bounded by s.timeout and ctx.
func (s sender) do(ctx context.Context, r request) Receipt {
	rc := Receipt{Channel: s.name}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		// Only reachable with a configuration the constructors refused;
		// the error would carry the URL, so it is not passed on.
		rc.Err = "cannot build the request"
		return rc
	}
	req.Header = r.Header.Clone()
	resp, err := s.client.Do(req)
	if err != nil {
		rc.Err, rc.Retry = transportError(ctx, err, time.Since(start))
		rc.Err = s.redact(oneLine(rc.Err))
		return rc
	}
	defer resp.Body.Close()
	rc.Status = resp.StatusCode
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		rc.OK = true
		// Drain a little so the connection can be reused; ignore the rest.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return rc
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 4*maxErrBody))
	rc.Retry = retryStatus(resp.StatusCode)
	rc.Err = s.redact(statusError(resp.StatusCode, head))
	return rc
}

// transportError words an error that came before any HTTP status, and says
// whether it is worth retrying. The *url.Error around it is dropped: its text
// holds the whole URL, which for a webhook is the secret.
func transportError(ctx context.Context, err error, waited time.Duration) (string, bool) {
	if ctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
		// The channel's timeout or the caller's deadline, whichever came
		// first: the time waited says which without naming either.
		return fmt.Sprintf("no answer within %s", waited.Round(time.Millisecond)), true
	}
	if errors.Is(err, context.Canceled) {
		// The caller gave up (the app is quitting): the message was not
		// refused, so it may be sent again.
		return "canceled", true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		// "dial tcp 127.0.0.1:9: connect: connection refused": the host and
		// port are not secret, and say which server did not answer.
		return clip(op.Error(), maxErrBody), true
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		// A self-signed or expired certificate does not fix itself: the
		// user must install the CA or correct the server's name.
		return clip("TLS certificate not trusted: "+cert.Err.Error(), maxErrBody), false
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		// Retried even when the name "does not exist": a laptop away from
		// its network says so for every name, and the caller's retry
		// window bounds what a misspelt host costs.
		return clip("cannot resolve "+dns.Name+": "+dns.Err, maxErrBody), true
	}
	// A TLS failure, a reset, an EOF: possibly a passing network problem.
	return clip(err.Error(), maxErrBody), true
}

// retryStatus is whether an HTTP status is worth a retry.
func retryStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// statusError words a non-2xx answer: the status, a hint for the statuses a
// user can fix, and the start of the body (ntfy and Slack say why in it).
func statusError(code int, body []byte) string {
	msg := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg += " (check the access token or the URL)"
	case http.StatusNotFound, http.StatusGone:
		msg += " (the URL or topic does not exist)"
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		msg += " (redirected: configure the final URL)"
	}
	if t := oneLine(string(body)); t != "" {
		msg += ": " + clip(t, maxErrBody)
	}
	return msg
}

// redact removes every configured secret from s. It runs on every receipt
// text: the texts are built without secrets, and this keeps it so when a
// server echoes a request line or a token back in its error.
func (s sender) redact(t string) string {
	for _, sec := range s.secrets {
		if sec != "" {
			t = strings.ReplaceAll(t, sec, "[redacted]")
		}
	}
	return t
}

// oneLine turns a response body into one printable line: control characters
// (a server's newlines, an escape sequence) become spaces, runs of spaces one.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// clipRunes shortens s to at most n runes, marking the cut: Discord and Slack
// count characters, not bytes.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// hostOnly is what an error may say of a URL: its scheme and host, never the
// user info, path or query (where webhook and ntfy credentials live).
func hostOnly(u *url.URL) string {
	return u.Scheme + "://" + u.Host
}

// timeoutOr is t, or DefaultTimeout when t is not positive.
func timeoutOr(t time.Duration) time.Duration {
	if t <= 0 {
		return DefaultTimeout
	}
	return t
}
