package claudeterm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Hook events are the optional second witness (`session-supervisor hooks
// install`): the CLI runs session-supervisor-hook on each observational
// event, which forwards the event's JSON to HookSocketName in the app's
// data directory (owner-only: the directory is, and the socket is too).
// An event wakes its session's observer at once, marks the session
// "hooked", and is evidence for the rule stack (hookrules.go).

// HookSocketName is the socket the hook forwards to, in the data directory.
const HookSocketName = "claude-hooks.sock"

// HookStateName is the listener's account of the events it received, in
// the data directory, for `hooks status` and `doctor`.
const HookStateName = "claude-hooks.json"

// maxHookEvent bounds one event read from the socket.
const maxHookEvent = 1 << 20

// HookEvent is what the rule stack reads from one hook event.
type HookEvent struct {
	Name             string `json:"hook_event_name"`
	SessionID        string `json:"session_id"`
	Cwd              string `json:"cwd"`
	NotificationType string `json:"notification_type"`
	Message          string `json:"message"`
	// StopFailure: error is the error's kind (rate_limit, …) and
	// error_details its text; another documented shape names them
	// error_type and error_message. Both are read.
	Error        string `json:"error"`
	ErrorDetails string `json:"error_details"`
	ErrorType    string `json:"error_type"`
	ErrorMessage string `json:"error_message"`
	Trigger      string `json:"trigger"`
	// At is when the app received it.
	At time.Time `json:"-"`
}

// ErrorCode is StopFailure's error kind, in either shape.
func (e HookEvent) ErrorCode() string {
	if e.ErrorType != "" {
		return e.ErrorType
	}
	return e.Error
}

// ErrorText is StopFailure's error text, in either shape.
func (e HookEvent) ErrorText() string {
	if e.ErrorMessage != "" {
		return e.ErrorMessage
	}
	if e.ErrorDetails != "" {
		return e.ErrorDetails
	}
	if e.ErrorType != "" {
		return e.Error
	}
	return ""
}

// HookState is the listener's account, written to HookStateName.
type HookState struct {
	PID int `json:"pid"`
	// Since is when the listener started.
	Since time.Time `json:"since"`
	// Events counts the events received since then; Last is the newest.
	Events int `json:"events"`
	// Refused counts the events whose sender did not run under the
	// session they named (hookpeer.go): dropped, not evidence.
	Refused int       `json:"refused,omitempty"`
	Last    time.Time `json:"last,omitzero"`
	// Sessions: the newest event per session (the most recent few).
	Sessions []HookSessionState `json:"sessions,omitempty"`
}

// HookSessionState is one session's account.
type HookSessionState struct {
	SessionID string    `json:"session_id"`
	Event     string    `json:"event"`
	At        time.Time `json:"at"`
	Count     int       `json:"count"`
}

// ReadHookState reads the listener's account from the data directory.
func ReadHookState(dataDir string) (HookState, error) {
	var st HookState
	b, err := os.ReadFile(filepath.Join(dataDir, HookStateName))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("reading %s: %w", HookStateName, err)
	}
	return st, nil
}

// Hook sessions remembered: the newest event of each, for the sessions
// observed now and the ones about to be discovered.
const maxHookSessions = 256

// hookHub holds the newest event of each session and wakes its observers.
type hookHub struct {
	mu        sync.Mutex
	last      map[string]HookEvent
	counts    map[string]int
	subs      map[*hookSub]struct{}
	state     HookState
	statePath string
	flushing  bool
}

func newHookHub(statePath string) *hookHub {
	return &hookHub{last: map[string]HookEvent{}, counts: map[string]int{}, subs: map[*hookSub]struct{}{},
		statePath: statePath, state: HookState{PID: os.Getpid(), Since: time.Now()}}
}

// hookSub is one observer's subscription: it is woken by the events of
// the session id it follows (which /clear changes), or of any session
// when sid is "*" (discovery).
type hookSub struct {
	hub *hookHub
	sid string
	ch  chan struct{}
}

