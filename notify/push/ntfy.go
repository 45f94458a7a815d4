package push

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// DefaultNtfyServer is the public ntfy server, used when none is configured.
const DefaultNtfyServer = "https://ntfy.sh"

// NtfyConfig configures an ntfy channel.
type NtfyConfig struct {
	// Server is the ntfy server's base URL: the public one (the default) or
	// a self-hosted one, possibly under a path ("https://example.com/ntfy").
	Server string
	// Topic is what the phone subscribes to. On a server without access
	// control the topic is the password: pick one nobody guesses.
	Topic string
	// Token is an ntfy access token ("tk_…"), sent as a bearer token; empty
	// for a topic anyone may publish to.
	Token string
	// Client sends the requests; nil for one that follows no redirect.
	Client *http.Client
	// Timeout bounds one Send; 0 for DefaultTimeout.
	Timeout time.Duration
}

// ntfyTopic is ntfy's own rule for a topic name.
var ntfyTopic = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

// ntfyReserved are topic names an ntfy server refuses ("invalid topic"):
// they are paths of its web app and API.
var ntfyReserved = map[string]bool{
	"docs": true, "static": true, "file": true, "app": true, "metrics": true,
	"account": true, "settings": true, "signup": true, "login": true, "v1": true,
}

// ntfyMaxMessage is ntfy's message limit in bytes: a longer message is turned
// into an attachment, which a phone shows as a file instead of the text.
const ntfyMaxMessage = 4096

// ntfyMaxTitle keeps a title to what fits a notification's first line.
const ntfyMaxTitle = 250

// ntfyChannel publishes to one topic of one ntfy server.
type ntfyChannel struct {
	root  string // the server's URL with one trailing slash: where JSON is published
	topic string
	token string
	sender
}

// NewNtfy returns a channel publishing to c.Topic on c.Server. It refuses a
// server that is not an http(s) URL, one with credentials in it (use Token)
// and a topic ntfy would refuse. Its errors name the server by scheme and
// host only and never repeat the token or the topic.
func NewNtfy(c NtfyConfig) (Channel, error) {
	server := strings.TrimSpace(c.Server)
	if server == "" {
		server = DefaultNtfyServer
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, errors.New("ntfy server is not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("ntfy server must be an http:// or https:// URL")
	}
	if u.Host == "" {
		return nil, errors.New("ntfy server URL has no host")
	}
	if u.User != nil {
		return nil, fmt.Errorf("ntfy server URL %s must not hold credentials: set the access token instead", hostOnly(u))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("ntfy server URL %s must have no query or fragment", hostOnly(u))
	}
	if !ntfyTopic.MatchString(c.Topic) {
		return nil, errors.New("ntfy topic must be 1 to 64 letters, digits, '-' or '_'")
	}
	if ntfyReserved[strings.ToLower(c.Topic)] {
		return nil, errors.New("ntfy topic is a name the ntfy server keeps for its own pages: pick another")
	}
	if strings.ContainsAny(c.Token, "\r\n") {
		return nil, errors.New("ntfy access token must be one line")
	}
	client := c.Client
	if client == nil {
		client = newClient()
	}
	root := strings.TrimRight(u.String(), "/") + "/"
	return &ntfyChannel{
		root:  root,
		topic: c.Topic,
		token: c.Token,
		sender: sender{
			name:    "ntfy",
			client:  client,
			timeout: timeoutOr(c.Timeout),
			secrets: secretsOf(c.Token),
		},
	}, nil
}

func (n *ntfyChannel) Name() string { return "ntfy" }

// Send publishes m as one ntfy message.
func (n *ntfyChannel) Send(ctx context.Context, m Message) Receipt {
	return n.do(ctx, n.request(m))
}

// ntfyPublish is ntfy's "publish as JSON" body. JSON keeps a non-ASCII title
// intact, which the Title header of a plain publish would not.
type ntfyPublish struct {
	Topic    string   `json:"topic"`
	Message  string   `json:"message"`
	Title    string   `json:"title,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Priority int      `json:"priority"`
	Click    string   `json:"click,omitempty"`
}

// ntfyPriority maps a priority to ntfy's scale (1 min … 5 max); the low end
// is never used: what the supervisor pushes is worth a sound.
func ntfyPriority(p Priority) int {
	switch p {
	case High:
		return 4
	case Urgent:
		return 5
	}
	return 3
}

// request builds the publish request for m: pure, so the tests compare it.
func (n *ntfyChannel) request(m Message) request {
	body := m.Body
	if strings.TrimSpace(body) == "" {
		// An empty message reads "triggered" on the phone; the title says more.
		body = m.Title
	}
	p := ntfyPublish{
		Topic:    n.topic,
		Message:  clip(body, ntfyMaxMessage),
		Title:    clip(m.Title, ntfyMaxTitle),
		Tags:     cleanTags(m.Tags),
		Priority: ntfyPriority(m.Priority),
		Click:    m.ClickURL,
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	if n.token != "" {
		h.Set("Authorization", "Bearer "+n.token)
	}
	return request{Method: http.MethodPost, URL: n.root, Header: h, Body: marshal(p)}
}

// userAgent names the app to the servers it posts to.
const userAgent = "session-supervisor"

// cleanTags drops empty tags and commas (ntfy's header form splits on them),
// so the JSON and header forms of a publish mean the same.
func cleanTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		t = strings.TrimSpace(strings.ReplaceAll(t, ",", " "))
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// marshal encodes v without escaping <, > and & (the text is not HTML, and a
// receiver's log should read as sent). v is always one of this package's
// body types, which cannot fail to encode.
func marshal(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		panic(fmt.Sprintf("push: encoding %T: %v", v, err))
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// secretsOf lists the non-trivial secrets a receipt must never show. Very
// short values are left out: replacing "/" or "a" everywhere would garble
// the text without protecting anything.
func secretsOf(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if len(s) >= 4 {
			out = append(out, s)
		}
	}
	return out
}
