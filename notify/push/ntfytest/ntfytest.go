// Package ntfytest is an ntfy server on 127.0.0.1 for tests: the parts of
// ntfy's HTTP API a publisher and a phone use, implemented from ntfy's
// documentation (docs.ntfy.sh: "Publishing", "Subscribe via API", "Access
// control").
//
// The real server cannot be built here: its Go module (heckel.io/ntfy/v2) is
// refused by the module proxy and no distribution packages it. So this
// server speaks the same protocol, and tests observe it the way a phone
// does: subscribed to the topic's JSON stream over HTTP (Subscribe), never
// by reading the server's memory.
//
// What it implements:
//   - publish as JSON: POST or PUT to the root, {"topic", "message", "title",
//     "tags", "priority", "click"};
//   - publish to a topic: POST or PUT /{topic} with the message as the body
//     and Title, Priority, Tags and Click headers (and their X- forms);
//   - subscribe: GET /{topic}/json, newline-delimited JSON events: "open"
//     first, then "message" events (cached ones first with ?since=all, an id
//     or a Unix time) and "keepalive" events; ?poll=1 answers the cached
//     messages and closes;
//   - access control: with a token configured, anonymous requests get 403
//     and an unknown token 401, as ntfy answers with auth-default-access
//     deny-all; a read-only token may subscribe but not publish (403);
//   - failures for retry tests: an HTTP status for every publish, publishes
//     that never answer, and a server that stops listening.
package ntfytest

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Event is one line of ntfy's JSON stream, as ntfy encodes it.
type Event struct {
	ID       string   `json:"id"`
	Time     int64    `json:"time"`
	Expires  int64    `json:"expires,omitempty"`
	Event    string   `json:"event"` // "open", "message", "keepalive"
	Topic    string   `json:"topic"`
	Message  string   `json:"message,omitempty"`
	Title    string   `json:"title,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Priority int      `json:"priority,omitempty"`
	Click    string   `json:"click,omitempty"`
}

// Options configures a server.
type Options struct {
	// Token, when set, is an access token with read and write access, and
	// the topics deny anonymous access.
	Token string
	// ReadOnlyToken, when set, may subscribe but not publish.
	ReadOnlyToken string
	// Keepalive is how often a subscription gets a "keepalive" event; 0 for
	// ntfy's default, 45 s.
	Keepalive time.Duration
}

// Server is a running test server. Its URL is the base URL a channel is
// configured with.
type Server struct {
	URL string

	opts    Options
	srv     *httptest.Server
	closing chan struct{}
	once    sync.Once

	mu       sync.Mutex
	cache    map[string][]Event             // topic → messages, oldest first
	subs     map[string]map[chan Event]bool // topic → live subscriptions
	status   int                            // answer to every publish when not 0
	hang     bool                           // publishes never answer
	attempts int                            // publish requests received
}

// Start runs a server on 127.0.0.1 until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.Keepalive <= 0 {
		o.Keepalive = 45 * time.Second
	}
	s := &Server{
		opts:    o,
		closing: make(chan struct{}),
		cache:   map[string][]Event{},
		subs:    map[string]map[chan Event]bool{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, ending subscriptions and hung publishes.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.srv.Close()
	})
}

// FailWith makes every publish answer status (with ntfy's JSON error body),
// as a server behind a failing proxy or over its rate limit does; 0 serves
// again. Subscriptions are not affected.
func (s *Server) FailWith(status int) {
	s.mu.Lock()
	s.status = status
	s.mu.Unlock()
}

// Hang makes publishes never answer (until the client gives up or the server
// closes), or answer again.
func (s *Server) Hang(on bool) {
	s.mu.Lock()
	s.hang = on
	s.mu.Unlock()
}

// Refuse stops listening and drops every connection, subscriptions too: a
// server that went down. New connections are refused; it cannot be undone.
func (s *Server) Refuse() {
	s.srv.Listener.Close()
	s.srv.CloseClientConnections()
}

// Attempts is how many publish requests arrived, answered or not: what a
// retry test counts (what was delivered is read from a subscription).
func (s *Server) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// topicRE is ntfy's rule for a topic name.
var topicRE = regexp.MustCompile(`^[-_A-Za-z0-9]{1,64}$`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(r.URL.Path, "/")
	switch {
	case path == "" && (r.Method == http.MethodPost || r.Method == http.MethodPut):
		s.publish(w, r, "")
	case topicRE.MatchString(path) && (r.Method == http.MethodPost || r.Method == http.MethodPut):
		s.publish(w, r, path)
	case strings.HasSuffix(path, "/json") && topicRE.MatchString(strings.TrimSuffix(path, "/json")) && r.Method == http.MethodGet:
		s.subscribe(w, r, strings.TrimSuffix(path, "/json"))
	default:
		writeError(w, http.StatusNotFound, 40401, "page not found")
	}
}

// access is what a request's credentials allow.
type access int

const (
	anonymous access = iota
	readOnly
	readWrite
	invalid
)

// authorize reads the request's token: "Authorization: Bearer tk_…", or
// Basic with an empty user and the token as password, both as ntfy accepts.
func (s *Server) authorize(r *http.Request) access {
	h := r.Header.Get("Authorization")
	if h == "" {
		if s.opts.Token == "" && s.opts.ReadOnlyToken == "" {
			return readWrite // no access control: everyone may do everything
		}
		return anonymous
	}
	var token string
	switch {
	case strings.HasPrefix(h, "Bearer "):
		token = strings.TrimPrefix(h, "Bearer ")
	case strings.HasPrefix(h, "Basic "):
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h, "Basic "))
		if err != nil {
			return invalid
		}
		user, pass, _ := strings.Cut(string(raw), ":")
		if user != "" {
			return invalid // users with passwords are not configured here
		}
		token = pass
	default:
		return invalid
	}
	switch {
	case token != "" && token == s.opts.Token:
		return readWrite
	case token != "" && token == s.opts.ReadOnlyToken:
		return readOnly
	}
	return invalid
}

// refuse answers as ntfy does to a request its credentials do not allow:
// 401 for credentials it does not know, 403 for anonymous or too little
// access. It reports whether it answered.
func refuse(w http.ResponseWriter, a access, write bool) bool {
	switch {
	case a == invalid:
		writeError(w, http.StatusUnauthorized, 40101, "unauthorized")
	case a == anonymous, write && a == readOnly:
		writeError(w, http.StatusForbidden, 40301, "forbidden")
	default:
		return false
	}
	return true
}

// writeError writes ntfy's JSON error body.
func writeError(w http.ResponseWriter, status, code int, text string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"code":%d,"http":%d,"error":%q}`+"\n", code, status, text)
}

