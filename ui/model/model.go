// Package model is the desktop's memory of the supervisor: the sessions as
// the last messages left them, the open session's recent timeline, and the
// few settings the desktop obeys. It is fed by supervisor messages — from
// the in-process bus or, the same messages, from the local API's event
// stream — so the window and the tray render from memory and never query
// the database (or the supervisor's lock) to redraw.
package model

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/view"
)

// TimelineLimit is how many rows of the followed session's timeline are
// kept: hours of a busy session, and what the window shows.
const TimelineLimit = 500

// ErrNotFound is returned for an id that matches no session.
var ErrNotFound = errors.New("no such session")

// Prefs are the settings the desktop itself shows or obeys.
type Prefs struct {
	// Paused is true when supervisor.enabled is off (the tray's check).
	Paused bool
	// NotifyWaitingOnUser is notify.waiting_on_user.
	NotifyWaitingOnUser bool
}

// LinkSentence says how the desktop is connected to the supervisor when
// that needs saying ("Supervisor not running — reconnecting in 4s …"), and
// "" when all is well (in process, or attached and healthy).
func (m *Model) LinkSentence(now time.Time) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.link
	if l.Since.IsZero() || l.State == localapi.LinkConnected && (l.Health == nil || l.Health.Status == "" || l.Health.Status == "ok") {
		return ""
	}
	return l.Sentence(now)
}

// PrefsFrom reads the desktop's prefs from the settings in force; a key
// missing from values keeps its value in prev.
func PrefsFrom(values []localapi.SettingValue, prev Prefs) Prefs {
	p := prev
	for _, v := range values {
		switch v.Key {
		case "supervisor.enabled":
			p.Paused = v.Value == "false"
		case "notify.waiting_on_user":
			p.NotifyWaitingOnUser = v.Value == "true"
		}
	}
	return p
}

// Model holds what the desktop shows. It is safe for concurrent use: one
// goroutine feeds it (Run or Apply) while Fyne's goroutine reads it.
type Model struct {
	mu    sync.Mutex
	byID  map[string]sessions.Session
	list  []sessions.Session // view order; nil when it must be rebuilt
	prefs Prefs
	// link is how an attached desktop is connected to the supervisor
	// (zero in process: always connected).
	link localapi.LinkStatus
	// today is the day's usage across every session as the supervisor
	// last told it (MsgUsage, a snapshot); nil until it does.
	today *localapi.DayUsage
	// machines are the other machines configured (SetMachines), by name;
	// links is each one's link. Their sessions are in byID under Key.
	machines []string
	links    map[string]localapi.LinkStatus

	// last is, per machine ("" for this one), the cursor of the last
	// message applied, to see a gap (missed messages) or a new generation
	// (the supervisor restarted). Each machine numbers its own stream.
	last map[string]localapi.Cursor

	// The followed session's timeline (the window's open detail). Only one
	// is kept: a desktop reads one timeline at a time, and keeping every
	// session's would grow with the whole history.
	follow  string
	version uint64                 // bumped whenever rows change
	rows    []localapi.TimelineRow // newest first, at most TimelineLimit
	loaded  bool                   // rows hold the stored history
	loading bool                   // a load was handed out and not yet set
	early   []localapi.TimelineRow // live rows that arrived while loading

	watchers map[chan struct{}]struct{}
}

// New returns an empty model; notifications of Prefs default to on, like
// the setting.
func New() *Model {
	return &Model{byID: map[string]sessions.Session{}, prefs: Prefs{NotifyWaitingOnUser: true}, watchers: map[chan struct{}]struct{}{},
		links: map[string]localapi.LinkStatus{}, last: map[string]localapi.Cursor{}}
}

// Watch returns a channel that receives a signal after every change (one
// pending signal at most: a watcher re-reads everything it shows), until
// ctx is done.
func (m *Model) Watch(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.watchers[ch] = struct{}{}
	m.mu.Unlock()
	context.AfterFunc(ctx, func() {
		m.mu.Lock()
		delete(m.watchers, ch)
		m.mu.Unlock()
	})
	return ch
}

