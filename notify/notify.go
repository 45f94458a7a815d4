// Package notify sends desktop notifications for what the user must know
// while away: a session that escalated (nothing automatic is left) and, behind
// a setting, a session that waits on them. It deduplicates per incident,
// rate-limits across sessions, sanitizes every text, and never storms after
// a restart: only live changes notify, never the state found at start.
package notify

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/textsafe"
)

// Sender delivers one notification (beeep.Notify in the app).
type Sender func(title, body string, icon []byte) error

// Notification is one decided notification.
type Notification struct {
	Key   string // the incident it belongs to, for dedup
	Title string
	Body  string
	// SessionID is the session it is about: clicking it opens that session.
	SessionID string
	// Terminal is set when that session runs in a terminal (the app did
	// not launch it and its process runs): a sender that supports actions
	// offers "Go to terminal".
	Terminal bool
	// RequestID is the permission request a managed session waits on: a
	// sender that supports actions offers Allow and Deny for exactly it.
	RequestID string
}

// inTerminal is whether s runs in a terminal one can go to: the same rule
// as the views' "Go to terminal" (view.Allows), which notify may not import.
func inTerminal(s sessions.Session) bool {
	return s.Source != sessions.Managed && s.PID > 0 && s.ProcessAlive
}

// maxBody bounds the body: a notification is a glance, not a report.
const maxBody = 180

// Decider decides, from consecutive session states, what deserves a
// notification. It is pure apart from its memory of what it has seen.
type Decider struct {
	// seen is the last state observed per session; a session absent from it
	// is being seen for the first time (at start) and never notifies.
	seen map[string]sessions.Session
	// sent holds the incident keys already notified.
	sent map[string]bool
}

// NewDecider returns a decider primed with the sessions as they are now, so
// conditions that already held before the app started do not notify.
func NewDecider(initial []sessions.Session) *Decider {
	d := &Decider{seen: map[string]sessions.Session{}, sent: map[string]bool{}}
	d.prime(initial)
	return d
}

// prime records sessions as already seen, their conditions as already
// notified.
func (d *Decider) prime(initial []sessions.Session) {
	for _, s := range initial {
		d.seen[s.ID] = s
		if s.NeedsAttention {
			d.sent[escalationKey(s)] = true
		}
		if k, ok := waitKey(s); ok {
			d.sent[k] = true
		}
	}
}

func escalationKey(s sessions.Session) string {
	return fmt.Sprintf("escalated/%s/%d", s.ID, s.TurnGeneration)
}

func waitKey(s sessions.Session) (string, bool) {
	if s.State != sessions.WaitingOnUser {
		return "", false
	}
	switch s.WaitReason {
	case sessions.WaitQuestion, sessions.WaitPlan, sessions.WaitPermission:
		return fmt.Sprintf("wait/%s/%d/%s", s.ID, s.TurnGeneration, s.WaitReason), true
	}
	return "", false
}

// Observe takes a session's new state and returns the notification it
// deserves, if any. waitingOnUser is the notify.waiting_on_user setting.
func (d *Decider) Observe(s sessions.Session, waitingOnUser bool) (Notification, bool) {
	prev, known := d.seen[s.ID]
	d.seen[s.ID] = s
	if !known {
		// First sight of a session that is not at start: a new session is
		// never already escalated, but it may already wait (a fast
		// permission prompt) — fall through with an empty previous state.
		prev = sessions.Session{}
	}
	if s.NeedsAttention && !prev.NeedsAttention {
		k := escalationKey(s)
		if !d.sent[k] {
			d.sent[k] = true
			return Notification{Key: k, Title: textsafe.Clean(s.DisplayName()) + " needs attention", Body: clip(sessions.SanitizeMessage(s.Evidence)), SessionID: s.ID, Terminal: inTerminal(s)}, true
		}
	}
	if k, ok := waitKey(s); ok && waitingOnUser && !d.sent[k] {
		d.sent[k] = true
		n := Notification{Key: k, Title: textsafe.Clean(s.DisplayName()) + " " + s.WaitReason.Asks(), Body: clip(sessions.SanitizeMessage(s.Evidence)), SessionID: s.ID, Terminal: inTerminal(s)}
		if p := s.Permission; p != nil && s.WaitReason == sessions.WaitPermission && s.Source == sessions.Managed && p.RequestID != "" {
			// Only a managed session's request can be answered by the app;
			// a terminal session's is answered where it runs.
			n.RequestID = p.RequestID
			if p.Tool != "" {
				n.Body = clip(sessions.PermissionQuestion(*p) + " " + n.Body)
			}
		}
		return n, true
	}
	return Notification{}, false
}