// jsonPublish is ntfy's "publish as JSON" body (the fields this server keeps).
type jsonPublish struct {
	Topic    string   `json:"topic"`
	Message  string   `json:"message"`
	Title    string   `json:"title"`
	Tags     []string `json:"tags"`
	Priority int      `json:"priority"`
	Click    string   `json:"click"`
}

func (s *Server) publish(w http.ResponseWriter, r *http.Request, topic string) {
	s.mu.Lock()
	s.attempts++
	status, hang := s.status, s.hang
	s.mu.Unlock()
	if hang {
		// Read the request first, as a server stuck behind it would have:
		// net/http notices the client hanging up only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	}
	if status != 0 {
		writeError(w, status, status*100, strings.ToLower(http.StatusText(status)))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, 40000, "cannot read body")
		return
	}
	m := Event{Event: "message"}
	if topic == "" {
		var p jsonPublish
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&p); err != nil || !topicRE.MatchString(p.Topic) {
			writeError(w, http.StatusBadRequest, 40017, "invalid request: request body must be message JSON")
			return
		}
		if p.Priority < 0 || p.Priority > 5 {
			writeError(w, http.StatusBadRequest, 40007, "invalid priority")
			return
		}
		m.Topic, m.Message, m.Title, m.Tags, m.Priority, m.Click = p.Topic, p.Message, p.Title, p.Tags, p.Priority, p.Click
	} else {
		prio, ok := parsePriority(header(r, "X-Priority", "Priority", "prio", "p"))
		if !ok {
			writeError(w, http.StatusBadRequest, 40007, "invalid priority")
			return
		}
		m.Topic, m.Message, m.Priority = topic, string(body), prio
		m.Title = header(r, "X-Title", "Title", "t")
		m.Click = header(r, "X-Click", "Click")
		for _, t := range strings.Split(header(r, "X-Tags", "Tags", "Tag", "ta"), ",") {
			if t = strings.TrimSpace(t); t != "" {
				m.Tags = append(m.Tags, t)
			}
		}
	}
	if refuse(w, s.authorize(r), true) {
		return
	}
	if m.Message == "" {
		m.Message = "triggered" // ntfy's text for an empty message
	}
	now := time.Now()
	m.ID, m.Time, m.Expires = newID(), now.Unix(), now.Add(12*time.Hour).Unix()

	s.mu.Lock()
	s.cache[m.Topic] = append(s.cache[m.Topic], m)
	for ch := range s.subs[m.Topic] {
		select {
		case ch <- m:
		default: // a subscriber that does not read loses messages, as on ntfy
		}
	}
	s.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}

