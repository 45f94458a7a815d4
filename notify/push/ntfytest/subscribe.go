package ntfytest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Subscription is a phone's view of a topic: ntfy's JSON stream read over
// HTTP (GET /{topic}/json). It works against any ntfy server, this one or
// the real one.
type Subscription struct {
	body   io.ReadCloser
	events chan Event
	done   chan struct{} // closed when the stream ended
	err    error         // why it ended; read after done
}

// StatusError is a subscription the server refused, with its HTTP status.
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("ntfy subscribe: HTTP %d: %s", e.Status, e.Body)
}

// Subscribe opens topic's JSON stream on the server at baseURL, with token
// as a bearer token when not empty, and returns once the server's "open"
// event arrived: from then on every message published to the topic is seen.
// A refused subscription is a *StatusError. It ends with ctx or Close.
func Subscribe(ctx context.Context, baseURL, topic, token string) (*Subscription, error) {
	resp, err := get(ctx, baseURL, topic, token, "")
	if err != nil {
		return nil, err
	}
	s := &Subscription{body: resp.Body, events: make(chan Event, 256), done: make(chan struct{})}
	go s.read()
	select {
	case e, ok := <-s.events:
		if !ok {
			s.body.Close()
			return nil, fmt.Errorf("ntfy subscribe: stream ended before its open event: %w", s.err)
		}
		if e.Event != "open" {
			s.Close()
			return nil, fmt.Errorf("ntfy subscribe: first event is %q, want open", e.Event)
		}
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("ntfy subscribe: waiting for the open event: %w", ctx.Err())
	}
}

// Phone subscribes to topic on s as a phone does (Subscribe), for the
// test's length: the stream ends with the test's context and is closed in
// its cleanup. A refused subscription fails the test.
func (s *Server) Phone(t testing.TB, topic, token string) *Subscription {
	t.Helper()
	sub, err := Subscribe(t.Context(), s.URL, topic, token)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// get sends the subscribe (or poll) request and checks its status.
func get(ctx context.Context, baseURL, topic, token, query string) (*http.Response, error) {
	u := strings.TrimRight(baseURL, "/") + "/" + topic + "/json" + query
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("ntfy subscribe: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ntfy subscribe: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, &StatusError{Status: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	return resp, nil
}

// read decodes the stream's lines until it ends.
func (s *Subscription) read() {
	defer close(s.done)
	defer close(s.events)
	sc := bufio.NewScanner(s.body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			s.err = fmt.Errorf("ntfy subscribe: bad line %q: %w", line, err)
			return
		}
		s.events <- e
	}
	s.err = sc.Err()
	if s.err == nil {
		s.err = io.EOF
	}
}

// Next returns the next "message" event, skipping keepalives. It fails when
// ctx ends first or the stream ended.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		select {
		case e, ok := <-s.events:
			if !ok {
				return Event{}, fmt.Errorf("ntfy subscribe: stream ended: %w", s.err)
			}
			if e.Event == "message" {
				return e, nil
			}
		case <-ctx.Done():
			return Event{}, fmt.Errorf("ntfy subscribe: waiting for a message: %w", ctx.Err())
		}
	}
}

// NextEvent returns the next event of any kind, keepalives included.
func (s *Subscription) NextEvent(ctx context.Context) (Event, error) {
	select {
	case e, ok := <-s.events:
		if !ok {
			return Event{}, fmt.Errorf("ntfy subscribe: stream ended: %w", s.err)
		}
		return e, nil
	case <-ctx.Done():
		return Event{}, fmt.Errorf("ntfy subscribe: waiting for an event: %w", ctx.Err())
	}
}

// Close ends the subscription and waits for its reader.
func (s *Subscription) Close() {
	s.body.Close()
	for range s.events { // let a reader blocked on a full channel finish
	}
	<-s.done
}

// Poll returns every message the server holds for topic (GET
// /{topic}/json?poll=1&since=all), the way ntfy's apps catch up: what a test
// uses to show that nothing was published, without waiting on a stream.
func Poll(ctx context.Context, baseURL, topic, token string) ([]Event, error) {
	resp, err := get(ctx, baseURL, topic, token, "?poll=1&since=all")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []Event
	dec := json.NewDecoder(resp.Body)
	for {
		var e Event
		if err := dec.Decode(&e); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("ntfy poll: %w", err)
		}
		if e.Event == "message" {
			out = append(out, e)
		}
	}
}
