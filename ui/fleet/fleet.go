// Package fleet is the desktop's other machines: one localapi.Remote per
// machine in machines.json (over ssh, machines.Client), each on goroutines
// of its own feeding the one desktop model under the machine's key
// (model.Key), and the Backend the window and the tray act through, which
// sends every action to the machine that owns the session. This machine's
// supervisor stays the desktop's own source, as it was before machines
// existed; the fleet only adds to it.
package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/machines"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// Backend is a supervisor's commands.
type Backend = localapi.Commands

// Remote is one machine's supervisor as the fleet uses it: a
// *localapi.Remote (NewMachineRemote), or a stand-in in tests.
type Remote interface {
	Backend
	Settings
	Run(ctx context.Context)
	Subscribe(buf int, resync bool) *localapi.Subscription
	Bus() *localapi.Bus
	Link() localapi.LinkStatus
}

var _ Remote = (*localapi.Remote)(nil)

// Settings are a machine's settings as its supervisor last published them
// (List reads the mirror, never the network) and a Save sent to it.
type Settings interface {
	List() []localapi.SettingValue
	UpdateMany(ctx context.Context, changes []localapi.SettingChange) ([]localapi.SetResult, error)
}

// Options wire a Fleet.
type Options struct {
	// Local is this machine's supervisor (the Runtime, or the Remote of an
	// attached desktop).
	Local Backend
	// Model is the desktop's model the machines' sessions go into.
	Model *model.Model
	// Connect returns the Remote of machine m (not yet running) and what
	// to release when it is stopped.
	Connect func(m machines.Machine) (Remote, func(), error)
	// Notes, when set, runs a machine's notifications from in (that
	// machine's messages, keyed, from its first connection on) until ctx
	// is done.
	Notes func(ctx context.Context, machine string, in <-chan localapi.Message)
	Log   *slog.Logger
}

// Fleet holds the running machines.
type Fleet struct {
	o       Options
	mu      sync.Mutex
	members map[string]*member
}

// member is one running machine.
type member struct {
	m       machines.Machine
	remote  Remote
	release func()
	cancel  context.CancelFunc
	loops   sync.WaitGroup
}

// The queues of a machine's subscriptions. A slow consumer loses only
// incremental messages, repaired by that machine's next snapshot; nothing
// a machine sends waits on another machine or on this one.
const (
	modelBuffer = 1024
	notesBuffer = 256
)

// New returns a fleet with no machine running yet (Sync starts them).
func New(o Options) *Fleet {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Fleet{o: o, members: map[string]*member{}}
}

// Change is what Sync does to bring the running machines to a list.
type Change struct {
	Start []machines.Machine
	Stop  []string
}

// Plan is the pure part of Sync: machines gone or changed (host, user,
// port, command) are stopped, new or changed ones started.
func Plan(running map[string]machines.Machine, want []machines.Machine) Change {
	var c Change
	for name, m := range running {
		w, ok := machines.Find(want, name)
		if !ok || !sameConnection(m, w) {
			c.Stop = append(c.Stop, name)
		}
	}
	for _, w := range want {
		m, ok := running[w.Name]
		if !ok || !sameConnection(m, w) {
			c.Start = append(c.Start, w)
		}
	}
	slices.Sort(c.Stop)
	slices.SortFunc(c.Start, func(a, b machines.Machine) int { return cmp.Compare(a.Name, b.Name) })
	return c
}

// sameConnection ignores LastSeen, which the CLI rewrites.
func sameConnection(a, b machines.Machine) bool {
	a.LastSeen, b.LastSeen = time.Time{}, time.Time{}
	return a == b
}