// header is the first of names set on r (ntfy accepts several spellings).
func header(r *http.Request, names ...string) string {
	for _, n := range names {
		if v := r.Header.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// parsePriority reads a Priority header as ntfy does: 1–5 or a name.
func parsePriority(v string) (int, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "":
		return 0, true
	case "1", "min":
		return 1, true
	case "2", "low":
		return 2, true
	case "3", "default":
		return 3, true
	case "4", "high":
		return 4, true
	case "5", "max", "urgent":
		return 5, true
	}
	return 0, false
}

func (s *Server) subscribe(w http.ResponseWriter, r *http.Request, topic string) {
	if refuse(w, s.authorize(r), false) {
		return
	}
	q := r.URL.Query()
	poll := q.Get("poll") == "1" || q.Get("poll") == "true" || q.Get("poll") == "yes"
	since := q.Get("since")
	if since == "" && poll {
		since = "all" // a poll without since returns the cache, as ntfy's does
	}
	ch := make(chan Event, 256)
	s.mu.Lock()
	old, ok := sinceFilter(s.cache[topic], since)
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, 40008, "invalid since parameter")
		return
	}
	if !poll {
		// Registered under the same lock as the cache was read: no message
		// falls between the old ones and the live ones.
		if s.subs[topic] == nil {
			s.subs[topic] = map[chan Event]bool{}
		}
		s.subs[topic][ch] = true
		defer func() {
			s.mu.Lock()
			delete(s.subs[topic], ch)
			s.mu.Unlock()
		}()
	}
	s.mu.Unlock()

	w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	send := func(e Event) bool {
		if err := enc.Encode(e); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	if poll {
		for _, e := range old {
			send(e)
		}
		return
	}
	if !send(Event{ID: newID(), Time: time.Now().Unix(), Event: "open", Topic: topic}) {
		return
	}
	for _, e := range old {
		if !send(e) {
			return
		}
	}
	tick := time.NewTicker(s.opts.Keepalive)
	defer tick.Stop()
	for {
		select {
		case e := <-ch:
			if !send(e) {
				return
			}
		case <-tick.C:
			if !send(Event{ID: newID(), Time: time.Now().Unix(), Event: "keepalive", Topic: topic}) {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// sinceFilter is the cached messages a subscription's since asks for: none
// by default, all, those after a message id, or those at or after a Unix
// time. ok is false for a since ntfy would refuse.
func sinceFilter(cache []Event, since string) ([]Event, bool) {
	switch since {
	case "", "none":
		return nil, true
	case "all":
		return append([]Event(nil), cache...), true
	}
	if ts, err := strconv.ParseInt(since, 10, 64); err == nil {
		var out []Event
		for _, e := range cache {
			if e.Time >= ts {
				out = append(out, e)
			}
		}
		return out, true
	}
	for i, e := range cache {
		if e.ID == since {
			return append([]Event(nil), cache[i+1:]...), true
		}
	}
	if idRE.MatchString(since) {
		return nil, true // an id that expired: nothing newer is known
	}
	return nil, false
}

// idRE is the shape of a message id.
var idRE = regexp.MustCompile(`^[A-Za-z0-9]{12}$`)

// newID is a message id in ntfy's shape: 12 letters and digits.
func newID() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
