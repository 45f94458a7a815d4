package localapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/enum"
	"github.com/session-supervisor/session-supervisor/services"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
)

// MsgLink is a local message from a Remote: the state of its link to the
// supervisor changed (connected, reconnecting). It never crosses the API.
const MsgLink MessageType = "link"

// LinkState is how a desktop attached over the API is connected to the
// supervisor.
type LinkState int

// The link states.
const (
	// LinkConnecting: not connected yet (the first attempt).
	LinkConnecting LinkState = iota
	// LinkConnected: the event stream is live.
	LinkConnected
	// LinkReconnecting: the supervisor stopped answering; retrying.
	LinkReconnecting
	// LinkIncompatible: the supervisor answers in an API version this app
	// cannot speak (another machine's older or newer app); retried slowly,
	// for the day one of them is updated.
	LinkIncompatible
)

var linkNames = [...]string{"connecting", "connected", "reconnecting", "incompatible"}

func (s LinkState) String() string { return enum.Name(s, "link_state", linkNames[:]) }

// MarshalText writes the lower-case name.
func (s LinkState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LinkStatus is the payload of MsgLink.
type LinkStatus struct {
	State LinkState `json:"state"`
	// Since is when the link entered State (for reconnecting, when it
	// went down: the attempts since do not move it).
	Since time.Time `json:"since"`
	// Up is when the link was last connected; zero when it never was
	// since the desktop started (the machine is unreachable, not
	// reconnecting).
	Up time.Time `json:"up,omitzero"`
	// Attempts counts the failed attempts since the link was last up.
	Attempts int `json:"attempts"`
	// NextAttempt is when the next attempt is due (reconnecting only).
	NextAttempt time.Time `json:"next_attempt,omitzero"`
	// Health is the supervisor's last health answer while connected.
	Health *Health `json:"health,omitempty"`
	// Error says, sanitized, why the link is down.
	Error string `json:"error,omitempty"`
}

// Sentence is the link as the desktop says it: "Supervisor not running —
// reconnecting in 4 s (attempt 3)".
func (l LinkStatus) Sentence(now time.Time) string {
	switch l.State {
	case LinkConnected:
		if l.Health != nil && l.Health.Status != "" && l.Health.Status != "ok" {
			return "Supervisor " + l.Health.Status
		}
		return "Connected to the supervisor"
	case LinkReconnecting:
		wait := max(l.NextAttempt.Sub(now).Round(time.Second), 0)
		return fmt.Sprintf("Supervisor not running — reconnecting in %s (attempt %d)", wait, l.Attempts)
	case LinkIncompatible:
		return "Supervisor speaks another API version: " + l.Error
	}
	return "Connecting to the supervisor…"
}

// eventSource is what a Remote needs from the API: Client implements it.
type eventSource interface {
	WatchAsDesktop(ctx context.Context, cursor string, fn func(Message) error) error
	Health(ctx context.Context) (Health, error)
}

// remoteBackoff is the wait before reconnect attempt n (1-based): quick at
// first, so a restarting supervisor is picked up at once, then every 10 s.
func remoteBackoff(attempt int) time.Duration {
	steps := [...]time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second}
	if attempt-1 < len(steps) {
		return steps[max(attempt-1, 0)]
	}
	return 10 * time.Second
}

// incompatibleRetry is the wait before asking again a supervisor that
// speaks another API version: only an update changes that.
const incompatibleRetry = time.Minute

// Remote is the supervisor as a desktop attached to it over the local API
// sees it (the supervisor runs headless, as a service, in another process).
// It keeps the sessions in memory from the event stream (a snapshot, then
// changes; a resync when the supervisor restarted), republishes every
// message on a local Bus so the tray, the window and the notifier read it
// exactly as they read an in-process Runtime, and sends commands as
// requests. Reads never wait on the network.
type Remote struct {
	c   *Client
	src eventSource
	bus *Bus
	log *slog.Logger
	// checkVersion refuses a supervisor that speaks another API version
	// (NewMachineRemote: another machine's app may be older or newer).
	checkVersion bool

	mu       sync.Mutex
	sessions map[string]sessions.Session
	settings []settings.Value
	cursor   string
	link     LinkStatus
}

// NewRemote returns a Remote over c; call Run to connect.
func NewRemote(c *Client, log *slog.Logger) *Remote {
	return newRemote(c, c, log)
}

