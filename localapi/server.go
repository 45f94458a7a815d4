package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
)

// SocketName is the local API's unix socket in the data directory.
const SocketName = "supervisor.sock"

// SettingsService is what the API needs to read and change settings: the
// app's *settings.Service, which reads memory and validates, clamps,
// persists and publishes every change in one place.
type SettingsService interface {
	List() []settings.Value
	Update(ctx context.Context, key, raw string) (settings.SetResult, error)
	UpdateMany(ctx context.Context, changes []SettingChange) ([]settings.SetResult, error)
	Reset(ctx context.Context, key string) (settings.SetResult, error)
}

// streamWriteTimeout is how long one write to an event-stream client may
// block before the client is dropped (a variable for the test).
var streamWriteTimeout = 30 * time.Second

// subscriberBuffer bounds each streaming client's queue: a client that falls
// further behind misses incremental events and catches up from the next
// snapshot instead of slowing the app.
const subscriberBuffer = 256

// Supervisor is what the server serves: the runtime in this process
// (*supervisor.Runtime implements it). Its errors carry the request kinds
// (ErrInvalid, ErrNotFound, ...), which pick the answer's status.
type Supervisor interface {
	// Sessions leaves the archived sessions out; AllSessions has them.
	Sessions() []sessions.Session
	AllSessions() []sessions.Session
	Session(id string) (sessions.Session, error)
	Timeline(ctx context.Context, id string, limit int) ([]TimelineRow, error)
	Launch(ctx context.Context, req LaunchRequest) (sessions.Session, error)
	Send(ctx context.Context, id, prompt string) (sessions.Session, error)
	Interrupt(ctx context.Context, id string) (sessions.Session, error)
	NudgeNow(ctx context.Context, id string) (sessions.Session, error)
	// Resume answers the new managed session, not the resumed one.
	Resume(ctx context.Context, id string) (sessions.Session, error)
	Handover(ctx context.Context, id string, req HandoverRequest) (Handover, error)
	Ack(ctx context.Context, id string) (sessions.Session, error)
	// Forget removes an ended session, its timeline kept or dropped, and
	// answers it as it was.
	Forget(ctx context.Context, id string, timeline storage.TimelineChoice) (sessions.Session, error)
	// Answer answers the open permission request requestID; "" names the
	// only one open and is refused while several are.
	Answer(ctx context.Context, id, requestID string, allow bool, message string) (sessions.Session, error)
	// SetRecovery is the user's per-session "stop recovering" switch
	// (on: recovered again).
	SetRecovery(ctx context.Context, id string, on bool) (sessions.Session, error)
	// UsageHistory is the usage history from a day (YYYY-MM-DD; "" for
	// all) on, summed per day, session and model.
	UsageHistory(ctx context.Context, since string) ([]UsageDay, error)
	// LoopHealth must answer without waiting on I/O: health is read
	// precisely when something is stuck.
	LoopHealth(now time.Time) LoopHealth
	Bus() *Bus
	// Subscribe registers a subscriber whose queue starts with a snapshot
	// (after a resync notice when resync is set), so no change reaches it
	// before the state it changes.
	Subscribe(buf int, resync bool) *Subscription
}

// API serves the local API on an owner-only unix socket.
type API struct {
	rt       Supervisor
	settings SettingsService
	health   Health
	srv      *http.Server
	ln       net.Listener
	// closing is closed when Close starts, to end the live event streams:
	// they never go idle, so the server's Shutdown would wait for them.
	closing     chan struct{}
	closingOnce sync.Once
	// showWindow is the GUI's "bring the window forward"; nil when headless.
	showWindow atomic.Pointer[func()]
	// parent walks a peer's ancestry (the process table; tests replace it).
	parent Parent
	// pusher is the push channels' runner; nil where none runs.
	pusher atomic.Pointer[Pusher]
	// desktops counts the desktops attached over the event stream
	// (GET /v1/events?client=desktop): while one is, it shows the window
	// and the notifications, not this process.
	desktops atomic.Int64
}