// changedLocked signals every watcher without blocking.
func (m *Model) changedLocked() {
	for ch := range m.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Apply takes one message. A snapshot replaces every session (it is the
// authority: a session absent from it is gone); a session or escalation
// message replaces one; a timeline row is kept when it belongs to the
// followed session. A gap in the cursor or a new generation means rows may
// have been missed: the followed timeline is marked for a reload.
//
// A message from another machine (msg.Machine set, its sessions already
// keyed by Key) changes only that machine's part: its snapshot replaces its
// sessions alone, its link is its own, and its settings are not this
// desktop's. One from a machine no longer configured is dropped.
func (m *Model) Apply(msg localapi.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if msg.Machine != "" && !slices.Contains(m.machines, msg.Machine) {
		return
	}
	m.noteCursorLocked(msg.Machine, msg.Cursor)
	switch msg.Type {
	case localapi.MsgSnapshot:
		// Applied as a diff: a snapshot comes at least once a minute from
		// every machine and mostly repeats what the model holds; only a
		// difference wakes the views (a redraw, a tray menu re-sent).
		changed := m.applySnapshotLocked(msg)
		if msg.Settings != nil && msg.Machine == "" {
			if p := PrefsFrom(msg.Settings, m.prefs); p != m.prefs {
				m.prefs, changed = p, true
			}
		}
		if msg.Usage != nil && msg.Machine == "" {
			// A snapshot without it (a Remote's own republishing) keeps
			// what the supervisor said last. Another machine's day is its
			// own (its own prices and day), not added to this one's.
			if m.today == nil || !reflect.DeepEqual(*m.today, *msg.Usage) {
				d := *msg.Usage
				m.today, changed = &d, true
			}
		}
		if !changed {
			return
		}
	case localapi.MsgSession, localapi.MsgEscalation:
		if msg.Session == nil || !m.putLocked(*msg.Session) {
			return
		}
	case localapi.MsgTimeline:
		if msg.Event == nil || msg.Event.SessionID != m.follow || m.follow == "" {
			return
		}
		switch {
		case m.loaded:
			m.rows = capRows(mergeRows(m.rows, []localapi.TimelineRow{*msg.Event}))
			m.version++
		case m.loading:
			m.early = append(m.early, *msg.Event)
			return // nothing to show until the history is set
		default:
			return
		}
	case localapi.MsgResync:
		m.staleLocked()
	case localapi.MsgSettings:
		p := PrefsFrom(msg.Settings, m.prefs)
		if msg.Machine != "" || p == m.prefs {
			return
		}
		m.prefs = p
	case localapi.MsgUsage:
		if msg.Usage == nil || msg.Machine != "" || m.today != nil && reflect.DeepEqual(*m.today, *msg.Usage) {
			return
		}
		d := *msg.Usage
		m.today = &d
	case localapi.MsgLink:
		if msg.Link == nil {
			return
		}
		if msg.Machine != "" {
			if old, ok := m.links[msg.Machine]; ok && reflect.DeepEqual(old, *msg.Link) {
				return
			}
			m.links[msg.Machine] = *msg.Link
			break
		}
		if reflect.DeepEqual(m.link, *msg.Link) {
			return
		}
		m.link = *msg.Link
	default:
		return
	}
	m.changedLocked()
}

// noteCursorLocked marks the timeline stale when messages were missed: a
// new generation, or a sequence number that skips (a lagging subscriber
// drops messages until the next snapshot). Messages delivered to one
// subscriber only repeat the current number, which is not a gap.
func (m *Model) noteCursorLocked(machine string, c localapi.Cursor) {
	if c.Generation == "" {
		return
	}
	last := m.last[machine]
	if last.Generation != "" && (c.Generation != last.Generation || c.Seq > last.Seq+1) {
		m.staleLocked()
	}
	if c.Generation != last.Generation || c.Seq > last.Seq {
		m.last[machine] = c
	}
}

func (m *Model) staleLocked() {
	if m.loaded {
		m.loaded = false
		m.changedLocked()
	}
}

// DayUsage is one day's usage across every session, as the supervisor
// priced it (localapi.DayUsage).
type DayUsage = localapi.DayUsage

// Today is the day's usage the supervisor last told, and whether it told
// any.
func (m *Model) Today() (DayUsage, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.today == nil {
		return DayUsage{}, false
	}
	return *m.today, true
}

// Sessions is every session in the one view order (sessions/view). The
// slice is the caller's.
func (m *Model) Sessions() []sessions.Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.list == nil {
		m.list = make([]sessions.Session, 0, len(m.byID))
		for _, s := range m.byID {
			m.list = append(m.list, s)
		}
		view.Sort(m.list)
	}
	return slices.Clone(m.list)
}

// Session is one session by id or unique id prefix.
func (m *Model) Session(id string) (sessions.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.byID[id]; ok {
		return s.Clone(), nil
	}
	var found []sessions.Session
	for k, s := range m.byID {
		if id != "" && strings.HasPrefix(k, id) {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return sessions.Session{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	case 1:
		return found[0].Clone(), nil
	}
	return sessions.Session{}, fmt.Errorf("session id prefix %q is ambiguous (%d sessions)", id, len(found))
}

// Prefs are the settings the desktop obeys.
func (m *Model) Prefs() Prefs {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.prefs
}

// SetPrefs replaces them (read at start, after each snapshot and after the
// desktop changes one).
func (m *Model) SetPrefs(p Prefs) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p != m.prefs {
		m.prefs = p
		m.changedLocked()
	}
}

// Follow makes id the session whose timeline is kept, and reports whether
// its history must be loaded now (once per follow, and again after missed
// messages). Whoever gets true loads the rows (one query through the
// supervisor, off the UI goroutine) and hands them to SetTimeline.
func (m *Model) Follow(id string) (load bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id != m.follow {
		m.follow, m.rows, m.loaded, m.loading, m.early = id, nil, false, false, nil
		m.version++
	}
	if id == "" || m.loaded || m.loading {
		return false
	}
	m.loading = true
	return true
}

// SetTimeline hands over the loaded history of id (newest first). Rows that
// arrived live while it loaded are merged in, once each.
func (m *Model) SetTimeline(id string, rows []localapi.TimelineRow) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id != m.follow {
		return // the user moved on meanwhile
	}
	m.rows = capRows(mergeRows(slices.Clone(rows), m.early))
	m.early, m.loaded, m.loading = nil, true, false
	m.version++
	m.changedLocked()
}

// LoadFailed gives the load back, so the next Follow tries again.
func (m *Model) LoadFailed(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id == m.follow {
		m.loading = false
	}
}

// Timeline is the followed session's rows, newest first, and their
// version, which changes whenever the rows do (a view redraws only then).
func (m *Model) Timeline(id string) (rows []localapi.TimelineRow, version uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id != m.follow {
		return nil, 0
	}
	return slices.Clone(m.rows), m.version
}

// Put takes a session a command returned, so the view shows its result at
// once rather than when its message arrives. An older copy than the one
// held is ignored: the message may have been applied first.
func (m *Model) Put(s sessions.Session) {
	if s.ID == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.byID[s.ID]; ok && old.UpdatedAt.After(s.UpdatedAt) {
		return
	}
	if m.putLocked(s) {
		m.changedLocked()
	}
}

// putLocked keeps s, or drops it when it was archived: an archived session
// leaves the tray and the window's list (`ls --all` still shows it). It
// reports whether that changed what the model holds.
func (m *Model) putLocked(s sessions.Session) bool {
	old, had := m.byID[s.ID]
	if s.ArchivedAt.IsZero() {
		if had && sameSession(old, s) {
			return false
		}
		m.byID[s.ID] = s.Clone()
	} else {
		if !had {
			return false
		}
		delete(m.byID, s.ID)
	}
	m.list = nil
	return true
}

// sameSession reports whether a and b show the same. reflect.DeepEqual
// follows pointers, so two decodings of another machine's times in a zone
// of their own compare equal (TestSnapshotAppliedAsADiff).
func sameSession(a, b sessions.Session) bool { return reflect.DeepEqual(a, b) }

// applySnapshotLocked makes msg's machine's sessions those of the snapshot
// (the authority: a session absent from it is gone), the others kept, and
// reports whether anything changed. Sessions equal to those held are kept
// as they are, and the view order is rebuilt only after a change.
func (m *Model) applySnapshotLocked(msg localapi.Message) bool {
	changed := false
	in := make(map[string]bool, len(msg.Sessions))
	for _, s := range msg.Sessions {
		in[s.ID] = true
		if old, ok := m.byID[s.ID]; ok && sameSession(old, s) {
			continue
		}
		m.byID[s.ID] = s.Clone()
		changed = true
	}
	for k := range m.byID {
		if machine, _ := SplitKey(k); machine == msg.Machine && !in[k] {
			delete(m.byID, k)
			changed = true
		}
	}
	if changed {
		m.list = nil
	}
	return changed
}

// Run applies every message from in until ctx is done or in is closed.
// afterSnapshot, when set, runs after each snapshot is applied (main
// re-reads the desktop's settings there: a snapshot follows every settings
// change the desktop makes, and comes at least once a minute).
func (m *Model) Run(ctx context.Context, in <-chan localapi.Message, afterSnapshot func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-in:
			if !ok {
				return
			}
			m.Apply(msg)
			if msg.Type == localapi.MsgSnapshot && afterSnapshot != nil {
				afterSnapshot()
			}
		}
	}
}

