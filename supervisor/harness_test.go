package supervisor

// Shared helpers of the runtime and API tests: a real SQLite store in a
// temporary data directory, a Runtime whose "claude" agent is the scripted
// fakeclaude program (built by the test), and a recorder of everything the
// bus publishes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
	"github.com/session-supervisor/session-supervisor/sessions/claude"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// testSettings is the settings registry as the composition root builds it,
// with Claude Code alone, so agents.claude.command exists.
var testSettings = func() *settings.Registry {
	a := claude.Agent{}
	return settings.MustRegistry(settings.Agent{Name: a.Name(), DisplayName: a.DisplayName(), DefaultCommand: a.DefaultCommand()})
}()

// waitLimit bounds every wait for a condition; reaching it fails the test.
const waitLimit = 30 * time.Second

// TestMain removes the helper programs the tests built (agenttest.Built)
// when they end.
func TestMain(m *testing.M) { os.Exit(agenttest.RunTests(m)) }

// buildFakeClaude builds the scripted fake CLI once per test binary
// (agenttest.Built): every rig that launches runs the same program, and a
// go build per rig (the go command's start, its cache check and a link)
// was about 2 s of each of those tests (measured: 15 builds, 30 s of the
// package's run).
func buildFakeClaude(t testing.TB) string {
	t.Helper()
	return agenttest.Built(t, "github.com/session-supervisor/session-supervisor/sessions/claude/fakeclaude", "fakeclaude")
}

// fcStep is one step of a fakeclaude script (see its doc comment).
type fcStep map[string]any

func fcEmit(line string) fcStep {
	if !json.Valid([]byte(line)) {
		panic("fcEmit: invalid JSON: " + line)
	}
	return fcStep{"emit": json.RawMessage(line)}
}

func fcRaw(text string) fcStep          { return fcStep{"raw": text} }
func fcSleep(ms int) fcStep             { return fcStep{"sleep_ms": ms} }
func fcExit(code int) fcStep            { return fcStep{"exit": code} }
func fcBigLine(n int) fcStep            { return fcStep{"big_line_bytes": n} }
func fcWaitPermission(in string) fcStep { return fcStep{"wait_permission": json.RawMessage(in)} }

var fcKill = fcStep{"kill": true}

// Stream lines in the real wire format.
var (
	fcText       = fcEmit(`{"type":"assistant","message":{"model":"fake","content":[{"type":"text","text":"Done."}]},"parent_tool_use_id":null,"session_id":"$SESSION"}`)
	fcBash       = fcEmit(`{"type":"assistant","message":{"model":"fake","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]},"parent_tool_use_id":null,"session_id":"$SESSION"}`)
	fcBashResult = fcEmit(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"}]},"parent_tool_use_id":null,"session_id":"$SESSION"}`)
	fcResult     = fcEmit(`{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"$SESSION"}`)
)

// fakeSessionID is the agent session id fakeclaude announces.
const fakeSessionID = "fa4e0000-0000-4000-8000-000000000001"

// writeFakeScript writes a fakeclaude script: turns[n] plays for the n-th prompt.
func writeFakeScript(t testing.TB, turns ...[]fcStep) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"turns": turns})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// scriptAgent starts fakeclaude through the real adapter, with the script
// in its environment.
type scriptAgent struct {
	mu     sync.Mutex
	script string
}

func (a *scriptAgent) setScript(path string) {
	a.mu.Lock()
	a.script = path
	a.mu.Unlock()
}

func (a *scriptAgent) Start(_ context.Context, o StartOptions) (Process, error) {
	a.mu.Lock()
	env := append([]string{"FAKE_CLAUDE_SCRIPT=" + a.script}, o.Env...)
	a.mu.Unlock()
	p, err := claude.Start(claude.ProcessOptions{
		Options: agentkit.Options{Command: o.Command, Cwd: o.Cwd, Env: env, WriteTimeout: o.WriteTimeout},
		Launch:  claude.LaunchOptions{PermissionMode: o.PermissionMode, ResumeID: o.ResumeID},
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// recorder keeps every message one bus subscription receives.
type recorder struct {
	sub    *localapi.Subscription
	mu     sync.Mutex
	msgs   []localapi.Message
	notify chan struct{}
	done   chan struct{}
}

func recordBus(bus *localapi.Bus) *recorder {
	rec := &recorder{sub: bus.Subscribe(1 << 16), notify: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(rec.done)
		for m := range rec.sub.C {
			rec.mu.Lock()
			rec.msgs = append(rec.msgs, m)
			rec.mu.Unlock()
			select {
			case rec.notify <- struct{}{}:
			default:
			}
		}
	}()
	return rec
}

// catchUp waits until the recorder has received every message published up
// to c (a cursor read after the publication).
func (rec *recorder) catchUp(t testing.TB, c localapi.Cursor) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		rec.mu.Lock()
		n := len(rec.msgs)
		var last localapi.Cursor
		if n > 0 {
			last = rec.msgs[n-1].Cursor
		}
		rec.mu.Unlock()
		if last.Seq >= c.Seq {
			return
		}
		if rec.sub.Dropped() > 0 {
			t.Fatalf("the recorder dropped %d messages", rec.sub.Dropped())
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recorder is at seq %d, want %d", last.Seq, c.Seq)
		}
		time.Sleep(time.Millisecond)
	}
}

func (rec *recorder) messages() []localapi.Message {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.msgs)
}