// NewMachineRemote returns a Remote over c for another machine's
// supervisor: it also checks the API version at every connect and reports a
// version it cannot speak (LinkIncompatible) rather than guess at it.
func NewMachineRemote(c *Client, log *slog.Logger) *Remote {
	r := newRemote(c, c, log)
	r.checkVersion = true
	return r
}

func newRemote(c *Client, src eventSource, log *slog.Logger) *Remote {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Remote{c: c, src: src, bus: NewBus(), log: log, sessions: map[string]sessions.Session{},
		link: LinkStatus{State: LinkConnecting, Since: time.Now()}}
}

// Run keeps the link up until ctx is done: it streams events, and when the
// stream ends or fails it says so on the bus and reconnects with backoff,
// resuming from the last cursor.
func (r *Remote) Run(ctx context.Context) {
	attempts := 0
	var down, up time.Time
	for ctx.Err() == nil {
		state := LinkReconnecting
		h, err := r.src.Health(ctx)
		if err == nil || errors.Is(err, ErrUnavailable) {
			if verr := versionError(r.c, h); r.checkVersion && verr != nil {
				state, err = LinkIncompatible, verr
			} else {
				// A stalled supervisor still streams; the link shows its health.
				err = r.stream(ctx, h)
				if r.Link().State == LinkConnected {
					up = time.Now()
				}
				if err == nil {
					attempts = 0 // it was up: the next failure starts the backoff anew
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		attempts++
		if attempts == 1 {
			down = time.Now()
		}
		wait := remoteBackoff(attempts)
		if state == LinkIncompatible {
			wait = incompatibleRetry
		}
		msg := "the event stream ended"
		if err != nil {
			msg = sessions.SanitizeMessage(err.Error())
		}
		r.setLink(LinkStatus{State: state, Since: down, Up: up, Attempts: attempts,
			NextAttempt: time.Now().Add(wait), Error: msg})
		if !services.Sleep(ctx, wait) {
			return
		}
	}
}

// stream runs one connection: it returns nil when the stream ended after
// delivering at least its snapshot, or the error that ended it before.
func (r *Remote) stream(ctx context.Context, h Health) error {
	r.mu.Lock()
	cursor := r.cursor
	r.mu.Unlock()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var polls sync.WaitGroup
	defer polls.Wait()
	defer stop()
	got := false
	err := r.src.WatchAsDesktop(sctx, cursor, func(m Message) error {
		if !got {
			got = true
			hc := h
			since := time.Now()
			r.setLink(LinkStatus{State: LinkConnected, Since: since, Health: &hc})
			// A supervisor whose loop stalls still streams: its health
			// is re-read while connected, so the desktop can say so.
			polls.Add(1)
			go func() {
				defer polls.Done()
				r.pollHealth(sctx, since, hc.Status)
			}()
		}
		r.apply(m)
		return nil
	})
	if got && (err == nil || ctx.Err() != nil) {
		return nil
	}
	if err == nil {
		err = errors.New("the event stream ended before its snapshot")
	}
	return err
}

// healthEvery is how often a connected desktop re-reads the supervisor's health.
const healthEvery = 15 * time.Second

// pollHealth re-reads the health until ctx ends and publishes a change of
// its status (ok → stalled and back).
func (r *Remote) pollHealth(ctx context.Context, since time.Time, status string) {
	t := time.NewTicker(healthEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h, err := r.src.Health(ctx)
		if err != nil && !errors.Is(err, ErrUnavailable) {
			continue // the stream ending will say it
		}
		if h.Status != status {
			status = h.Status
			hc := h
			r.setLink(LinkStatus{State: LinkConnected, Since: since, Health: &hc})
		}
	}
}

// apply updates the mirror from one message and republishes it.
func (r *Remote) apply(m Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cursor = m.Cursor.String()
	switch m.Type {
	case MsgSnapshot:
		r.sessions = make(map[string]sessions.Session, len(m.Sessions))
		for _, s := range m.Sessions {
			r.sessions[s.ID] = s
		}
		if m.Settings != nil {
			r.settings = m.Settings
		}
	case MsgSession, MsgEscalation:
		switch {
		case m.Session == nil:
		case !m.Session.ArchivedAt.IsZero():
			// Archived: it leaves the mirrored list, as it leaves the app's.
			delete(r.sessions, m.Session.ID)
		default:
			r.sessions[m.Session.ID] = *m.Session
		}
	case MsgSettings:
		r.settings = m.Settings
	}
	r.bus.Publish(m)
}

func (r *Remote) setLink(l LinkStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.link = l
	ls := l
	r.bus.Publish(Message{Type: MsgLink, Link: &ls})
}

// Subscribe registers a subscriber on the local bus whose queue starts with
// the mirror as a snapshot (after a resync notice when resync is set),
// queued under the mirror's lock like Runtime.Subscribe, so no change can
// come before it.
func (r *Remote) Subscribe(buf int, resync bool) *Subscription {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := make([]sessions.Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		list = append(list, s.Clone())
	}
	SortSessions(list)
	sub := r.bus.Subscribe(buf)
	if resync {
		r.bus.SendTo(sub, Message{Type: MsgResync})
	}
	r.bus.SendTo(sub, Message{Type: MsgSnapshot, Sessions: list, Settings: r.settings})
	return sub
}

// Link is the current state of the link.
func (r *Remote) Link() LinkStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.link
}

// Bus is the local bus every message from the supervisor is republished on.
func (r *Remote) Bus() *Bus { return r.bus }

// Sessions is the mirrored list, in the order every list shows.
func (r *Remote) Sessions() []sessions.Session {
	r.mu.Lock()
	out := make([]sessions.Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		out = append(out, s.Clone())
	}
	r.mu.Unlock()
	SortSessions(out)
	return out
}

// Session is one mirrored session by id or unique id prefix.
func (r *Remote) Session(id string) (sessions.Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.sessions[id]; ok {
		return s.Clone(), nil
	}
	var found *sessions.Session
	for sid, s := range r.sessions {
		if id != "" && strings.HasPrefix(sid, id) {
			if found != nil {
				return sessions.Session{}, Errorf(ErrInvalid, "session id prefix %q is ambiguous", id)
			}
			s := s
			found = &s
		}
	}
	if found == nil {
		return sessions.Session{}, fmt.Errorf("%w %q", ErrNotFound, id)
	}
	return found.Clone(), nil
}

// PublishSnapshot republishes the mirror as a snapshot on the local bus.
func (r *Remote) PublishSnapshot() {
	list := r.Sessions()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bus.Publish(Message{Type: MsgSnapshot, Sessions: list})
}

// The commands go to the supervisor; their effect comes back on the stream.

func (r *Remote) Timeline(ctx context.Context, id string, limit int) ([]TimelineRow, error) {
	return r.c.Timeline(ctx, id, limit)
}

func (r *Remote) Launch(ctx context.Context, req LaunchRequest) (sessions.Session, error) {
	return r.c.Launch(ctx, req)
}

func (r *Remote) Send(ctx context.Context, id, prompt string) (sessions.Session, error) {
	return r.c.Send(ctx, id, prompt)
}

func (r *Remote) Interrupt(ctx context.Context, id string) (sessions.Session, error) {
	return r.c.Interrupt(ctx, id)
}

func (r *Remote) Ack(ctx context.Context, id string) (sessions.Session, error) {
	return r.c.Ack(ctx, id)
}

func (r *Remote) Answer(ctx context.Context, id, requestID string, allow bool, message string) (sessions.Session, error) {
	return r.c.Answer(ctx, id, requestID, allow, message)
}

func (r *Remote) Forget(ctx context.Context, id string, timeline storage.TimelineChoice) (sessions.Session, error) {
	return r.c.Forget(ctx, id, timeline)
}

func (r *Remote) SetRecovery(ctx context.Context, id string, on bool) (sessions.Session, error) {
	return r.c.SetRecovery(ctx, id, on)
}

func (r *Remote) NudgeNow(ctx context.Context, id string) (sessions.Session, error) {
	return r.c.NudgeNow(ctx, id)
}

func (r *Remote) Resume(ctx context.Context, id string) (sessions.Session, error) {
	return r.c.Resume(ctx, id)
}

// Handover stops a managed session of the supervisor to continue it in a
// terminal.
func (r *Remote) Handover(ctx context.Context, id string, req HandoverRequest) (Handover, error) {
	return r.c.Handover(ctx, id, req)
}

// List is the settings in force as the supervisor last published them
// (from memory: the window reads it to draw).
func (r *Remote) List() []settings.Value {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]settings.Value(nil), r.settings...)
}

// UpdateMany changes settings through the API; the supervisor publishes
// the result, which updates List.
func (r *Remote) UpdateMany(ctx context.Context, changes []SettingChange) ([]settings.SetResult, error) {
	return r.c.UpdateSettings(ctx, changes)
}

// SetSetting changes one setting through the API (the tray's Pause).
func (r *Remote) SetSetting(ctx context.Context, key, raw string) (settings.SetResult, error) {
	return r.c.SetSetting(ctx, key, raw)
}
