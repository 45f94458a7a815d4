package localapi

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Pusher is the push channels' side of the app (notify/escalation's
// runner, wired by main): the API asks it for a test and for its state.
type Pusher interface {
	// Test sends a sample through the named channels (every configured
	// one when none is named) and reports each.
	Test(ctx context.Context, channels []string) ([]PushReceipt, error)
	// Status is the configured channels and their last failures.
	Status() PushStatus
}

// PushReceipt is how one channel took a test.
type PushReceipt struct {
	Channel string `json:"channel"`
	OK      bool   `json:"ok"`
	// Status is the HTTP status (0 when none came).
	Status int `json:"status,omitempty"`
	// Error is a short sanitized reason; never a secret.
	Error string `json:"error,omitempty"`
}

// PushStatus is the push channels' part of GET /v1/health.
type PushStatus struct {
	// Channels are the configured channels ("ntfy", "webhook").
	Channels []string `json:"channels"`
	// Problems are channels configured but unusable (a bad setting).
	Problems []PushFailure `json:"problems,omitempty"`
	// Failures are the channels whose last delivery did not go through.
	Failures []PushFailure `json:"failures,omitempty"`
}

// PushFailure is one channel's trouble.
type PushFailure struct {
	Channel string    `json:"channel"`
	At      time.Time `json:"at,omitzero"`
	Error   string    `json:"error"`
	// GaveUp: retries ended without a delivery.
	GaveUp bool `json:"gave_up,omitempty"`
}

// NotifyTestRequest is POST /v1/notify/test's body.
type NotifyTestRequest struct {
	// Channels to test; empty tests every configured one.
	Channels []string `json:"channels,omitempty"`
}

// ErrNoPusher is the answer of a process that sends no pushes (a desktop
// attached to another process's supervisor answers for it).
var ErrNoPusher = errors.New("this process sends no push notifications")

// SetPusher sets what POST /v1/notify/test and the health's push part
// ask; nil (the default) has neither.
func (a *API) SetPusher(p Pusher) {
	if p == nil {
		a.pusher.Store(nil)
		return
	}
	a.pusher.Store(&p)
}

func (a *API) pushStatus() *PushStatus {
	p := a.pusher.Load()
	if p == nil {
		return nil
	}
	s := (*p).Status()
	return &s
}

func (a *API) notifyTest(w http.ResponseWriter, r *http.Request) {
	var req NotifyTestRequest
	if !readJSON(w, r, &req) {
		return
	}
	p := a.pusher.Load()
	if p == nil {
		writeError(w, http.StatusServiceUnavailable, ErrNoPusher)
		return
	}
	out, err := (*p).Test(r.Context(), req.Channels)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// NotifyTest sends a sample through the named push channels (all
// configured ones when none is named) and reports each.
func (c *Client) NotifyTest(ctx context.Context, channels ...string) ([]PushReceipt, error) {
	var out []PushReceipt
	return out, c.do(ctx, http.MethodPost, "/v1/notify/test", NotifyTestRequest{Channels: channels}, &out)
}

// NotifyTest asks the supervisor this desktop is attached to for a test
// of every configured push channel.
func (r *Remote) NotifyTest(ctx context.Context) ([]PushReceipt, error) {
	return r.c.NotifyTest(ctx)
}