// Sync starts and stops machines so the running ones are list, and tells
// the model which machines there are.
func (f *Fleet) Sync(ctx context.Context, list []machines.Machine) {
	names := make([]string, len(list))
	for i, m := range list {
		names[i] = m.Name
	}
	f.mu.Lock()
	running := make(map[string]machines.Machine, len(f.members))
	for name, mb := range f.members {
		running[name] = mb.m
	}
	plan := Plan(running, list)
	var stopping []*member
	for _, name := range plan.Stop {
		stopping = append(stopping, f.members[name])
		delete(f.members, name)
	}
	f.mu.Unlock()
	stopAll(stopping)
	// The model drops a removed machine's sessions; a changed one's are
	// replaced by its next snapshot.
	f.o.Model.SetMachines(names)
	for _, m := range plan.Start {
		mb, err := f.start(ctx, m)
		if err != nil {
			f.o.Log.Warn("machine not started", "machine", m.Name, "err", err)
			f.o.Model.Apply(localapi.Message{Type: localapi.MsgLink, Machine: m.Name,
				Link: &localapi.LinkStatus{State: localapi.LinkReconnecting, Since: time.Now(), Error: err.Error()}})
			continue
		}
		f.mu.Lock()
		f.members[m.Name] = mb
		f.mu.Unlock()
	}
}

// start runs one machine: its link (Remote.Run), the model's feed and its
// notifications, each on its own goroutine. The subscriptions are made
// before the link starts, so none misses its first connection.
func (f *Fleet) start(ctx context.Context, m machines.Machine) (*member, error) {
	r, release, err := f.o.Connect(m)
	if err != nil {
		return nil, fmt.Errorf("machine %s: %w", m.Name, err)
	}
	mctx, cancel := context.WithCancel(ctx)
	mb := &member{m: m, remote: r, release: release, cancel: cancel}
	feed := r.Subscribe(modelBuffer, false)
	l := r.Link()
	f.o.Model.Apply(localapi.Message{Type: localapi.MsgLink, Machine: m.Name, Link: &l})
	mb.loops.Go(func() {
		defer r.Bus().Unsubscribe(feed)
		for {
			select {
			case <-mctx.Done():
				return
			case msg, ok := <-feed.C:
				if !ok {
					return
				}
				f.o.Model.Apply(Tag(m.Name, msg))
			}
		}
	})
	if f.o.Notes != nil {
		notes := r.Subscribe(notesBuffer, false)
		in := make(chan localapi.Message)
		mb.loops.Go(func() {
			defer r.Bus().Unsubscribe(notes)
			relayNotes(mctx, m.Name, notes.C, in)
		})
		mb.loops.Go(func() { f.o.Notes(mctx, m.Name, in) })
	}
	mb.loops.Go(func() { r.Run(mctx) })
	return mb, nil
}

// relayNotes hands the notifier a machine's messages from its first
// connection on: the mirror's snapshot before it (empty) would prime
// nothing, and the machine's real first snapshot would then notify every
// escalation that was already old.
func relayNotes(ctx context.Context, machine string, from <-chan localapi.Message, to chan<- localapi.Message) {
	connected := false
	for {
		var msg localapi.Message
		select {
		case <-ctx.Done():
			return
		case m, ok := <-from:
			if !ok {
				return
			}
			msg = m
		}
		if !connected {
			connected = msg.Type == localapi.MsgLink && msg.Link != nil && msg.Link.State == localapi.LinkConnected
			continue
		}
		select {
		case <-ctx.Done():
			return
		case to <- Tag(machine, msg):
		}
	}
}

func (mb *member) stop() {
	mb.cancel()
	mb.loops.Wait()
	if mb.release != nil {
		mb.release()
	}
}

// Stop stops every machine and waits for their goroutines.
func (f *Fleet) Stop() {
	f.mu.Lock()
	list := make([]*member, 0, len(f.members))
	for _, mb := range f.members {
		list = append(list, mb)
	}
	f.members = map[string]*member{}
	f.mu.Unlock()
	stopAll(list)
}

