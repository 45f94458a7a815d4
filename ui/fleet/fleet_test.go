package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/machines"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// backend records the commands it gets, as "machine:verb:id".
type backend struct {
	name  string
	mu    *sync.Mutex
	calls *[]string
}

func (b backend) rec(verb, id string) (sessions.Session, error) {
	b.mu.Lock()
	*b.calls = append(*b.calls, b.name+":"+verb+":"+id)
	b.mu.Unlock()
	return sessions.Session{ID: id, Name: b.name}, nil
}

func (b backend) Timeline(_ context.Context, id string, _ int) ([]localapi.TimelineRow, error) {
	b.rec("timeline", id)
	return []localapi.TimelineRow{{SessionID: id}}, nil
}
func (b backend) Launch(_ context.Context, req localapi.LaunchRequest) (sessions.Session, error) {
	return b.rec("launch", req.Cwd)
}
func (b backend) Send(_ context.Context, id, _ string) (sessions.Session, error) {
	return b.rec("send", id)
}
func (b backend) Interrupt(_ context.Context, id string) (sessions.Session, error) {
	return b.rec("interrupt", id)
}
func (b backend) Ack(_ context.Context, id string) (sessions.Session, error) { return b.rec("ack", id) }
func (b backend) Answer(_ context.Context, id, req string, allow bool, _ string) (sessions.Session, error) {
	return b.rec(fmt.Sprintf("answer(%s,%v)", req, allow), id)
}
func (b backend) NudgeNow(_ context.Context, id string) (sessions.Session, error) {
	return b.rec("nudge", id)
}
func (b backend) Forget(_ context.Context, id string, _ localapi.TimelineChoice) (sessions.Session, error) {
	return b.rec("forget", id)
}
func (b backend) Resume(_ context.Context, id string) (sessions.Session, error) {
	return b.rec("resume", id)
}
func (b backend) Handover(_ context.Context, id string, _ localapi.HandoverRequest) (localapi.Handover, error) {
	s, err := b.rec("handover", id)
	return localapi.Handover{Session: s}, err
}
func (b backend) SetRecovery(_ context.Context, id string, on bool) (sessions.Session, error) {
	return b.rec(fmt.Sprintf("recovery(%v)", on), id)
}
func (b backend) PublishSnapshot() { b.rec("snapshot", "") }

// List is the machine's settings mirror: one value naming the machine.
func (b backend) List() []localapi.SettingValue {
	return []localapi.SettingValue{{Key: "watchdog.tick_seconds", Value: b.name}}
}
func (b backend) UpdateMany(_ context.Context, changes []localapi.SettingChange) ([]localapi.SetResult, error) {
	b.rec("settings", changes[0].Key)
	return nil, nil
}

// remote is a machine's supervisor: the recording backend, a real bus, a
// link the test sets, and a Run that connects and publishes a snapshot.
type remote struct {
	backend
	bus  *localapi.Bus
	mu   sync.Mutex
	link localapi.LinkStatus
	snap []sessions.Session
}

func (r *remote) Bus() *localapi.Bus { return r.bus }
func (r *remote) Subscribe(buf int, _ bool) *localapi.Subscription {
	sub := r.bus.Subscribe(buf)
	r.bus.SendTo(sub, localapi.Message{Type: localapi.MsgSnapshot})
	return sub
}
func (r *remote) Link() localapi.LinkStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.link
}
func (r *remote) setLink(l localapi.LinkStatus) {
	r.mu.Lock()
	r.link = l
	r.mu.Unlock()
	r.bus.Publish(localapi.Message{Type: localapi.MsgLink, Link: &l})
}
func (r *remote) Run(ctx context.Context) {
	if r.snap != nil {
		r.setLink(localapi.LinkStatus{State: localapi.LinkConnected})
		r.bus.Publish(localapi.Message{Type: localapi.MsgSnapshot, Sessions: r.snap})
	}
	<-ctx.Done()
}

type world struct {
	fleet   *Fleet
	model   *model.Model
	remotes map[string]*remote
	calls   []string
	mu      sync.Mutex
	notes   map[string][]localapi.Message
}

