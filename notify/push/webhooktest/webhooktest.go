// Package webhooktest is a webhook receiver on 127.0.0.1 for tests: it does
// what a real receiver must (check the signature with push.Verify, decode the
// body of its format strictly) and hands each request to the test, so a test
// sees what a Slack, a Discord or a receiver of one's own would have seen.
package webhooktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/notify/push"
)

// Options configures a receiver.
type Options struct {
	// Format is the body it expects; a body of another shape is refused
	// with 400.
	Format push.WebhookFormat
	// Secret, when set, is required: a request without a valid signature is
	// refused with 401, as a receiver must.
	Secret string
	// MaxSkew is the timestamp tolerance given to push.Verify; 0 for its
	// default.
	MaxSkew time.Duration
}

// Request is one request the receiver got, accepted or not.
type Request struct {
	Header http.Header
	Body   []byte
	// Status is what the receiver answered; Err why it refused (the
	// signature's or the decoding's error), nil when accepted.
	Status int
	Err    error
	// The decoded body, by format; nil when refused or of another format.
	Generic *push.WebhookBody
	Slack   *push.SlackBody
	Discord *push.DiscordBody
}

// Receiver is a running receiver; URL is the webhook URL to configure. Its
// path looks like a Slack webhook's secret part, so a test can check that
// no receipt or error ever shows it.
type Receiver struct {
	URL string

	opts     Options
	srv      *httptest.Server
	requests chan Request

	mu     sync.Mutex
	status int // answer to every request when not 0
}

// Start runs a receiver on 127.0.0.1 until the test ends.
func Start(t testing.TB, o Options) *Receiver {
	t.Helper()
	r := &Receiver{opts: o, requests: make(chan Request, 256)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL + "/hooks/T0001/B0002/secretpath"
	t.Cleanup(r.srv.Close)
	return r
}

// FailWith makes every request answer status without looking at it (0
// serves again): a receiver that is down or rate-limits.
func (r *Receiver) FailWith(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

// Next returns the next request received, or fails when ctx ends first.
func (r *Receiver) Next(ctx context.Context) (Request, error) {
	select {
	case q := <-r.requests:
		return q, nil
	case <-ctx.Done():
		return Request{}, fmt.Errorf("webhook receiver: waiting for a request: %w", ctx.Err())
	}
}

// Pending is how many received requests no Next has returned yet.
func (r *Receiver) Pending() int { return len(r.requests) }

func (r *Receiver) serve(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(io.LimitReader(hr.Body, 1<<20))
	q := Request{Header: hr.Header.Clone(), Body: body}
	defer func() {
		select {
		case r.requests <- q:
		default:
		}
	}()
	r.mu.Lock()
	status := r.status
	r.mu.Unlock()
	switch {
	case status != 0:
		q.Status, q.Err = status, fmt.Errorf("failing on purpose with %d", status)
	case err != nil:
		q.Status, q.Err = http.StatusBadRequest, err
	case hr.Method != http.MethodPost:
		q.Status, q.Err = http.StatusMethodNotAllowed, fmt.Errorf("method %s", hr.Method)
	case hr.Header.Get("Content-Type") != "application/json":
		q.Status, q.Err = http.StatusUnsupportedMediaType, fmt.Errorf("content type %q", hr.Header.Get("Content-Type"))
	}
	if q.Err == nil && r.opts.Secret != "" {
		if err := push.Verify(r.opts.Secret, hr.Header, body, time.Now(), r.opts.MaxSkew); err != nil {
			q.Status, q.Err = http.StatusUnauthorized, err
		}
	}
	if q.Err == nil {
		q.Err = r.decode(&q)
		if q.Err != nil {
			q.Status = http.StatusBadRequest
		}
	}
	if q.Err != nil {
		http.Error(w, q.Err.Error(), q.Status)
		return
	}
	// Each service's own success answer.
	switch r.opts.Format {
	case push.Discord:
		q.Status = http.StatusNoContent
		w.WriteHeader(q.Status)
	case push.Slack:
		q.Status = http.StatusOK
		_, _ = io.WriteString(w, "ok")
	default:
		q.Status = http.StatusOK
		w.WriteHeader(q.Status)
	}
}

// decode reads q.Body strictly as the receiver's format: an unknown key or
// a missing required one is an error, so a test notices a changed shape.
func (r *Receiver) decode(q *Request) error {
	dec := json.NewDecoder(bytes.NewReader(q.Body))
	dec.DisallowUnknownFields()
	switch r.opts.Format {
	case push.Slack:
		var b push.SlackBody
		if err := dec.Decode(&b); err != nil {
			return fmt.Errorf("slack body: %w", err)
		}
		if b.Text == "" {
			return fmt.Errorf("slack body: no text")
		}
		q.Slack = &b
	case push.Discord:
		var b push.DiscordBody
		if err := dec.Decode(&b); err != nil {
			return fmt.Errorf("discord body: %w", err)
		}
		if b.Content == "" || len([]rune(b.Content)) > 2000 {
			return fmt.Errorf("discord body: content of %d characters, want 1 to 2000", len([]rune(b.Content)))
		}
		q.Discord = &b
	default:
		var b push.WebhookBody
		if err := dec.Decode(&b); err != nil {
			return fmt.Errorf("generic body: %w", err)
		}
		if b.Version != push.WebhookVersion || b.Kind == "" || b.Tags == nil {
			return fmt.Errorf("generic body: version %d, kind %q, tags %v", b.Version, b.Kind, b.Tags)
		}
		q.Generic = &b
	}
	if dec.More() {
		return fmt.Errorf("%s body: more than one JSON value", r.opts.Format)
	}
	return nil
}
