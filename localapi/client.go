package localapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
)

// ErrNotRunning means no app answers on the data directory's socket.
var ErrNotRunning = errors.New("the app is not running")

// Client talks to a running app over its unix socket, or to another
// machine's app over a connection a dialer opens (machines: ssh).
type Client struct {
	socket string
	// remote names the other machine's app in errors; empty for the
	// local socket.
	remote string
	http   *http.Client
}

// NewDialClient returns a client whose every connection dial opens: the
// API spoken over any byte stream (another machine's app through ssh).
// where names that app in errors ("machine devbox").
func NewDialClient(where string, dial func(ctx context.Context) (net.Conn, error)) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
		// Each connection is a process on both machines: keep few, and
		// not for long.
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Client{remote: where, http: &http.Client{Transport: tr}}
}

// Close lets go of the connections the client keeps for reuse.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// CheckVersion asks the app which API it speaks and refuses one this
// client cannot: a client never guesses at another version's answers.
func (c *Client) CheckVersion(ctx context.Context) (Health, error) {
	h, err := c.Health(ctx)
	if err != nil && h.Version == "" {
		return h, err
	}
	if verr := versionError(c, h); verr != nil {
		return h, verr
	}
	return h, err
}

// versionError says why h is from an app this one cannot speak to, or nil.
func versionError(c *Client, h Health) error {
	if h.APIVersion == APIVersion {
		return nil
	}
	where := "the supervisor"
	if c != nil {
		where = c.describe()
	}
	return fmt.Errorf("%s speaks API version %d (app %s); this app speaks %d: update the older one", where, h.APIVersion, h.Version, APIVersion)
}

// describe names the app the client talks to.
func (c *Client) describe() string {
	if c.remote != "" {
		return c.remote
	}
	return "the app on " + c.socket
}

// NewClient returns a client for the app serving dataDir.
func NewClient(dataDir string) *Client {
	socket := filepath.Join(dataDir, SocketName)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}
	return &Client{socket: socket, http: &http.Client{Transport: tr}}
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://supervisor"+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.connErr(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the app's answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			return fmt.Errorf("%s %s: %s", method, path, resp.Status)
		}
		if e.Kind == "" {
			e.Kind = kindOfStatus(resp.StatusCode)
		}
		if out != nil && resp.StatusCode == http.StatusServiceUnavailable {
			// A 503 may carry a full answer too (health when stalled).
			_ = json.Unmarshal(b, out)
		}
		return ErrorFromWire(e.Kind, e.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decoding the app's answer to %s %s: %w", method, path, err)
	}
	return nil
}

// kindOfStatus reads the kind from the status alone (an app older than the
// kind field).
func kindOfStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusConflict:
		return "conflict"
	case http.StatusServiceUnavailable:
		return "unavailable"
	case http.StatusForbidden:
		return "forbidden"
	}
	return ""
}

func (c *Client) connErr(err error) error {
	if c.remote != "" {
		// The dialer's own error says what went wrong (ssh's reason);
		// the request's URL would only hide it.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		if strings.HasPrefix(err.Error(), c.remote+":") {
			return err
		}
		return fmt.Errorf("%s: %w", c.remote, err)
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return fmt.Errorf("%w (no answer on %s; start it with 'session-supervisor run')", ErrNotRunning, c.socket)
	}
	return err
}

// Health asks which app is serving.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	return h, c.do(ctx, http.MethodGet, "/v1/health", nil, &h)
}

// Show asks the app to bring its window forward (what a second `run`
// does instead of starting another app).
func (c *Client) Show(ctx context.Context) (ShowResult, error) {
	var out ShowResult
	return out, c.do(ctx, http.MethodPost, "/v1/show", struct{}{}, &out)
}

// Sessions lists every session.
func (c *Client) Sessions(ctx context.Context) ([]sessions.Session, error) {
	var out []sessions.Session
	return out, c.do(ctx, http.MethodGet, "/v1/sessions", nil, &out)
}

// AllSessions lists the sessions with the archived ones (`ls --all`).
func (c *Client) AllSessions(ctx context.Context) ([]sessions.Session, error) {
	var out []sessions.Session
	return out, c.do(ctx, http.MethodGet, "/v1/sessions?all=true", nil, &out)
}

// Forget removes an ended session, its timeline kept or deleted.
func (c *Client) Forget(ctx context.Context, id string, timeline storage.TimelineChoice) (sessions.Session, error) {
	var out sessions.Session
	body := map[string]any{"delete_timeline": timeline == storage.DropTimeline}
	return out, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/forget", body, &out)
}

// Session shows one session (id or unique prefix).
func (c *Client) Session(ctx context.Context, id string) (sessions.Session, error) {
	var out sessions.Session
	return out, c.do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id), nil, &out)
}

// Launch starts a managed session.
func (c *Client) Launch(ctx context.Context, req LaunchRequest) (sessions.Session, error) {
	var out sessions.Session
	return out, c.do(ctx, http.MethodPost, "/v1/sessions", req, &out)
}

// Send sends a prompt.
func (c *Client) Send(ctx context.Context, id, prompt string) (sessions.Session, error) {
	var out sessions.Session
	return out, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/prompt", map[string]string{"prompt": prompt}, &out)
}