func newWorld(t *testing.T, snaps map[string][]sessions.Session) *world {
	w := &world{model: model.New(), remotes: map[string]*remote{}, notes: map[string][]localapi.Message{}}
	w.fleet = New(Options{
		Local: backend{name: "local", mu: &w.mu, calls: &w.calls},
		Model: w.model,
		Connect: func(m machines.Machine) (Remote, func(), error) {
			if m.Host == "broken" {
				return nil, nil, errors.New("machines.ssh_command is empty")
			}
			r := &remote{backend: backend{name: m.Name, mu: &w.mu, calls: &w.calls}, bus: localapi.NewBus(), snap: snaps[m.Name]}
			w.mu.Lock()
			w.remotes[m.Name] = r
			w.mu.Unlock()
			return r, nil, nil
		},
		Notes: func(ctx context.Context, machine string, in <-chan localapi.Message) {
			for {
				select {
				case <-ctx.Done():
					return
				case m := <-in:
					w.mu.Lock()
					w.notes[machine] = append(w.notes[machine], m)
					w.mu.Unlock()
				}
			}
		},
	})
	t.Cleanup(w.fleet.Stop)
	return w
}

func (w *world) takeCalls() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := strings.Join(w.calls, " ")
	w.calls = nil
	return out
}

// Every action reaches the backend of the machine that owns the session,
// with the id that machine knows it by, and what it returns comes back
// keyed; Launch and the snapshot stay on this machine.
func TestActionsGoToTheOwningMachine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		w := newWorld(t, map[string][]sessions.Session{"devbox": {{ID: "s1"}}, "gpu": {{ID: "s1"}}})
		w.fleet.Sync(ctx, []machines.Machine{{Name: "devbox", Host: "d"}, {Name: "gpu", Host: "g"}})
		synctest.Wait()
		b := w.fleet.Backend()
		cases := []struct {
			name string
			do   func() (sessions.Session, error)
			call string
			key  string
		}{
			{"send here", func() (sessions.Session, error) { return b.Send(ctx, "s1", "hi") }, "local:send:s1", "s1"},
			{"send devbox", func() (sessions.Session, error) { return b.Send(ctx, "s1@devbox", "hi") }, "devbox:send:s1", "s1@devbox"},
			{"interrupt gpu", func() (sessions.Session, error) { return b.Interrupt(ctx, "s1@gpu") }, "gpu:interrupt:s1", "s1@gpu"},
			{"ack devbox", func() (sessions.Session, error) { return b.Ack(ctx, "s1@devbox") }, "devbox:ack:s1", "s1@devbox"},
			{"approve gpu", func() (sessions.Session, error) { return b.Answer(ctx, "s1@gpu", "req-7", true, "") }, "gpu:answer(req-7,true):s1", "s1@gpu"},
			{"deny here", func() (sessions.Session, error) { return b.Answer(ctx, "s1", "req-8", false, "") }, "local:answer(req-8,false):s1", "s1"},
			{"nudge devbox", func() (sessions.Session, error) { return b.NudgeNow(ctx, "s1@devbox") }, "devbox:nudge:s1", "s1@devbox"},
			{"resume gpu", func() (sessions.Session, error) { return b.Resume(ctx, "s1@gpu") }, "gpu:resume:s1", "s1@gpu"},
			{"forget devbox", func() (sessions.Session, error) {
				return b.Forget(ctx, "s1@devbox", localapi.KeepTimeline)
			}, "devbox:forget:s1", "s1@devbox"},
			{"stop recovering devbox", func() (sessions.Session, error) { return b.SetRecovery(ctx, "s1@devbox", false) }, "devbox:recovery(false):s1", "s1@devbox"},
			{"launch is here", func() (sessions.Session, error) {
				return b.Launch(ctx, localapi.LaunchRequest{Cwd: "/w"})
			}, "local:launch:/w", "/w"},
			{"launch on gpu", func() (sessions.Session, error) {
				return w.fleet.LaunchOn(ctx, "gpu", localapi.LaunchRequest{Cwd: "/g"})
			}, "gpu:launch:/g", "/g@gpu"},
			{"launch on this machine", func() (sessions.Session, error) {
				return w.fleet.LaunchOn(ctx, "", localapi.LaunchRequest{Cwd: "/h"})
			}, "local:launch:/h", "/h"},
		}
		for _, tc := range cases {
			s, err := tc.do()
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := w.takeCalls(); got != tc.call {
				t.Errorf("%s: calls %q, want %q", tc.name, got, tc.call)
			}
			if s.ID != tc.key {
				t.Errorf("%s: returned %q, want %q", tc.name, s.ID, tc.key)
			}
		}
		// A hand-over opens a terminal where the person is: a remote
		// machine's session is refused here, and never reaches it.
		if _, err := b.Handover(ctx, "s1@gpu", localapi.HandoverRequest{}); err == nil || !strings.Contains(err.Error(), "runs on machine gpu: it cannot be continued in a terminal from here") {
			t.Errorf("handover of a remote session: %v", err)
		}
		if got := w.takeCalls(); got != "" {
			t.Errorf("a remote hand-over reached %q", got)
		}
		if h, err := b.Handover(ctx, "s1", localapi.HandoverRequest{}); err != nil || w.takeCalls() != "local:handover:s1" || h.Session.ID != "s1" {
			t.Errorf("handover here: %+v, %v", h, err)
		}
		rows, err := b.Timeline(ctx, "s1@gpu", 10)
		if err != nil || len(rows) != 1 || rows[0].SessionID != "s1@gpu" || w.takeCalls() != "gpu:timeline:s1" {
			t.Errorf("timeline: %+v, %v", rows, err)
		}
		set, err := w.fleet.SettingsOf("devbox")
		if err != nil || set.List()[0].Value != "devbox" {
			t.Fatalf("devbox's settings: %v, %v", set, err)
		}
		if _, err := set.UpdateMany(ctx, []localapi.SettingChange{{Key: "watchdog.tick_seconds", Raw: "5"}}); err != nil || w.takeCalls() != "devbox:settings:watchdog.tick_seconds" {
			t.Errorf("a Save of devbox's settings: %v", err)
		}
		b.PublishSnapshot()
		if got := w.takeCalls(); got != "local:snapshot:" {
			t.Errorf("snapshot went to %q", got)
		}
		// The model holds both machines' s1 apart.
		if got := len(w.model.Sessions()); got != 2 {
			t.Errorf("model holds %d sessions, want s1@devbox and s1@gpu", got)
		}
	})
}