// ShowResult is what POST /v1/show answers: whether a window was shown
// (false when the app runs headless and has none).
type ShowResult struct {
	Shown bool `json:"shown"`
}

// SetShowWindow sets the callback POST /v1/show calls: a second `run`
// uses it to bring the first instance's window forward instead of starting
// another app. fn runs on the request's goroutine and must not block (a GUI
// hands the work to its own thread). nil, the default, means headless.
func (a *API) SetShowWindow(fn func()) {
	if fn == nil {
		a.showWindow.Store(nil)
		return
	}
	a.showWindow.Store(&fn)
}

// Listen creates the socket in dataDir (owner-only: 0600 in a 0700
// directory; never a TCP port) and returns the API ready to Serve. The caller
// must hold the data directory's instance lock, so a leftover socket file is
// stale and safe to replace.
func Listen(rt Supervisor, settings SettingsService, dataDir, version string) (*API, error) {
	// The directory is what keeps other users off the socket (also during
	// the moment before the chmod below): make sure it is private.
	if err := storage.EnsureDir(dataDir); err != nil {
		return nil, err
	}
	path := filepath.Join(dataDir, SocketName)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restricting %s to its owner: %w", path, err)
	}
	a := &API{rt: rt, settings: settings, ln: ln, closing: make(chan struct{}), parent: procParent,
		health: Health{PID: os.Getpid(), Version: version, APIVersion: APIVersion, Generation: rt.Bus().Generation(), DataDir: dataDir}}
	// Bounded under slow or hostile clients: headers must arrive in time,
	// bodies are capped (maxBody), an idle connection is closed, and the
	// event stream bounds each write itself. No ReadTimeout: its expiry
	// cancels a live event stream's request.
	a.srv = &http.Server{Handler: a.guard(a.routes()), ConnContext: connContext,
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	a.srv.RegisterOnShutdown(func() { a.closingOnce.Do(func() { close(a.closing) }) })
	return a, nil
}

// Serve serves until Close.
func (a *API) Serve() error {
	if err := a.srv.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the local API: %w", err)
	}
	return nil
}

// Close stops the server and removes the socket.
func (a *API) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := a.srv.Shutdown(ctx)
	if err != nil {
		err = a.srv.Close()
	}
	return err
}