// states is every published value of session id, in order.
func (rec *recorder) states(id string) []sessions.Session {
	return published(rec, func(m localapi.Message) (*sessions.Session, bool) {
		return m.Session, m.Type == localapi.MsgSession && m.Session.ID == id
	})
}

// rows is every timeline row published for session id, in order.
func (rec *recorder) rows(id string) []localapi.TimelineRow {
	return published(rec, func(m localapi.Message) (*localapi.TimelineRow, bool) {
		return m.Event, m.Type == localapi.MsgTimeline && m.Event.SessionID == id
	})
}

// published is what pick takes of each recorded message, in order.
func published[T any](rec *recorder, pick func(localapi.Message) (*T, bool)) []T {
	var out []T
	for _, m := range rec.messages() {
		if v, ok := pick(m); ok {
			out = append(out, *v)
		}
	}
	return out
}

// rig is a Runtime on a real store with fakeclaude as its claude agent.
type rig struct {
	t     *testing.T
	dir   string // data directory (short: it also holds the API socket)
	cwd   string // the sessions' working directory
	store *storage.Store
	// svc is the settings service over store, the runtime's and the API's.
	svc   *settings.Service
	rt    *Runtime
	agent *scriptAgent
	rec   *recorder
	fake  string // the fakeclaude binary
}

type rigConfig struct {
	// wrap, when set, wraps the store the runtime uses.
	wrap func(*storage.Store) Store
	// noAgent skips building fakeclaude (tests that launch nothing).
	noAgent bool
	// seed is saved to the store before the runtime boots.
	seed []sessions.Session
	// logger, when set, is the runtime's logger.
	logger *slog.Logger
	// external are sources of sessions the app did not launch.
	external []ExternalSource
}