// An action for a machine that is down fails at once with the link's
// state, and never reaches that machine; one not configured says so.
func TestActionOnUnreachableMachineFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		w := newWorld(t, map[string][]sessions.Session{"devbox": {{ID: "s1"}}})
		w.fleet.Sync(ctx, []machines.Machine{{Name: "devbox", Host: "d"}})
		synctest.Wait()
		w.remotes["devbox"].setLink(localapi.LinkStatus{State: localapi.LinkReconnecting, Since: time.Now(), Up: time.Now().Add(-time.Minute),
			Error: "machine devbox: ssh: connect to host d port 22: Connection refused"})
		_, err := w.fleet.Backend().Send(ctx, "s1@devbox", "hi")
		if err == nil || !strings.Contains(err.Error(), "reconnecting since") || !strings.Contains(err.Error(), "Connection refused") {
			t.Errorf("send to a machine reconnecting: %v", err)
		}
		if _, err := w.fleet.LaunchOn(ctx, "devbox", localapi.LaunchRequest{Cwd: "/w"}); err == nil || !strings.Contains(err.Error(), "reconnecting since") {
			t.Errorf("launch on a machine reconnecting: %v", err)
		}
		if _, err := w.fleet.SettingsOf("devbox"); err == nil || !strings.Contains(err.Error(), "Connection refused") {
			t.Errorf("settings of a machine reconnecting: %v", err)
		}
		_, err = w.fleet.Backend().Ack(ctx, "s1@nowhere")
		if err == nil || !strings.Contains(err.Error(), "nowhere is not configured") {
			t.Errorf("ack on an unknown machine: %v", err)
		}
		if got := w.takeCalls(); got != "" {
			t.Errorf("calls %q reached a machine", got)
		}
	})
}

