package localapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/testdir"
)

func TestDecide(t *testing.T) {
	const me = 1000
	// A small process tree: 1 ← 10 (a shell) ← 20 (an agent) ← 30 (its
	// tool's shell) ← 40 (the tool); 10 ← 50 (the user's CLI).
	parents := map[int]int{10: 1, 20: 10, 30: 20, 40: 30, 50: 10}
	parent := func(pid int) int { return parents[pid] }
	agent := sessions.Session{ID: "s1", Name: "fix the build", PID: 20, ProcessAlive: true}
	exited := sessions.Session{ID: "s2", Name: "old", PID: 30, ProcessAlive: false}
	tests := []struct {
		name string
		peer Peer
		list []sessions.Session
		want Access
		why  string
	}{
		{"unknown peer (no peer credentials on this platform)", Peer{}, []sessions.Session{agent}, Full, ""},
		{"another user", Peer{PID: 50, UID: 1001, Known: true}, nil, Refused, "uid 1001"},
		{"the user's shell", Peer{PID: 50, UID: me, Known: true}, []sessions.Session{agent}, Full, ""},
		{"a tool of an agent", Peer{PID: 40, UID: me, Known: true}, []sessions.Session{agent}, ReadOnly, "session fix the build (process 20)"},
		{"the agent itself", Peer{PID: 20, UID: me, Known: true}, []sessions.Session{agent}, ReadOnly, "process 20 runs under"},
		{"under an exited session's old pid", Peer{PID: 40, UID: me, Known: true}, []sessions.Session{exited}, Full, ""},
		{"no sessions", Peer{PID: 40, UID: me, Known: true}, nil, Full, ""},
		{"pid not visible (another pid namespace)", Peer{PID: 0, UID: me, Known: true}, []sessions.Session{agent}, Full, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := Decide(tt.peer, me, tt.list, parent)
			if got != tt.want || !strings.Contains(why, tt.why) {
				t.Errorf("Decide = %v %q, want %v containing %q", got, why, tt.want, tt.why)
			}
		})
	}
	// A parent cycle (a reused pid) ends the walk.
	loop := func(pid int) int { return map[int]int{7: 8, 8: 7}[pid] }
	if got, _ := Decide(Peer{PID: 7, UID: me, Known: true}, me, []sessions.Session{agent}, loop); got != Full {
		t.Errorf("a cycle: %v, want full", got)
	}
	for a := Full; a <= Refused; a++ {
		if strings.HasPrefix(a.String(), "access(") {
			t.Errorf("access %d has no name", int(a))
		}
	}
}

// fakeSupervisor serves what the guard test needs; the rest of the
// interface is never called.
type fakeSupervisor struct {
	Supervisor
	bus  *Bus
	mu   sync.Mutex
	list []sessions.Session
	acks int
}

func (f *fakeSupervisor) Bus() *Bus { return f.bus }
func (f *fakeSupervisor) Sessions() []sessions.Session {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.list
}
func (f *fakeSupervisor) Session(id string) (sessions.Session, error) {
	return sessions.Session{ID: id}, nil
}
func (f *fakeSupervisor) Ack(_ context.Context, id string) (sessions.Session, error) {
	f.mu.Lock()
	f.acks++
	f.mu.Unlock()
	return sessions.Session{ID: id}, nil
}

type fakeSettings struct {
	SettingsService
	updates int
}

func (f *fakeSettings) Update(_ context.Context, key, raw string) (settings.SetResult, error) {
	f.updates++
	return settings.SetResult{}, nil
}