func (a *API) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", a.healthz)
	mux.HandleFunc("GET /v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		if all, _ := strconv.ParseBool(r.URL.Query().Get("all")); all {
			writeJSON(w, http.StatusOK, a.rt.AllSessions())
			return
		}
		writeJSON(w, http.StatusOK, a.rt.Sessions())
	})
	mux.HandleFunc("POST /v1/sessions", a.launch)
	mux.HandleFunc("GET /v1/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		s, err := a.rt.Session(r.PathValue("id"))
		respond(w, s, err)
	})
	mux.HandleFunc("GET /v1/sessions/{id}/timeline", a.timeline)
	mux.HandleFunc("POST /v1/sessions/{id}/prompt", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt string `json:"prompt"`
		}
		if !readJSON(w, r, &body) {
			return
		}
		s, err := a.rt.Send(r.Context(), r.PathValue("id"), body.Prompt)
		respond(w, s, err)
	})
	mux.HandleFunc("POST /v1/sessions/{id}/interrupt", func(w http.ResponseWriter, r *http.Request) {
		s, err := a.rt.Interrupt(r.Context(), r.PathValue("id"))
		respond(w, s, err)
	})
	mux.HandleFunc("POST /v1/sessions/{id}/nudge", func(w http.ResponseWriter, r *http.Request) {
		s, err := a.rt.NudgeNow(r.Context(), r.PathValue("id"))
		respond(w, s, err)
	})
	mux.HandleFunc("POST /v1/sessions/{id}/resume", func(w http.ResponseWriter, r *http.Request) {
		// Answers the new managed session, not the resumed one.
		s, err := a.rt.Resume(r.Context(), r.PathValue("id"))
		respond(w, s, err)
	})
	mux.HandleFunc("POST /v1/sessions/{id}/handover", func(w http.ResponseWriter, r *http.Request) {
		var body HandoverRequest
		if !readJSON(w, r, &body) {
			return
		}
		h, err := a.rt.Handover(r.Context(), r.PathValue("id"), body)
		respond(w, h, err)
	})
	mux.HandleFunc("POST /v1/sessions/{id}/ack", func(w http.ResponseWriter, r *http.Request) {
		s, err := a.rt.Ack(r.Context(), r.PathValue("id"))
		respond(w, s, err)
	})
	mux.HandleFunc("POST /v1/sessions/{id}/forget", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			DeleteTimeline bool `json:"delete_timeline"`
		}
		if !readJSON(w, r, &body) {
			return
		}
		timeline := storage.KeepTimeline
		if body.DeleteTimeline {
			timeline = storage.DropTimeline
		}
		s, err := a.rt.Forget(r.Context(), r.PathValue("id"), timeline)
		respond(w, s, err)
	})
	mux.HandleFunc("POST /v1/sessions/{id}/permission", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			RequestID string `json:"request_id"`
			Allow     bool   `json:"allow"`
			Message   string `json:"message"`
		}
		if !readJSON(w, r, &body) {
			return
		}
		s, err := a.rt.Answer(r.Context(), r.PathValue("id"), body.RequestID, body.Allow, body.Message)
		respond(w, s, err)
	})
	mux.HandleFunc("POST /v1/sessions/{id}/recovery", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			On *bool `json:"on"`
		}
		if !readJSON(w, r, &body) {
			return
		}
		if body.On == nil {
			writeError(w, http.StatusBadRequest, Errorf(ErrInvalid, `the body needs "on": true or false`))
			return
		}
		s, err := a.rt.SetRecovery(r.Context(), r.PathValue("id"), *body.On)
		respond(w, s, err)
	})
	mux.HandleFunc("GET /v1/usage/days", func(w http.ResponseWriter, r *http.Request) {
		rows, err := a.rt.UsageHistory(r.Context(), r.URL.Query().Get("since"))
		if rows == nil {
			rows = []UsageDay{}
		}
		respond(w, rows, err)
	})
	mux.HandleFunc("GET /v1/settings", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, a.settings.List())
	})
	mux.HandleFunc("PUT /v1/settings/{key}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Value string `json:"value"`
		}
		if !readJSON(w, r, &body) {
			return
		}
		res, err := a.settings.Update(r.Context(), r.PathValue("key"), body.Value)
		respondSetting(w, res, err)
	})
	mux.HandleFunc("PATCH /v1/settings", func(w http.ResponseWriter, r *http.Request) {
		// Several keys in one all-or-nothing change (the Settings window's Save).
		var body []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		}
		if !readJSON(w, r, &body) {
			return
		}
		changes := make([]SettingChange, len(body))
		for i, c := range body {
			changes[i] = SettingChange{Key: c.Key, Raw: c.Value}
		}
		res, err := a.settings.UpdateMany(r.Context(), changes)
		if err != nil {
			respondSetting(w, settings.SetResult{}, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
	mux.HandleFunc("DELETE /v1/settings/{key}", func(w http.ResponseWriter, r *http.Request) {
		res, err := a.settings.Reset(r.Context(), r.PathValue("key"))
		respondSetting(w, res, err)
	})
	mux.HandleFunc("GET /v1/events", a.events)
	mux.HandleFunc("POST /v1/notify/test", a.notifyTest)
	mux.HandleFunc("POST /v1/show", func(w http.ResponseWriter, r *http.Request) {
		shown := false
		if fn := a.showWindow.Load(); fn != nil {
			(*fn)()
			shown = true
		} else if a.DesktopAttached() {
			// The attached desktop owns the window: ask it through its stream.
			a.rt.Bus().Publish(Message{Type: MsgShow})
			shown = true
		}
		writeJSON(w, http.StatusOK, ShowResult{Shown: shown})
	})
	return mux
}

// healthz answers from atomics and one brief lock that is never held over
// I/O, so it answers even when an agent or the disk is stuck.
func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	h := a.health
	h.Loop = a.rt.LoopHealth(time.Now())
	h.Push = a.pushStatus()
	h.Status = "ok"
	status := http.StatusOK
	if h.Loop.Status == "stalled" {
		h.Status = "stalled"
		h.Error = fmt.Sprintf("the supervisor loop has not ticked for %.0f s (interval %.0f s)", h.Loop.SinceTickSeconds, h.Loop.TickSeconds)
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, h)
}

// respondSetting answers a settings change: 400 for an unknown key or a
// value that does not parse (the client shows the message, which names the
// key, the value and what is allowed), 500 when storing it failed.
func respondSetting(w http.ResponseWriter, res settings.SetResult, err error) {
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, res)
	case errors.Is(err, settings.ErrUnknown) || errors.Is(err, settings.ErrInvalid):
		writeError(w, http.StatusBadRequest, err)
	default:
		writeError(w, http.StatusInternalServerError, err)
	}
}