func newRig(t *testing.T, cfg rigConfig) *rig {
	t.Helper()
	// A short path: unix socket paths are limited to ~108 bytes and
	// t.TempDir() embeds the test's name.
	dir := testdir.Short(t, "ss")
	st, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := &rig{t: t, dir: dir, cwd: t.TempDir(), store: st, agent: &scriptAgent{}, svc: mustSettings(t, st)}
	t.Cleanup(func() { g.store.Close() })
	ctx := context.Background()
	if !cfg.noAgent {
		g.fake = buildFakeClaude(t)
		if _, err := g.svc.Update(ctx, claude.CommandSetting, g.fake); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range cfg.seed {
		if err := st.SaveSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var store Store = st
	if cfg.wrap != nil {
		store = cfg.wrap(st)
	}
	g.rt = New(Options{Store: store, Agents: map[string]Agent{"claude": g.agent}, DefaultAgent: "claude", Logger: cfg.logger, Connectivity: unknownConnectivity, External: cfg.external,
		Settings: g.svc.Get})
	g.rec = recordBus(g.rt.Bus())
	t.Cleanup(g.stop)
	if err := g.rt.Boot(ctx); err != nil {
		t.Fatalf("Boot: %v", err)
	}
	return g
}

// stop kills every agent process still running and waits for their pumps.
func (g *rig) stop() {
	g.rt.mu.Lock()
	for _, e := range g.rt.sess {
		if e.proc != nil {
			_ = e.proc.Signal(syscall.SIGKILL)
		}
	}
	g.rt.mu.Unlock()
	done := make(chan struct{})
	go func() { g.rt.procs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		g.t.Error("agent processes did not exit after SIGKILL")
	}
	g.rt.Bus().Unsubscribe(g.rec.sub)
	<-g.rec.done
}

// launch starts a session playing the given script turns.
func (g *rig) launch(name string, turns ...[]fcStep) sessions.Session {
	g.t.Helper()
	g.agent.setScript(writeFakeScript(g.t, turns...))
	s, err := g.rt.Launch(context.Background(), localapi.LaunchRequest{Cwd: g.cwd, Name: name, Prompt: "do the thing"})
	if err != nil {
		g.t.Fatalf("Launch: %v", err)
	}
	return s
}

// wait waits until session id satisfies ok, re-checking whenever the bus
// publishes and at least every 50 ms, and fails the test at waitLimit.
func (g *rig) wait(id, what string, ok func(sessions.Session) bool) sessions.Session {
	g.t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		s, err := g.rt.Session(id)
		if err != nil {
			g.t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok(s) {
			// Rows reach the database after the change is visible: let
			// the writer finish so callers can read them.
			g.rt.Settle()
			// Changes are published before they are visible here: let the
			// recorder catch up so callers can inspect what was published.
			g.rec.catchUp(g.t, g.rt.Bus().Cursor())
			return s
		}
		select {
		case <-g.rec.notify:
		case <-tick.C:
		case <-deadline.C:
			g.t.Fatalf("timed out waiting for %s; the session is %s (wait %q): %s", what, s.State, s.WaitReason, s.Evidence)
		}
	}
}

func inReview(s sessions.Session) bool {
	return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview
}

// dbTimeline reads a session's timeline from st, oldest first.
func dbTimeline(t testing.TB, st interface {
	Timeline(context.Context, string, int) ([]storage.TimelineEvent, error)
}, id string) []storage.TimelineEvent {
	t.Helper()
	rows, err := st.Timeline(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rows, func(a, b storage.TimelineEvent) int { return int(a.ID - b.ID) })
	return rows
}

func rowKinds(rows []storage.TimelineEvent) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Kind
	}
	return out
}

// rowDetail decodes a row's detail.
func rowDetail(t testing.TB, row storage.TimelineEvent) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(row.Detail, &m); err != nil {
		t.Fatalf("row %d (%s) detail %s: %v", row.ID, row.Kind, row.Detail, err)
	}
	return m
}

// stateTransitions lists the state_changed rows as "from>to" (with ":reason").
func stateTransitions(t testing.TB, rows []storage.TimelineEvent) []string {
	t.Helper()
	var out []string
	for _, r := range rows {
		if r.Kind != "state_changed" {
			continue
		}
		d := rowDetail(t, r)
		s := fmt.Sprintf("%v>%v", d["from"], d["to"])
		if reason, ok := d["reason"]; ok {
			s += fmt.Sprintf(":%v", reason)
		}
		out = append(out, s)
	}
	return out
}

// failingStore fails SaveSessionWithEvents while asked to, like a full disk.
type failingStore struct {
	*storage.Store
	mu       sync.Mutex
	failNext int  // fail this many more writes
	failAll  bool // fail every write until cleared
	failed   int
}

var errDiskFull = errors.New("database or disk is full")

// SaveBatch fails like SaveSessionWithEvents: the runtime's writer uses it.
func (f *failingStore) SaveBatch(ctx context.Context, items []storage.BatchItem) ([][]int64, error) {
	if f.fail() {
		return nil, errDiskFull
	}
	return f.Store.SaveBatch(ctx, items)
}

func (f *failingStore) fail() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := f.failAll || f.failNext > 0
	if fail {
		f.failed++
		if f.failNext > 0 {
			f.failNext--
		}
	}
	return fail
}

func (f *failingStore) SaveSessionWithEvents(ctx context.Context, s sessions.Session, evs []storage.TimelineEvent) error {
	f.mu.Lock()
	fail := f.failAll || f.failNext > 0
	if fail {
		f.failed++
		if f.failNext > 0 {
			f.failNext--
		}
	}
	f.mu.Unlock()
	if fail {
		return errDiskFull
	}
	return f.Store.SaveSessionWithEvents(ctx, s, evs)
}

func (f *failingStore) set(failAll bool) {
	f.mu.Lock()
	f.failAll = failAll
	f.mu.Unlock()
}

func (f *failingStore) failures() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// settings is the app's settings service over the rig's store, as cmd run
// builds it: the one the runtime reads.
func (g *rig) settings(testing.TB) *settings.Service { return g.svc }

func mustSettings(t testing.TB, st *storage.Store) *settings.Service {
	t.Helper()
	svc, err := settings.NewService(context.Background(), testSettings, st)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