func clip(s string) string {
	if r := []rune(s); len(r) > maxBody {
		return string(r[:maxBody-1]) + "…"
	}
	return s
}

// Limiter allows at most Burst notifications per Window across all
// sessions; the Notifier holds the rest back until it allows again.
type Limiter struct {
	Burst  int
	Window time.Duration
	times  []time.Time
}

// Allow reports whether a notification may go out at now.
func (l *Limiter) Allow(now time.Time) bool {
	cut := now.Add(-l.Window)
	kept := l.times[:0]
	for _, t := range l.times {
		if t.After(cut) {
			kept = append(kept, t)
		}
	}
	l.times = kept
	if len(l.times) >= l.Burst {
		return false
	}
	l.times = append(l.times, now)
	return true
}

// flushEvery is how often Run offers the held notifications to the limiter
// when no message comes.
const flushEvery = 10 * time.Second

// Notifier delivers what the Decider decides, through the Limiter.
type Notifier struct {
	send Sender
	icon []byte
	log  *slog.Logger

	mu          sync.Mutex
	decider     *Decider
	limiter     Limiter
	unavailable bool // logged once: no notification service
	// rich, when set, sends instead of send, with the whole notification
	// (its session, for a click to open).
	rich func(Notification, []byte) error
	// machine names another machine in every title (SetMachine).
	machine string
	// gate, when set, is asked before sending: false means someone else
	// shows this notification (a desktop attached to this supervisor).
	gate func() bool
	// held are the notifications the limiter held back, oldest first:
	// delivered (one, or coalesced into one) as soon as it allows, unless
	// their session no longer needs what they say by then.
	held []Notification
	// startedAt, when set, is when this process started: the first
	// snapshot's sessions that changed after it are news, not history.
	startedAt time.Time
	// Sent counts delivered notifications (a coalesced one once), Held
	// the rate-limited ones held back, Deferred those left to an attached
	// desktop.
	Sent, Held, Failed, Deferred int
}

// current reports whether a held notification still says something true:
// its session still needs attention (an escalation) or still waits for
// the same thing.
func (d *Decider) current(note Notification) bool {
	s, ok := d.seen[note.SessionID]
	if !ok {
		return false
	}
	if note.Key == escalationKey(s) {
		return s.NeedsAttention
	}
	k, waiting := waitKey(s)
	return waiting && k == note.Key
}

// coalesce makes one notification of several held ones.
func coalesce(held []Notification) Notification {
	if len(held) == 1 {
		return held[0]
	}
	names := make([]string, len(held))
	for i, h := range held {
		names[i] = h.Title
	}
	return Notification{Key: "coalesced", Title: fmt.Sprintf("%d sessions need attention", len(held)),
		Body: clip(strings.Join(names, "; "))}
}

// SetRichSender makes the notifier send through fn, which gets the whole
// notification (a sender that reports clicks needs its session).
func (n *Notifier) SetRichSender(fn func(Notification, []byte) error) {
	n.mu.Lock()
	n.rich = fn
	n.mu.Unlock()
}

// SetGate makes the notifier ask gate before each notification; when it
// answers false the notification is left to someone else and counted as
// handled, so the same incident never notifies twice. The headless
// supervisor leaves notifications to an attached desktop this way.
func (n *Notifier) SetGate(gate func() bool) {
	n.mu.Lock()
	n.gate = gate
	n.mu.Unlock()
}

// primeHistory primes the decider with the first snapshot's sessions that
// have not changed since this process started, and returns the others:
// news to observe.
func (n *Notifier) primeHistory(list []sessions.Session) (news []sessions.Session) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var old []sessions.Session
	for _, s := range list {
		if !n.startedAt.IsZero() && s.StateChangedAt.After(n.startedAt) {
			news = append(news, s)
		} else {
			old = append(old, s)
		}
	}
	n.decider.prime(old)
	return news
}

// SetStartedAt says when this process started. The first snapshot primes
// the decider with what was already true (an incident of an earlier run was
// notified then); a session that changed after t escalated while this
// notifier was still subscribing (the desktop starts after the supervisor
// answers) and is notified, never swallowed by the priming.
func (n *Notifier) SetStartedAt(t time.Time) {
	n.mu.Lock()
	n.startedAt = t
	n.mu.Unlock()
}