// machines.json edited while the app runs: a machine added starts, one
// removed stops and leaves the model with its sessions, one that cannot
// be connected shows its reason as its link.
func TestFollowPicksUpMachinesAddedAndRemoved(t *testing.T) {
	dir := t.TempDir()
	save := func(list ...machines.Machine) {
		if err := machines.Save(dir, list); err != nil {
			t.Fatal(err)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, map[string][]sessions.Session{"devbox": {{ID: "s1"}}, "gpu": {{ID: "s2"}}})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { w.fleet.Follow(ctx, dir, time.Second); close(done) }()
		synctest.Wait()
		if g := w.model.Groups(); g != nil {
			t.Fatalf("groups %v with no machines.json", g)
		}
		save(machines.Machine{Name: "devbox", Host: "d"}, machines.Machine{Name: "bad", Host: "broken"})
		time.Sleep(time.Second)
		synctest.Wait()
		if got := headings(w.model); got != "This machine|bad — unreachable: machines.ssh_command is empty|devbox — connected" {
			t.Fatalf("after add: %s", got)
		}
		save(machines.Machine{Name: "gpu", Host: "g"})
		time.Sleep(time.Second)
		synctest.Wait()
		if got := headings(w.model); got != "This machine|gpu — connected" {
			t.Fatalf("after rm devbox, bad and add gpu: %s", got)
		}
		if _, err := w.model.Session("s1@devbox"); err == nil {
			t.Error("a removed machine's session stayed")
		}
		if _, err := w.model.Session("s2@gpu"); err != nil {
			t.Error(err)
		}
		cancel()
		<-done
	})
}

func headings(m *model.Model) string {
	var out []string
	for _, g := range m.Groups() {
		out = append(out, g.Heading())
	}
	return strings.Join(out, "|")
}

// The notifier gets a machine's messages from its first connection on,
// keyed and named: the mirror's empty snapshot before it is not a
// snapshot of the machine.
func TestNotesStartAtTheFirstConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, map[string][]sessions.Session{"devbox": {{ID: "s1", NeedsAttention: true}}})
		w.fleet.Sync(t.Context(), []machines.Machine{{Name: "devbox", Host: "d"}})
		synctest.Wait()
		w.mu.Lock()
		got := w.notes["devbox"]
		w.mu.Unlock()
		if len(got) != 1 || got[0].Type != localapi.MsgSnapshot || got[0].Machine != "devbox" || len(got[0].Sessions) != 1 || got[0].Sessions[0].ID != "s1@devbox" {
			t.Fatalf("notes %+v, want devbox's one snapshot with s1@devbox", got)
		}
	})
}

func TestPlan(t *testing.T) {
	d := machines.Machine{Name: "devbox", Host: "d"}
	g := machines.Machine{Name: "gpu", Host: "g"}
	moved := machines.Machine{Name: "devbox", Host: "d2"}
	seen := d
	seen.LastSeen = time.Now()
	cases := []struct {
		name    string
		running map[string]machines.Machine
		want    []machines.Machine
		plan    string
	}{
		{"none", nil, nil, "start[] stop[]"},
		{"add", nil, []machines.Machine{g, d}, "start[devbox gpu] stop[]"},
		{"remove", map[string]machines.Machine{"devbox": d}, nil, "start[] stop[devbox]"},
		{"changed host restarts", map[string]machines.Machine{"devbox": d}, []machines.Machine{moved}, "start[devbox] stop[devbox]"},
		{"last seen is not a change", map[string]machines.Machine{"devbox": d}, []machines.Machine{seen}, "start[] stop[]"},
	}
	for _, tc := range cases {
		c := Plan(tc.running, tc.want)
		var start []string
		for _, m := range c.Start {
			start = append(start, m.Name)
		}
		if got := fmt.Sprintf("start%v stop%v", start, c.Stop); got != tc.plan {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.plan)
		}
	}
}