// RowKey identifies a timeline row: its stored id, or for a live row
// published before it had one, its content.
func RowKey(r localapi.TimelineRow) string {
	if r.ID != 0 {
		return fmt.Sprintf("id:%d", r.ID)
	}
	return fmt.Sprintf("t:%s/%d/%s/%d/%s", r.SessionID, r.Time.UnixNano(), r.Kind, r.TurnGeneration, r.Detail)
}

// contentKey matches a live row without an id to its stored copy.
func contentKey(r localapi.TimelineRow) string {
	return fmt.Sprintf("%s/%d/%s/%d/%s", r.SessionID, r.Time.UnixNano(), r.Kind, r.TurnGeneration, r.Detail)
}

// mergeRows adds the rows of more absent from base (by id, or by content
// for rows without one) and orders the whole newest first. A live row that
// carries an id replaces its older copy (an action's outcome is filled in
// after its intent was stored).
func mergeRows(base, more []localapi.TimelineRow) []localapi.TimelineRow {
	byID := map[int64]int{}
	byContent := map[string]bool{}
	for i, r := range base {
		if r.ID != 0 {
			byID[r.ID] = i
		}
		byContent[contentKey(r)] = true
	}
	for _, r := range more {
		if i, ok := byID[r.ID]; ok && r.ID != 0 {
			base[i] = r
			continue
		}
		if byContent[contentKey(r)] {
			continue
		}
		byContent[contentKey(r)] = true
		base = append(base, r)
		if r.ID != 0 {
			byID[r.ID] = len(base) - 1
		}
	}
	slices.SortStableFunc(base, func(a, b localapi.TimelineRow) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		switch {
		case a.ID > b.ID:
			return -1
		case a.ID < b.ID:
			return 1
		}
		return 0
	})
	return base
}

func capRows(rows []localapi.TimelineRow) []localapi.TimelineRow {
	if len(rows) > TimelineLimit {
		return rows[:TimelineLimit]
	}
	return rows
}