// New returns a notifier primed with the sessions as they are at start.
func New(send Sender, icon []byte, initial []sessions.Session, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Notifier{
		send: send, icon: icon, log: log,
		decider: NewDecider(initial),
		limiter: Limiter{Burst: 3, Window: time.Minute},
	}
}

// SetMachine names the other machine whose sessions this notifier
// watches: every title starts with it ("devbox: fix tests needs
// attention"), so a notification says where the session runs.
func (n *Notifier) SetMachine(name string) {
	n.mu.Lock()
	n.machine = name
	n.mu.Unlock()
}

// Observe handles one session change.
func (n *Notifier) Observe(s sessions.Session, waitingOnUser bool, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	note, ok := n.decider.Observe(s, waitingOnUser)
	if !ok {
		return
	}
	if n.machine != "" {
		note.Title = textsafe.Clean(n.machine) + ": " + note.Title
	}
	if n.gate != nil && !n.gate() {
		n.Deferred++
		return
	}
	n.held = append(n.held, note)
	if !n.flushLocked(now) {
		n.Held++
		n.log.Info("notification held back by the rate limit", "title", note.Title, "held", len(n.held))
	}
}

// Flush delivers what the limiter held back once it allows: the held
// notifications still true, coalesced into one when there are several.
// Run calls it on every message and every flushEvery.
func (n *Notifier) Flush(now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.flushLocked(now)
}

// flushLocked reports whether it delivered.
func (n *Notifier) flushLocked(now time.Time) bool {
	kept := n.held[:0]
	for _, h := range n.held {
		if n.decider.current(h) {
			kept = append(kept, h)
		}
	}
	n.held = kept
	if len(n.held) == 0 || !n.limiter.Allow(now) {
		return false
	}
	note := coalesce(n.held)
	n.held = nil
	n.deliverLocked(note)
	return true
}

func (n *Notifier) deliverLocked(note Notification) {
	send := func() error { return n.send(note.Title, note.Body, n.icon) }
	if n.rich != nil {
		send = func() error { return n.rich(note, n.icon) }
	}
	if err := send(); err != nil {
		n.Failed++
		if !n.unavailable {
			n.unavailable = true
			n.log.Warn("no notification service; carrying on without desktop notifications", "err", err)
		}
		return
	}
	n.Sent++
}

// Run notifies from the supervisor's messages until ctx is done or in is
// closed; it owns the notifier's loop (main starts it in a goroutine and
// waits for it). Every session change, escalation and snapshot (which
// repairs missed messages) is observed. The first message, when it is a
// snapshot (a subscription starts with one), primes the notifier instead:
// what already held when the desktop started does not notify.
// waitingOnUser reads notify.waiting_on_user from memory.
func (n *Notifier) Run(ctx context.Context, in <-chan localapi.Message, waitingOnUser func() bool) {
	// primed: the notifier has seen what held when it started. An empty
	// snapshot does not prime it: a desktop attached to a supervisor
	// subscribes to its mirror of the supervisor, which is empty until
	// the supervisor's own snapshot arrives (a snapshot after it); taken
	// as news, what the supervisor had notified itself would notify again.
	primed := false
	flush := time.NewTicker(flushEvery)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-flush.C:
			n.Flush(now)
		case m, ok := <-in:
			if !ok {
				return
			}
			var list []sessions.Session
			switch {
			case !primed && m.Type == localapi.MsgSnapshot:
				list = n.primeHistory(m.Sessions)
				primed = len(m.Sessions) > 0
			case m.Type == localapi.MsgSession || m.Type == localapi.MsgEscalation:
				if m.Session != nil {
					list = []sessions.Session{*m.Session}
				}
			case m.Type == localapi.MsgSnapshot:
				list = m.Sessions
			}
			if m.Type == localapi.MsgSession || m.Type == localapi.MsgEscalation {
				// A session's change: the stream is live, a later
				// snapshot repairs it (a link's state, which a mirror
				// sends before the supervisor's snapshot, is not one).
				primed = true
			}
			if len(list) == 0 {
				continue
			}
			waiting := waitingOnUser()
			for _, s := range list {
				n.Observe(s, waiting, time.Now())
			}
		}
	}
}