func (h *hookHub) subscribe(sid string) *hookSub {
	if h == nil {
		return nil
	}
	s := &hookSub{hub: h, sid: sid, ch: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// C is the wake channel (nil without hooks: never ready).
func (s *hookSub) C() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.ch
}

func (s *hookSub) follow(sid string) {
	if s == nil {
		return
	}
	s.hub.mu.Lock()
	s.sid = sid
	s.hub.mu.Unlock()
}

func (s *hookSub) close() {
	if s == nil {
		return
	}
	s.hub.mu.Lock()
	delete(s.hub.subs, s)
	s.hub.mu.Unlock()
}

// latest is the newest event of session sid, if any arrived.
func (h *hookHub) latest(sid string) (HookEvent, bool) {
	if h == nil || sid == "" {
		return HookEvent{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.last[sid]
	return e, ok
}

// deliver records ev and wakes whoever follows its session.
func (h *hookHub) deliver(ev HookEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.last[ev.SessionID]; !ok && len(h.last) >= maxHookSessions {
		h.forgetOldestLocked()
	}
	h.last[ev.SessionID] = ev
	h.counts[ev.SessionID]++
	h.state.Events++
	h.state.Last = ev.At
	for s := range h.subs {
		if s.sid == ev.SessionID || s.sid == "*" {
			observe.Poke(s.ch)
		}
	}
	h.scheduleFlushLocked()
}

// refuse counts an event whose sender did not run under its session.
func (h *hookHub) refuse() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state.Refused++
	h.scheduleFlushLocked()
}

func (h *hookHub) forgetOldestLocked() {
	var oldest string
	for id, e := range h.last {
		if oldest == "" || e.At.Before(h.last[oldest].At) {
			oldest = id
		}
	}
	delete(h.last, oldest)
	delete(h.counts, oldest)
}

// stateFlushDelay batches the state file's writes: at most one a second,
// whatever the event rate.
const stateFlushDelay = time.Second

func (h *hookHub) scheduleFlushLocked() {
	if h.statePath == "" || h.flushing {
		return
	}
	h.flushing = true
	time.AfterFunc(stateFlushDelay, h.flush)
}

// flush writes the state file (temporary file and rename: `hooks status`
// never reads half of it).
func (h *hookHub) flush() {
	h.mu.Lock()
	h.flushing = false
	st := h.state
	for id, e := range h.last {
		st.Sessions = append(st.Sessions, HookSessionState{SessionID: id, Event: e.Name, At: e.At, Count: h.counts[id]})
	}
	path := h.statePath
	h.mu.Unlock()
	sort.Slice(st.Sessions, func(i, j int) bool { return st.Sessions[i].At.After(st.Sessions[j].At) })
	if len(st.Sessions) > 20 {
		st.Sessions = st.Sessions[:20]
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil || path == "" {
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return
	}
	_ = os.Rename(tmp, path)
}

// ErrHookSocketInUse: another listener (another app on the same data
// directory) holds the socket.
var ErrHookSocketInUse = errors.New("another process listens on the hook socket")

// listenHooks starts the hook socket when the source has one; events go
// to the hub until ctx ends. A failure leaves the source without hooks
// (the files still tell everything, only later).
func (s *Source) listenHooks(ctx context.Context) error {
	if s.HookSocket == "" {
		return nil
	}
	hub := s.hookHub()
	path := s.HookSocket
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return fmt.Errorf("%s: %w", path, ErrHookSocketInUse)
	}
	_ = os.Remove(path) // a socket left by an app that crashed
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listening for hook events: %w", err)
	}
	// The data directory is owner-only already; the socket is too, in
	// case the directory was widened.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("listening for hook events: %w", err)
	}
	hub.mu.Lock()
	hub.state = HookState{PID: os.Getpid(), Since: time.Now()}
	hub.scheduleFlushLocked()
	hub.mu.Unlock()
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	go serveHooks(l, hub, hookSender{sessionsDir: s.SessionsDir(), parent: parentPID, settle: hookSettle})
	return nil
}

// maxHookConns bounds the connections read at once; more are dropped (a
// hook event is evidence the files will repeat).
const maxHookConns = 16

func serveHooks(l net.Listener, hub *hookHub, sender hookSender) {
	defer os.Remove(l.Addr().String())
	sem := make(chan struct{}, maxHookConns)
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		select {
		case sem <- struct{}{}:
		default:
			c.Close()
			continue
		}
		go func() {
			defer func() { <-sem }()
			switch ev, ok, refused := readHookEvent(c, sender); {
			case ok:
				hub.deliver(ev)
			case refused:
				hub.refuse()
			}
		}()
	}
}

// readHookEvent reads one event: the hook writes the CLI's JSON and
// closes. Anything else (an empty probe from `hooks status`, garbage) is
// dropped.
// The sender's ancestry is read before the connection closes (its
// credentials go with it): refused says an event was read but its sender does not run
// under the session it names.
func readHookEvent(c net.Conn, sender hookSender) (ev HookEvent, ok, refused bool) {
	chain, known := sender.ancestry(c)
	// As long as the hook waits (its own deadline): a loaded machine may
	// take that long to write a Stop event's last message.
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(io.LimitReader(c, maxHookEvent))
	// Closed before the session file is waited for: the hook (and the CLI
	// that runs it) is released at once.
	c.Close()
	if err != nil || len(b) == 0 {
		return HookEvent{}, false, false
	}
	if json.Unmarshal(b, &ev) != nil || ev.SessionID == "" || ev.Name == "" {
		return HookEvent{}, false, false
	}
	if known && !sender.confirms(chain, ev.SessionID) {
		return HookEvent{}, false, true
	}
	ev.At = time.Now()
	return ev, true, false
}

// hookHub is the source's hub, nil when it has no hook socket.
func (s *Source) hookHub() *hookHub {
	if s.HookSocket == "" {
		return nil
	}
	s.hubOnce.Do(func() {
		s.hub = newHookHub(filepath.Join(filepath.Dir(s.HookSocket), HookStateName))
	})
	return s.hub
}