// stopAll stops machines all at once: each may wait a second for its ssh
// to exit, and the app's exit waits for them.
func stopAll(list []*member) {
	for _, mb := range list {
		mb.cancel()
	}
	for _, mb := range list {
		mb.stop()
	}
}

// Follow keeps the running machines those of dir's machines.json until ctx
// is done, re-reading the file when it changes (machines add and rm while
// the app runs), then stops them all. A file that cannot be read keeps
// the machines running as they are and is logged once per change.
func (f *Fleet) Follow(ctx context.Context, dir string, every time.Duration) {
	defer f.Stop()
	var seen fileStamp
	first := true
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if st := stampOf(filepath.Join(dir, machines.FileName)); first || st != seen {
			first, seen = false, st
			if list, err := machines.Load(dir); err != nil {
				f.o.Log.Warn("machines list not read; the machines running are kept", "err", err)
			} else {
				f.Sync(ctx, list)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// fileStamp tells a changed file from the same one without reading it.
type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
}

// Tag is a machine's message as the desktop holds it: every session id it
// carries keyed by model.Key, and the machine named.
func Tag(machine string, m localapi.Message) localapi.Message {
	m.Machine = machine
	if m.Session != nil {
		s := tagSession(machine, *m.Session)
		m.Session = &s
	}
	if m.Sessions != nil {
		list := make([]sessions.Session, len(m.Sessions))
		for i, s := range m.Sessions {
			list[i] = tagSession(machine, s)
		}
		m.Sessions = list
	}
	if m.Event != nil {
		ev := *m.Event
		ev.SessionID = model.Key(machine, ev.SessionID)
		m.Event = &ev
	}
	return m
}

func tagSession(machine string, s sessions.Session) sessions.Session {
	s.ID = model.Key(machine, s.ID)
	if s.ResumedFrom != "" {
		s.ResumedFrom = model.Key(machine, s.ResumedFrom)
	}
	return s
}

// ErrRemoteTerminal is why a remote session's terminal cannot be brought
// forward: it is on another machine's screen.
var ErrRemoteTerminal = errors.New("its terminal is on another machine: a terminal there cannot be brought forward from here")

// route is the backend owning the session keyed key, and its id there. An
// action for a machine whose link is down fails at once with the link's
// state, never waiting on ssh.
func (f *Fleet) route(key string) (Backend, string, string, error) {
	machine, id := model.SplitKey(key)
	if machine == "" {
		return f.o.Local, id, "", nil
	}
	r, err := f.connected(machine)
	if err != nil {
		return nil, "", machine, err
	}
	return r, id, machine, nil
}

// connected is the Remote of a configured machine whose link is up, or
// why there is none: a machine that is down fails at once, with the link's
// state, never waiting on ssh.
func (f *Fleet) connected(machine string) (Remote, error) {
	f.mu.Lock()
	mb := f.members[machine]
	f.mu.Unlock()
	if mb == nil {
		return nil, fmt.Errorf("machine %s is not configured any more", machine)
	}
	if l := mb.remote.Link(); l.State != localapi.LinkConnected {
		return nil, fmt.Errorf("machine %s is %s", machine, model.LinkWords(machine, l))
	}
	return mb.remote, nil
}

// LaunchOn starts a session on machine ("" for this one); the session
// comes back keyed as the desktop holds it.
func (f *Fleet) LaunchOn(ctx context.Context, machine string, req localapi.LaunchRequest) (sessions.Session, error) {
	if machine == "" {
		return f.o.Local.Launch(ctx, req)
	}
	r, err := f.connected(machine)
	if err != nil {
		return sessions.Session{}, err
	}
	s, err := r.Launch(ctx, req)
	return keep(machine, s, err)
}

// SettingsOf is another machine's settings, while its link is up (a
// machine down has none to show: its last published values may be stale).
func (f *Fleet) SettingsOf(machine string) (Settings, error) {
	return f.connected(machine)
}

// keep keys a session a machine returned.
func keep(machine string, s sessions.Session, err error) (sessions.Session, error) {
	if err != nil {
		return s, err
	}
	if machine != "" {
		s = tagSession(machine, s)
	}
	return s, nil
}

// Backend is the desktop's Backend over every machine.
func (f *Fleet) Backend() Backend { return router{f} }

type router struct{ f *Fleet }

func (r router) act(key string, do func(Backend, string) (sessions.Session, error)) (sessions.Session, error) {
	b, id, machine, err := r.f.route(key)
	if err != nil {
		return sessions.Session{}, err
	}
	s, err := do(b, id)
	return keep(machine, s, err)
}

func (r router) Timeline(ctx context.Context, key string, limit int) ([]localapi.TimelineRow, error) {
	b, id, machine, err := r.f.route(key)
	if err != nil {
		return nil, err
	}
	rows, err := b.Timeline(ctx, id, limit)
	for i := range rows {
		rows[i].SessionID = model.Key(machine, rows[i].SessionID)
	}
	return rows, err
}

// Launch starts a session on this machine (another machine's through
// LaunchOn, which the New session dialog uses when one is chosen).
func (r router) Launch(ctx context.Context, req localapi.LaunchRequest) (sessions.Session, error) {
	return r.f.o.Local.Launch(ctx, req)
}

func (r router) Send(ctx context.Context, key, prompt string) (sessions.Session, error) {
	return r.act(key, func(b Backend, id string) (sessions.Session, error) { return b.Send(ctx, id, prompt) })
}

func (r router) Interrupt(ctx context.Context, key string) (sessions.Session, error) {
	return r.act(key, func(b Backend, id string) (sessions.Session, error) { return b.Interrupt(ctx, id) })
}

func (r router) Ack(ctx context.Context, key string) (sessions.Session, error) {
	return r.act(key, func(b Backend, id string) (sessions.Session, error) { return b.Ack(ctx, id) })
}

func (r router) Answer(ctx context.Context, key, requestID string, allow bool, message string) (sessions.Session, error) {
	return r.act(key, func(b Backend, id string) (sessions.Session, error) {
		return b.Answer(ctx, id, requestID, allow, message)
	})
}

func (r router) NudgeNow(ctx context.Context, key string) (sessions.Session, error) {
	return r.act(key, func(b Backend, id string) (sessions.Session, error) { return b.NudgeNow(ctx, id) })
}

func (r router) Forget(ctx context.Context, key string, timeline localapi.TimelineChoice) (sessions.Session, error) {
	return r.act(key, func(b Backend, id string) (sessions.Session, error) { return b.Forget(ctx, id, timeline) })
}

func (r router) Resume(ctx context.Context, key string) (sessions.Session, error) {
	return r.act(key, func(b Backend, id string) (sessions.Session, error) { return b.Resume(ctx, id) })
}

// Handover continues a session of this machine in a terminal. One of
// another machine cannot be: its terminal would open there, not where the
// person is, so it is refused with the way to do it on that machine.
func (r router) Handover(ctx context.Context, key string, req localapi.HandoverRequest) (localapi.Handover, error) {
	if machine, id := model.SplitKey(key); machine != "" {
		return localapi.Handover{}, fmt.Errorf("session %s runs on machine %s: it cannot be continued in a terminal from here (run `session-supervisor handover %s` on %s)",
			sessions.ShortID(id), machine, sessions.ShortID(id), machine)
	}
	return r.f.o.Local.Handover(ctx, key, req)
}

func (r router) SetRecovery(ctx context.Context, key string, on bool) (sessions.Session, error) {
	return r.act(key, func(b Backend, id string) (sessions.Session, error) { return b.SetRecovery(ctx, id, on) })
}

// PublishSnapshot republishes this machine's sessions (after a settings
// change here; the other machines' settings are their own).
func (r router) PublishSnapshot() { r.f.o.Local.PublishSnapshot() }
