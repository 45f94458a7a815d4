package webhooktest_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/notify/push"
	"github.com/session-supervisor/session-supervisor/notify/push/webhooktest"
)

// The receiver refuses what a real receiver must: a body changed after it
// was signed, a replayed (old) request, and a body not of its format.
func TestReceiverRefuses(t *testing.T) {
	const secret = "whsec_test"
	rcv := webhooktest.Start(t, webhooktest.Options{Secret: secret, MaxSkew: time.Minute})
	body := []byte(`{"version":1,"kind":"test","priority":"default","title":"t","text":"","tags":[],"click_url":"","incident":"","session":{"id":"","name":"","agent":"","machine":"","cwd":"","state":"","reason":""},"at":""}`)
	now := time.Now().Unix()
	cases := []struct {
		name string
		ts   int64
		sign []byte // what the signature covers
		send []byte // what is sent
		code int
		want error
	}{
		{"valid", now, body, body, 200, nil},
		{"tampered body", now, body, bytes.Replace(body, []byte(`"t"`), []byte(`"T"`), 1), 401, push.ErrBadSignature},
		{"old timestamp", now - 3600, body, body, 401, push.ErrStale},
		{"unknown key", now, []byte(`{"version":1,"extra":1}`), []byte(`{"version":1,"extra":1}`), 400, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, rcv.URL, bytes.NewReader(c.send))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(push.TimestampHeader, strconv.FormatInt(c.ts, 10))
			req.Header.Set(push.SignatureHeader, push.Sign(secret, c.ts, c.sign))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.code {
				t.Errorf("status %d, want %d", resp.StatusCode, c.code)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			q, err := rcv.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if c.want != nil && !errors.Is(q.Err, c.want) {
				t.Errorf("refused with %v, want %v", q.Err, c.want)
			}
			if c.code == 200 && (q.Err != nil || q.Generic == nil || q.Generic.Kind != "test") {
				t.Errorf("accepted request decoded as %+v, %v", q.Generic, q.Err)
			}
		})
	}
}