// Interrupt interrupts the turn in flight.
func (c *Client) Interrupt(ctx context.Context, id string) (sessions.Session, error) {
	var out sessions.Session
	return out, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/interrupt", struct{}{}, &out)
}

// NudgeNow sends the constant continuation nudge (the tray's "Send nudge now").
func (c *Client) NudgeNow(ctx context.Context, id string) (sessions.Session, error) {
	var out sessions.Session
	return out, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/nudge", struct{}{}, &out)
}

// Resume resumes a terminal session whose process is gone in the
// background; it returns the new managed session.
func (c *Client) Resume(ctx context.Context, id string) (sessions.Session, error) {
	var out sessions.Session
	return out, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/resume", struct{}{}, &out)
}

// Handover stops a managed session to continue it in a terminal and
// returns the command that continues it there.
func (c *Client) Handover(ctx context.Context, id string, req HandoverRequest) (Handover, error) {
	var out Handover
	return out, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/handover", req, &out)
}

// Ack acknowledges a session.
func (c *Client) Ack(ctx context.Context, id string) (sessions.Session, error) {
	var out sessions.Session
	return out, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/ack", struct{}{}, &out)
}

// Answer approves or denies the open permission request requestID ("" for
// the only one open); a request no longer open is ErrRequestClosed.
func (c *Client) Answer(ctx context.Context, id, requestID string, allow bool, message string) (sessions.Session, error) {
	var out sessions.Session
	body := map[string]any{"request_id": requestID, "allow": allow, "message": message}
	return out, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/permission", body, &out)
}

// SetRecovery switches automatic recovery of one session off or on again.
func (c *Client) SetRecovery(ctx context.Context, id string, on bool) (sessions.Session, error) {
	var out sessions.Session
	return out, c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/recovery", map[string]bool{"on": on}, &out)
}

// UsageHistory returns the usage history from day since ("" for all) on,
// per day, session and model.
func (c *Client) UsageHistory(ctx context.Context, since string) ([]UsageDay, error) {
	var out []UsageDay
	return out, c.do(ctx, http.MethodGet, "/v1/usage/days?since="+url.QueryEscape(since), nil, &out)
}

// Timeline returns a session's timeline, newest first.
func (c *Client) Timeline(ctx context.Context, id string, limit int) ([]TimelineRow, error) {
	var out []TimelineRow
	return out, c.do(ctx, http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/timeline?limit="+strconv.Itoa(limit), nil, &out)
}

// Settings lists the settings.
func (c *Client) Settings(ctx context.Context) ([]settings.Value, error) {
	var out []settings.Value
	return out, c.do(ctx, http.MethodGet, "/v1/settings", nil, &out)
}

// SetSetting changes a setting through the app.
func (c *Client) SetSetting(ctx context.Context, key, value string) (settings.SetResult, error) {
	var out settings.SetResult
	return out, c.do(ctx, http.MethodPut, "/v1/settings/"+url.PathEscape(key), map[string]string{"value": value}, &out)
}

// UpdateSettings changes several settings in one all-or-nothing change.
func (c *Client) UpdateSettings(ctx context.Context, changes []SettingChange) ([]settings.SetResult, error) {
	body := make([]map[string]string, len(changes))
	for i, ch := range changes {
		body[i] = map[string]string{"key": ch.Key, "value": ch.Raw}
	}
	var out []settings.SetResult
	return out, c.do(ctx, http.MethodPatch, "/v1/settings", body, &out)
}

// ResetSetting removes a setting's stored value through the app, so its
// default applies.
func (c *Client) ResetSetting(ctx context.Context, key string) (settings.SetResult, error) {
	var out settings.SetResult
	return out, c.do(ctx, http.MethodDelete, "/v1/settings/"+url.PathEscape(key), nil, &out)
}

// Watch streams live messages to fn until ctx is done or the stream ends.
// cursor may be empty; from a previous run it makes the app send a resync.
func (c *Client) Watch(ctx context.Context, cursor string, fn func(Message) error) error {
	return c.watch(ctx, cursor, "", fn)
}

// WatchAsDesktop is Watch for an attached desktop: while it streams, the
// supervisor leaves the window and the notifications to it.
func (c *Client) WatchAsDesktop(ctx context.Context, cursor string, fn func(Message) error) error {
	return c.watch(ctx, cursor, "desktop", fn)
}

func (c *Client) watch(ctx context.Context, cursor, client string, fn func(Message) error) error {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if client != "" {
		q.Set("client", client)
	}
	path := "/v1/events"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://supervisor"+path, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.connErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("watching events: %s", resp.Status)
	}
	return ReadEvents(resp.Body, fn)
}

// ReadEvents decodes the live stream (server-sent events whose data is a
// Message) from r, calling fn with each message until r ends or fn fails.
func ReadEvents(r io.Reader, fn func(Message) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				var m Message
				if err := json.Unmarshal(data, &m); err != nil {
					return fmt.Errorf("decoding an event: %w", err)
				}
				if err := fn(m); err != nil {
					return err
				}
				data = data[:0]
			}
		case bytes.HasPrefix(line, []byte("data: ")):
			data = append(data, line[len("data: "):]...)
		}
	}
}
