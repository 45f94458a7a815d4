package ntfytest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/notify/push/ntfytest"
)

// The server's own protocol, driven as ntfy's documentation shows it with
// curl: raw requests in, the JSON stream out.

func do(t *testing.T, method, url, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func nextMessage(t *testing.T, sub *ntfytest.Subscription) ntfytest.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	e, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestPublishFormsAndStream(t *testing.T) {
	srv := ntfytest.Start(t, ntfytest.Options{Keepalive: 50 * time.Millisecond})
	sub, err := ntfytest.Subscribe(t.Context(), srv.URL, "mytopic", "")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	// curl -H "Title: Disk" -H "Priority: urgent" -H "Tags: warning,skull" -H "Click: …" -d "Disk full" ntfy/mytopic
	code, body := do(t, http.MethodPost, srv.URL+"/mytopic", "Disk full", map[string]string{
		"Title": "Disk", "Priority": "urgent", "Tags": "warning, skull", "Click": "https://example.com/",
	})
	if code != 200 || !strings.Contains(body, `"event":"message"`) {
		t.Fatalf("publish: %d %s", code, body)
	}
	e := nextMessage(t, sub)
	if e.Message != "Disk full" || e.Title != "Disk" || e.Priority != 5 || strings.Join(e.Tags, ",") != "warning,skull" || e.Click != "https://example.com/" || len(e.ID) != 12 {
		t.Errorf("header publish arrived as %+v", e)
	}
	// PUT with the X- headers and an empty body.
	if code, body := do(t, http.MethodPut, srv.URL+"/mytopic", "", map[string]string{"X-Priority": "2"}); code != 200 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if e := nextMessage(t, sub); e.Message != "triggered" || e.Priority != 2 {
		t.Errorf("empty publish arrived as %+v", e)
	}
	// Publish as JSON to the root.
	if code, body := do(t, http.MethodPost, srv.URL+"/", `{"topic":"mytopic","message":"m","title":"T","tags":["a"],"priority":4}`, nil); code != 200 {
		t.Fatalf("JSON publish: %d %s", code, body)
	}
	if e := nextMessage(t, sub); e.Message != "m" || e.Title != "T" || e.Priority != 4 {
		t.Errorf("JSON publish arrived as %+v", e)
	}
	// Keepalives come while nothing is published.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if e, err := sub.NextEvent(ctx); err != nil || e.Event != "keepalive" || e.Topic != "mytopic" {
		t.Errorf("want a keepalive, got %+v, %v", e, err)
	}

	// A later subscriber asking since=all gets the cache first; a poll
	// returns it and ends.
	events, err := ntfytest.Poll(t.Context(), srv.URL, "mytopic", "")
	if err != nil || len(events) != 3 {
		t.Fatalf("poll: %d events, %v", len(events), err)
	}
	code, body = do(t, http.MethodGet, srv.URL+"/mytopic/json?poll=1&since="+events[0].ID, "", nil)
	if code != 200 || strings.Count(body, "\n") != 2 || strings.Contains(body, events[0].ID) {
		t.Errorf("since=<id>: %d %q", code, body)
	}
	if other, _ := ntfytest.Poll(t.Context(), srv.URL, "othertopic", ""); len(other) != 0 {
		t.Errorf("another topic holds %v", other)
	}
}

func TestProtocolErrors(t *testing.T) {
	srv := ntfytest.Start(t, ntfytest.Options{})
	cases := []struct {
		method, path, body string
		header             map[string]string
		code               int
		says               string
	}{
		{http.MethodPost, "/", "not json", nil, 400, "40017"},
		{http.MethodPost, "/", `{"topic":"bad topic!","message":"m"}`, nil, 400, "40017"},
		{http.MethodPost, "/", `{"topic":"t","priority":9}`, nil, 400, "40007"},
		{http.MethodPost, "/t", "m", map[string]string{"Priority": "loud"}, 400, "40007"},
		{http.MethodGet, "/t/json?since=yesterday", "", nil, 400, "40008"},
		{http.MethodGet, "/no/such/path", "", nil, 404, "40401"},
	}
	for _, c := range cases {
		if code, body := do(t, c.method, srv.URL+c.path, c.body, c.header); code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("%s %s: %d %s, want %d with %s", c.method, c.path, code, body, c.code, c.says)
		}
	}
}

func TestAccessControl(t *testing.T) {
	srv := ntfytest.Start(t, ntfytest.Options{Token: "tk_rw", ReadOnlyToken: "tk_ro"})
	cases := []struct {
		name   string
		header map[string]string
		pub    int
		sub    int
	}{
		{"anonymous", nil, 403, 403},
		{"unknown token", map[string]string{"Authorization": "Bearer tk_nope"}, 401, 401},
		{"read-only token", map[string]string{"Authorization": "Bearer tk_ro"}, 403, 200},
		{"token", map[string]string{"Authorization": "Bearer tk_rw"}, 200, 200},
		{"token as basic auth", map[string]string{"Authorization": "Basic OnRrX3J3"}, 200, 200}, // ":tk_rw"
	}
	for _, c := range cases {
		if code, body := do(t, http.MethodPost, srv.URL+"/t", "m", c.header); code != c.pub {
			t.Errorf("%s: publish %d %s, want %d", c.name, code, body, c.pub)
		}
		if code, body := do(t, http.MethodGet, srv.URL+"/t/json?poll=1", "", c.header); code != c.sub {
			t.Errorf("%s: subscribe %d %s, want %d", c.name, code, body, c.sub)
		}
	}
	var se *ntfytest.StatusError
	if _, err := ntfytest.Subscribe(t.Context(), srv.URL, "t", "tk_nope"); !errors.As(err, &se) || se.Status != 401 {
		t.Errorf("Subscribe with an unknown token: %v", err)
	}
}

func TestFailureModes(t *testing.T) {
	srv := ntfytest.Start(t, ntfytest.Options{})
	srv.FailWith(502)
	if code, _ := do(t, http.MethodPost, srv.URL+"/t", "m", nil); code != 502 {
		t.Errorf("FailWith(502): %d", code)
	}
	srv.FailWith(0)
	srv.Hang(true)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/t", strings.NewReader("m"))
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Hang: %v, want the client's deadline", err)
	}
	srv.Hang(false)
	if events, err := ntfytest.Poll(t.Context(), srv.URL, "t", ""); err != nil || len(events) != 0 {
		t.Errorf("failed publishes were kept: %v, %v", events, err)
	}
	srv.Refuse()
	// A fresh client: a pooled connection the server dropped reads as EOF.
	fresh := &http.Client{Transport: &http.Transport{}}
	if _, err := fresh.Post(srv.URL+"/t", "text/plain", strings.NewReader("m")); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Refuse: %v", err)
	}
	if n := srv.Attempts(); n != 2 {
		t.Errorf("Attempts = %d, want 2 (the refused one never arrived)", n)
	}
}
