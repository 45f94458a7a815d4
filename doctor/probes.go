package doctor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Real fills the probes that need nothing but the machine: files, PATH,
// `--version`, the environment, the session bus and the clock. The caller
// adds OpenDatabase, Health (SocketHealth does it), Lock and Service.
func Real() Probes {
	return Probes{
		Stat:     os.Stat,
		LookPath: exec.LookPath,
		Version:  AgentVersion,
		Getenv:   os.Getenv,
		BusNames: BusNames,
		Now:      time.Now,
	}
}

// AgentVersion runs `path --version` until ctx ends and returns the first
// line it prints.
func AgentVersion(ctx context.Context, path string) (string, error) {
	cmd := exec.CommandContext(ctx, path, "--version")
	// A CLI that leaves a child holding its output open must not hold
	// doctor too.
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("%w: %s", err, FirstLine(string(ee.Stderr)))
		}
		return "", err
	}
	v := FirstLine(string(out))
	if v == "" {
		return "", errors.New("it printed nothing")
	}
	return v, nil
}

// FirstLine is the first non-blank line of s, trimmed, cut at 100
// characters.
func FirstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 100 {
				l = l[:100] + "…"
			}
			return l
		}
	}
	return ""
}

// healthJSON is the wire form of GET /v1/health. The tick fields came later
// and are optional: an older app's answer has none of them.
type healthJSON struct {
	PID            int             `json:"pid"`
	Version        string          `json:"version"`
	Status         string          `json:"status"`
	LastTick       json.RawMessage `json:"last_tick"`
	TickLagSeconds *float64        `json:"tick_lag_seconds"`
	TickDurationMS *float64        `json:"tick_duration_ms"`
	Subscribers    *int            `json:"subscribers"`
	Dropped        *int64          `json:"dropped"`
	// Loop is where the app reports its tick fields (flat fields above are
	// read too, for an answer that has them there).
	Loop *struct {
		LastTick       json.RawMessage `json:"last_tick"`
		TickLagSeconds *float64        `json:"tick_lag_seconds"`
		TickDurationMS *float64        `json:"tick_duration_ms"`
		Subscribers    *int            `json:"subscribers"`
		Dropped        *int64          `json:"dropped_messages"`
	} `json:"loop"`
	// Push is the push channels' state, from an app that sends pushes.
	Push *Push `json:"push"`
}

// SocketHealth asks the app listening on the unix socket for GET
// /v1/health. It reads the answer whatever its status: a 503 from an app
// whose loop stalled carries the tick fields that say so. Nothing
// listening, or an answer that is not a health answer, is an error.
func SocketHealth(socket string) func(ctx context.Context) (Health, error) {
	return func(ctx context.Context) (Health, error) {
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://supervisor/v1/health", nil)
		if err != nil {
			return Health{}, err
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return Health{}, fmt.Errorf("no answer on %s: %w", socket, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return Health{}, fmt.Errorf("reading the app's health answer: %w", err)
		}
		return ParseHealth(resp.StatusCode, body)
	}
}

// ParseHealth decodes a /v1/health answer. A 200 or 503 with a JSON body is
// an answer; any other status is an error. A tick field of an unexpected
// shape is ignored rather than failing the whole check.
func ParseHealth(status int, body []byte) (Health, error) {
	if status != http.StatusOK && status != http.StatusServiceUnavailable {
		return Health{}, fmt.Errorf("the app answered /v1/health with status %d", status)
	}
	var w healthJSON
	if err := json.Unmarshal(body, &w); err != nil {
		if status == http.StatusServiceUnavailable {
			return Health{HTTPStatus: status}, nil
		}
		return Health{}, fmt.Errorf("decoding the app's health answer: %w", err)
	}
	if l := w.Loop; l != nil {
		if len(l.LastTick) > 0 {
			w.LastTick = l.LastTick
		}
		w.TickLagSeconds = cmp.Or(l.TickLagSeconds, w.TickLagSeconds)
		w.TickDurationMS = cmp.Or(l.TickDurationMS, w.TickDurationMS)
		w.Subscribers = cmp.Or(l.Subscribers, w.Subscribers)
		w.Dropped = cmp.Or(l.Dropped, w.Dropped)
	}
	h := Health{PID: w.PID, Version: w.Version, HTTPStatus: status, State: w.Status, Push: w.Push}
	var t time.Time
	if len(w.LastTick) > 0 && json.Unmarshal(w.LastTick, &t) == nil {
		h.LastTick = t
	}
	if w.TickLagSeconds != nil {
		h.TickLag = time.Duration(*w.TickLagSeconds * float64(time.Second))
	}
	if w.TickDurationMS != nil {
		h.TickDuration = time.Duration(*w.TickDurationMS * float64(time.Millisecond))
	}
	if w.Subscribers != nil {
		h.Subscribers = *w.Subscribers
	}
	if w.Dropped != nil {
		h.Dropped = *w.Dropped
	}
	return h, nil
}

// BusNames asks the session bus at addr for ListNames and
// ListActivatableNames with gdbus, else dbus-send (whichever is
// installed): doctor has no D-Bus library of its own.
func BusNames(ctx context.Context, addr string) (owned, activatable []string, err error) {
	var call func(method string) ([]string, error)
	if gdbus, err := exec.LookPath("gdbus"); err == nil {
		call = func(method string) ([]string, error) {
			return runBusQuery(ctx, addr, gdbus, "call", "--session", "--dest", "org.freedesktop.DBus",
				"--object-path", "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus."+method)
		}
	} else if send, err := exec.LookPath("dbus-send"); err == nil {
		call = func(method string) ([]string, error) {
			return runBusQuery(ctx, addr, send, "--session", "--print-reply", "--dest=org.freedesktop.DBus",
				"/org/freedesktop/DBus", "org.freedesktop.DBus."+method)
		}
	} else {
		return nil, nil, fmt.Errorf("neither gdbus nor dbus-send is installed: %w", exec.ErrNotFound)
	}
	if owned, err = call("ListNames"); err != nil {
		return nil, nil, err
	}
	if activatable, err = call("ListActivatableNames"); err != nil {
		return nil, nil, err
	}
	return owned, activatable, nil
}

// busName matches a quoted bus name in gdbus ('a.b') and dbus-send ("a.b")
// output alike.
var busName = regexp.MustCompile(`['"]([A-Za-z0-9_.:\-]+)['"]`)

func runBusQuery(ctx context.Context, addr, name string, args ...string) ([]string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS="+addr)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return nil, errors.New(FirstLine(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("%s: %w", filepath.Base(name), err)
	}
	return parseBusNames(string(out)), nil
}

func parseBusNames(out string) []string {
	var names []string
	for _, m := range busName.FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	return names
}