func (a *API) launch(w http.ResponseWriter, r *http.Request) {
	var req LaunchRequest
	if !readJSON(w, r, &req) {
		return
	}
	s, err := a.rt.Launch(r.Context(), req)
	respond(w, s, err)
}

func (a *API) timeline(w http.ResponseWriter, r *http.Request) {
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("invalid limit %q", v))
			return
		}
		limit = n
	}
	rows, err := a.rt.Timeline(r.Context(), r.PathValue("id"), limit)
	respond(w, rows, err)
}

// DesktopAttached reports whether a desktop is attached over the event
// stream, so this process leaves the window and notifications to it.
func (a *API) DesktopAttached() bool { return a.desktops.Load() > 0 }

// events streams the bus as server-sent events. A new connection always
// starts with a full snapshot; one whose cursor is from an older generation
// is first told to resync, so it never silently misses events.
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, errors.New("streaming unsupported"))
		return
	}
	bus := a.rt.Bus()
	resync := false
	if c := r.URL.Query().Get("cursor"); c != "" {
		cur, err := ParseCursor(c)
		resync = err != nil || cur.Generation != bus.Generation()
	}
	// The snapshot is queued with the subscription, atomically: no change
	// can reach this client before it.
	sub := a.rt.Subscribe(subscriberBuffer, resync)
	defer bus.Unsubscribe(sub)
	if r.URL.Query().Get("client") == "desktop" {
		a.desktops.Add(1)
		defer a.desktops.Add(-1)
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	// Every write has a deadline: a client that stops reading (a `watch`
	// suspended with Ctrl-Z) is dropped once the socket's buffer is full
	// for streamWriteTimeout, instead of holding its handler and queue for
	// ever; it resyncs from a snapshot when it reconnects.
	rc := http.NewResponseController(w)
	deadline := func() { _ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) }
	deadline()
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-a.closing:
			return
		case m, ok := <-sub.C:
			if !ok {
				return
			}
			deadline()
			if err := writeSSE(w, m); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}

func writeSSE(w io.Writer, m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", m.Cursor, m.Type, b)
	return err
}

// apiError is the JSON body of every failed request: the message, and the
// kind (see ErrorKind) a client rebuilds the typed error from.
type apiError struct {
	Error string `json:"error"`
	Kind  string `json:"kind,omitempty"`
}

// statusOf maps an error's kind to its HTTP status.
func statusOf(err error) int {
	switch ErrorKind(err) {
	case "invalid":
		return http.StatusBadRequest
	case "not_found":
		return http.StatusNotFound
	case "conflict", "request_closed":
		return http.StatusConflict
	case "unavailable":
		return http.StatusServiceUnavailable
	case "forbidden":
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

func respond(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	kind := ErrorKind(err)
	if kind == "" && status == http.StatusBadRequest {
		kind = "invalid"
	}
	writeJSON(w, status, apiError{Error: err.Error(), Kind: kind})
}

// maxBody bounds a request body; prompts are text, not uploads (a pasted
// 4 MB log still fits).
const maxBody = 16 << 20

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("invalid request body: %w", err))
		return false
	}
	return true
}