// Over the real socket, with the kernel's peer credentials and the real
// process table: when this test process descends from a supervised
// session's agent (here its parent, `go test`, plays the agent), it may
// read but every change answers 403 and reaches nothing; when no session's
// agent is among its ancestors, the same requests go through.
func TestGuardOverTheSocket(t *testing.T) {
	if _, err := peerOf(nil); err != nil && strings.Contains(err.Error(), "not read on this platform") {
		t.Skip("this platform's sockets do not name their peer (Windows)")
	}
	dir := testdir.Short(t, "peer")
	sup := &fakeSupervisor{bus: NewBus()}
	settings := &fakeSettings{}
	api, err := Listen(sup, settings, dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	go api.Serve()
	t.Cleanup(func() { api.Close() })
	c := NewClient(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	sup.mu.Lock()
	sup.list = []sessions.Session{{ID: "s1", Name: "agent", PID: os.Getppid(), ProcessAlive: true}}
	sup.mu.Unlock()
	if _, err := c.Sessions(ctx); err != nil {
		t.Errorf("a read from under an agent: %v, want it served", err)
	}
	if _, err := c.Ack(ctx, "s1"); !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "runs under the agent of session agent") {
		t.Errorf("ack from under an agent: %v, want forbidden naming the session", err)
	}
	if _, err := c.SetSetting(ctx, "agents.claude.command", "/tmp/evil"); !errors.Is(err, ErrForbidden) {
		t.Errorf("settings set from under an agent: %v, want forbidden", err)
	}
	if sup.acks != 0 || settings.updates != 0 {
		t.Fatalf("a refused request reached the runtime: %d acks, %d setting updates", sup.acks, settings.updates)
	}

	sup.mu.Lock()
	sup.list = []sessions.Session{{ID: "s1", Name: "agent", PID: os.Getppid(), ProcessAlive: false}}
	sup.mu.Unlock()
	if _, err := c.Ack(ctx, "s1"); err != nil {
		t.Errorf("ack from the user: %v", err)
	}
	if _, err := c.SetSetting(ctx, "agents.claude.command", "/usr/bin/claude"); err != nil {
		t.Errorf("settings set from the user: %v", err)
	}
	if sup.acks != 1 || settings.updates != 1 {
		t.Errorf("the user's requests: %d acks, %d setting updates; want 1 and 1", sup.acks, settings.updates)
	}
}

func (f *fakeSupervisor) Subscribe(buf int, resync bool) *Subscription {
	sub := f.bus.Subscribe(buf)
	f.bus.SendTo(sub, Message{Type: MsgSnapshot, Sessions: f.Sessions()})
	return sub
}

// startFakeAPI serves a fake supervisor on a socket of its own.
func startFakeAPI(t *testing.T) (*fakeSupervisor, string) {
	t.Helper()
	dir := testdir.Short(t, "api")
	sup := &fakeSupervisor{bus: NewBus()}
	api, err := Listen(sup, &fakeSettings{}, dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	go api.Serve()
	t.Cleanup(func() { api.Close() })
	return sup, dir
}

// A subscriber that stops reading (a `watch` suspended with Ctrl-Z) is
// dropped once a write has been blocked for streamWriteTimeout: its handler
// and queue go, publishing goes on, and a client that comes back starts
// again from a snapshot.
func TestStoppedSubscriberIsDropped(t *testing.T) {
	old := streamWriteTimeout
	streamWriteTimeout = 200 * time.Millisecond
	t.Cleanup(func() { streamWriteTimeout = old })
	sup, dir := startFakeAPI(t)

	openStoppedStream(t, sup, dir)
	// Fill the socket's buffers with messages nobody reads.
	big := sessions.Session{ID: "s1", Evidence: strings.Repeat("x", 64<<10)}
	waitUntil(t, "the stopped subscriber to be dropped", func() bool {
		for range 8 {
			sup.bus.Publish(Message{Type: MsgSession, Session: &big})
		}
		n, _ := sup.bus.Stats()
		return n == 0
	})

	// Back again: a new stream starts with a snapshot.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errStop := errors.New("stop")
	var first MessageType
	err := NewClient(dir).Watch(ctx, "", func(m Message) error { first = m.Type; return errStop })
	if !errors.Is(err, errStop) || first != MsgSnapshot {
		t.Errorf("the client back: first message %q (%v), want a snapshot", first, err)
	}
}

// openStoppedStream opens an event stream that never reads what it is
// sent (a `watch` stopped with Ctrl-Z), once the bus has its subscriber.
func openStoppedStream(t *testing.T, sup *fakeSupervisor, dir string) {
	t.Helper()
	conn, err := net.Dial("unix", filepath.Join(dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte("GET /v1/events HTTP/1.1\r\nHost: supervisor\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the stream to subscribe", func() bool { n, _ := sup.bus.Stats(); return n == 1 })
}

// waitUntil polls cond (real I/O is behind it, not a clock synctest can
// drive) for at most 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// What a stopped subscriber can cost is bounded: 100 sessions changing
// state every second for five minutes (30,000 session messages of a
// realistic size, published as fast as the bus takes them) while a `watch`
// stopped with Ctrl-Z reads nothing leave the heap within 20 MB of where
// it started: its queue holds at most subscriberBuffer messages, the rest
// are dropped and repaired by the next snapshot.
func TestStoppedSubscriberMemoryIsBounded(t *testing.T) {
	sup, dir := startFakeAPI(t)
	openStoppedStream(t, sup, dir)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := range 30_000 {
		s := sessions.Session{ID: fmt.Sprintf("session-%03d", i%100), Name: "fix the flaky test", Agent: "claude",
			State: sessions.Working, Evidence: strings.Repeat("the model is working on it; ", 8)}
		sup.bus.Publish(Message{Type: MsgSession, Session: &s})
	}
	grown := int64(heap()) - int64(before)
	_, dropped := sup.bus.Stats()
	t.Logf("heap grew %d KB; %d messages dropped for the stopped subscriber", grown>>10, dropped)
	if grown > 20<<20 {
		t.Errorf("the heap grew %d MB with one stopped subscriber, want at most 20", grown>>20)
	}
	if dropped == 0 {
		t.Error("nothing was dropped: the stopped subscriber's queue is not bounded")
	}
}
