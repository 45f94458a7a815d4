package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// These tests drive the real loop (Runtime.Run, Tick, the executor, Apply and
// Reconcile) through hours of fake time inside a testing/synctest bubble.
// The agent and the store are in-memory fakes on purpose:
//
//   - a goroutine blocked reading a real agent's stdout pipe is not "durably
//     blocked" in synctest's sense, so the bubble's clock could not advance
//     past it and synctest.Wait would not return;
//   - SQLite's I/O is not what these tests check: the real store is tested in
//     storage (and what it costs per transition in BenchmarkTick1000SQLite),
//     the real stream decoding in sessions/claude, and both together in the
//     end-to-end runs. Here the question is only what the loop decides, when,
//     and in what order it records and dispatches it.
//
// Conventions: the bubble's clock starts at midnight; a session is launched
// at fake time 0 and Run starts at 0 too, so with the default 15 s tick the
// loop ticks at exact multiples of 15 s. The test (playing the agent) acts at
// instants off that grid (…:07, …:01), so there is never a tie between a
// tick and an event, and the order is the same on every run.

// --- the journal: one order for the store and the agent ---

// journal is one ordered log shared by the fake store and the fake agent, so
// a test can check that an action's intent row was written before the agent
// saw the action (the intent-before-dispatch rule).
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(line string) {
	if j == nil {
		return
	}
	j.mu.Lock()
	j.lines = append(j.lines, line)
	j.mu.Unlock()
}

func (j *journal) index(line string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Index(j.lines, line)
}

// --- the in-memory store ---

// memStore implements Store (and the optional PruneEvents) in memory. It
// keeps every timeline row in write order and validates rows the way the
// SQLite store does, so a malformed row is a test failure here too.
type memStore struct {
	j *journal

	mu       sync.Mutex
	settings settings.Settings
	sessions map[string]sessions.Session
	rows     []storage.TimelineEvent
	nextID   int64
	// keepRows false only counts rows: the benchmarks write millions.
	keepRows bool
	written  int
	saves    int
	// pruneGate, when set, holds PruneEvents until it is closed, to prove
	// that a slow prune does not hold up the loop.
	pruneGate chan struct{}
	prunes    []pruneCall
}

type pruneCall struct {
	at, cutoff time.Time
	deleted    int64
}

var _ Store = (*memStore)(nil)
var _ pruner = (*memStore)(nil)

func newMemStore(j *journal) *memStore {
	return &memStore{j: j, settings: settings.Defaults(), sessions: map[string]sessions.Session{}, keepRows: true}
}

func checkMemRow(ev storage.TimelineEvent) error {
	switch {
	case ev.SessionID == "":
		return errors.New("timeline row with no session id")
	case ev.Kind == "":
		return fmt.Errorf("timeline row for %s with no kind", ev.SessionID)
	case ev.Time.IsZero():
		return fmt.Errorf("timeline row %s with a zero time", ev.Kind)
	case len(ev.Detail) > 0 && !json.Valid(ev.Detail):
		return fmt.Errorf("timeline row %s: detail is not JSON", ev.Kind)
	}
	return nil
}

func (m *memStore) appendLocked(ev storage.TimelineEvent) int64 {
	m.nextID++
	ev.ID = m.nextID
	m.written++
	if m.keepRows {
		m.rows = append(m.rows, ev)
		m.j.add("row:" + ev.Kind)
	}
	return ev.ID
}

func (m *memStore) SaveSessionWithEvents(_ context.Context, s sessions.Session, events []storage.TimelineEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range events {
		ev := events[i]
		if ev.SessionID == "" {
			ev.SessionID = s.ID
		}
		if ev.SessionID != s.ID {
			return fmt.Errorf("row %s belongs to %s, not %s", ev.Kind, ev.SessionID, s.ID)
		}
		if err := checkMemRow(ev); err != nil {
			return err
		}
	}
	m.saves++
	m.sessions[s.ID] = s.Clone()
	for _, ev := range events {
		if ev.SessionID == "" {
			ev.SessionID = s.ID
		}
		m.appendLocked(ev)
	}
	return nil
}

func (m *memStore) AppendEvent(_ context.Context, ev storage.TimelineEvent) (int64, error) {
	if err := checkMemRow(ev); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.appendLocked(ev), nil
}

func (m *memStore) SetEventOutcome(_ context.Context, id int64, outcome string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.keepRows {
		return nil
	}
	for i := range m.rows {
		if m.rows[i].ID == id {
			m.rows[i].Detail = editDetail(m.rows[i].Detail, func(d *sessions.TimelineDetail) { d.Outcome = outcome })
			return nil
		}
	}
	return fmt.Errorf("no row %d", id)
}

func (m *memStore) PendingIntents(context.Context) ([]storage.TimelineEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []storage.TimelineEvent
	for _, r := range m.rows {
		if rowField(r, "outcome") == storage.OutcomePending {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *memStore) ListSessions(context.Context) ([]sessions.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]sessions.Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		out = append(out, s.Clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (m *memStore) Timeline(_ context.Context, id string, limit int) ([]storage.TimelineEvent, error) {
	rows := m.timeline(id)
	slices.Reverse(rows) // newest first, like the real store
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, nil
}

// currentSettings is what setSettings last set: the runtime's
// Options.Settings, as the settings service's Get is the app's.
func (m *memStore) currentSettings() settings.Settings {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.settings
}

func (m *memStore) PruneEvents(ctx context.Context, olderThan time.Time) (int64, error) {
	m.mu.Lock()
	gate := m.pruneGate
	m.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := m.rows[:0]
	for _, r := range m.rows {
		if !r.Time.Before(olderThan) {
			kept = append(kept, r)
		}
	}
	n := int64(len(m.rows) - len(kept))
	m.rows = kept
	m.prunes = append(m.prunes, pruneCall{at: time.Now(), cutoff: olderThan, deleted: n})
	return n, nil
}

func (m *memStore) pruneCalls() []pruneCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.prunes)
}

// setSettings changes the settings the loop reads, as `settings set` would.
func (m *memStore) setSettings(f func(*settings.Settings)) {
	m.mu.Lock()
	f(&m.settings)
	m.mu.Unlock()
}

// timeline returns a session's rows in write order ("" = every session).
func (m *memStore) timeline(id string) []storage.TimelineEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []storage.TimelineEvent
	for _, r := range m.rows {
		if id == "" || r.SessionID == id {
			out = append(out, r)
		}
	}
	return out
}

func (m *memStore) kinds(id string) []string {
	var out []string
	for _, r := range m.timeline(id) {
		out = append(out, r.Kind)
	}
	return out
}

// rowsOf returns a session's rows of one kind, in write order.
func (m *memStore) rowsOf(id, kind string) []storage.TimelineEvent {
	var out []storage.TimelineEvent
	for _, r := range m.timeline(id) {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func rowField(r storage.TimelineEvent, key string) string {
	var m map[string]any
	if json.Unmarshal(r.Detail, &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}

// --- the fake agent ---

// agentCall is one thing the supervisor (or the user) sent to the agent.
type agentCall struct {
	What string // prompt, interrupt, compact, signal, answer, close_input
	Text string // the prompt's text or the signal's name
	At   time.Time
}

// fakeAgent implements Agent: every Start returns a new fakeProc. The test
// plays the agent through the procs.
type fakeAgent struct {
	j *journal
	// quiet procs only count calls (benchmarks).
	quiet bool

	mu     sync.Mutex
	starts []StartOptions
	procs  []*fakeProc
}

func (a *fakeAgent) Start(_ context.Context, opts StartOptions) (Process, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := newFakeProc(1001+len(a.procs), a.j)
	p.quiet = a.quiet
	a.starts = append(a.starts, opts)
	a.procs = append(a.procs, p)
	a.j.add(fmt.Sprintf("agent:start resume=%q", opts.ResumeID))
	return p, nil
}

func (a *fakeAgent) proc(i int) *fakeProc {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i < 0 {
		i += len(a.procs)
	}
	if i < 0 || i >= len(a.procs) {
		return nil
	}
	return a.procs[i]
}

func (a *fakeAgent) startOptions() []StartOptions {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.starts)
}

// calls returns what every process of the agent received, in order.
func (a *fakeAgent) calls() []agentCall {
	a.mu.Lock()
	procs := slices.Clone(a.procs)
	a.mu.Unlock()
	var out []agentCall
	for _, p := range procs {
		out = append(out, p.received()...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// fakeProc implements Process over channels. Events is buffered so the test
// can push a few events and then let the pump drain them with synctest.Wait.
type fakeProc struct {
	pid    int
	j      *journal
	events chan sessions.Event
	quiet  bool

	mu     sync.Mutex
	calls  []agentCall
	ncalls int
	exited bool
	// gone is a process that died without its exit reaching the runtime:
	// stdout stays open (an orphaned grandchild holds it), so Events never
	// closes. Only a liveness probe can tell.
	gone bool
	// unprobeable is a process the platform's probe cannot tell about.
	unprobeable bool
	code        int
	signal      string
}

var _ Process = (*fakeProc)(nil)

func newFakeProc(pid int, j *journal) *fakeProc {
	return &fakeProc{pid: pid, j: j, events: make(chan sessions.Event, 16)}
}

func (p *fakeProc) record(what, text string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ncalls++
	if p.quiet {
		return nil
	}
	if p.exited || p.gone {
		if what == "signal" {
			return os.ErrProcessDone
		}
		return syscall.EPIPE // a dead agent's stdin
	}
	p.calls = append(p.calls, agentCall{What: what, Text: text, At: time.Now()})
	p.j.add("agent:" + what)
	return nil
}

func (p *fakeProc) PID() int                      { return p.pid }
func (p *fakeProc) Events() <-chan sessions.Event { return p.events }
func (p *fakeProc) SendPrompt(text string) error  { return p.record("prompt", text) }
func (p *fakeProc) Interrupt() error              { return p.record("interrupt", "") }
func (p *fakeProc) Compact() error                { return p.record("compact", "/compact") }
func (p *fakeProc) CloseInput() error             { return p.record("close_input", "") }
func (p *fakeProc) Signal(sig os.Signal) error    { return p.record("signal", sig.String()) }
func (p *fakeProc) SkippedLines() int             { return 0 }
func (p *fakeProc) StderrTail() string            { return "" }
func (p *fakeProc) Wait() (int, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code, p.signal, nil
}
func (p *fakeProc) AnswerPermission(perm sessions.Permission, allow bool, _ string) error {
	return p.record("answer", fmt.Sprintf("%s allow=%v", perm.Tool, allow))
}

// Alive is the liveness probe: false once the process exited, or vanished
// with its exit lost.
func (p *fakeProc) Alive() (alive, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unprobeable {
		return false, false
	}
	return !p.exited && !p.gone, true
}

func (p *fakeProc) received() []agentCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// exit ends the process: its stdout closes and Wait reports code/signal.
func (p *fakeProc) exit(code int, signal string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return
	}
	p.exited, p.code, p.signal = true, code, signal
	close(p.events)
}

// vanish kills the process without its exit reaching the runtime.
func (p *fakeProc) vanish() {
	p.mu.Lock()
	p.gone = true
	p.mu.Unlock()
}

// --- the harness ---

const agentSessionID = "agent-session-7"

// loopHarness is one runtime under test inside a bubble.
type loopHarness struct {
	t     *testing.T
	j     *journal
	store *memStore
	agent *fakeAgent
	rt    *Runtime
	start time.Time
	// rec sees every bus message (a buffer large enough never to drop).
	rec    *recorder
	cancel context.CancelFunc
	done   chan struct{}
}

// newLoopHarness builds a runtime over a memStore whose settings are the
// defaults adjusted by set. It must be called inside a bubble.
func newLoopHarness(t *testing.T, set func(*settings.Settings)) *loopHarness {
	t.Helper()
	j := &journal{}
	st := newMemStore(j)
	if set != nil {
		st.setSettings(set)
	}
	ag := &fakeAgent{j: j}
	h := &loopHarness{t: t, j: j, store: st, agent: ag, start: time.Now()}
	// The machine's own connectivity must not leak into fake time: unknown
	// unless a test says otherwise.
	// The fake plays every agent: the runtime names none, and a test can
	// launch a session of each (launchAgent).
	agents := map[string]Agent{}
	for _, name := range everyAgent {
		agents[name] = ag
	}
	h.rt = New(Options{Store: st, Agents: agents, DefaultAgent: "claude", Connectivity: unknownConnectivity, Settings: st.currentSettings})
	h.record()
	return h
}

// record subscribes to h.rt's bus and keeps every message (h.messages)
// until stopRecording.
func (h *loopHarness) record() { h.rec = recordBus(h.rt.Bus()) }

// stopRecording ends the subscription and waits for its reader.
func (h *loopHarness) stopRecording() {
	h.rt.Bus().Unsubscribe(h.rec.sub)
	<-h.rec.done
}

// run starts the loop, as main does after Boot.
func (h *loopHarness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		h.rt.Run(ctx)
	}()
	synctest.Wait()
}

// stop ends the loop and every fake process, so the bubble can end with no
// goroutine left behind.
func (h *loopHarness) stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
	}
	for i := 0; ; i++ {
		p := h.agent.proc(i)
		if p == nil {
			break
		}
		p.exit(0, "")
	}
	synctest.Wait()
	h.stopRecording()
}

// messages returns the bus messages seen so far (after the loop settled).
func (h *loopHarness) messages(typ localapi.MessageType) []localapi.Message {
	synctest.Wait()
	var out []localapi.Message
	for _, msg := range h.rec.messages() {
		if msg.Type == typ {
			out = append(out, msg)
		}
	}
	return out
}

// everyAgent names the agents the fake plays.
var everyAgent = []string{"claude", "codex", "gemini", "opencode", "copilot"}

// launch starts a managed Claude session with its first prompt (turn 1)
// and has the agent announce its session id, all at the current instant.
func (h *loopHarness) launch() (sessions.Session, *fakeProc) {
	h.t.Helper()
	return h.launchAgent("claude")
}

// wantEscalations fails the test unless n escalation messages were
// published.
func (h *loopHarness) wantEscalations(n int) {
	h.t.Helper()
	if got := len(h.messages(localapi.MsgEscalation)); got != n {
		h.t.Fatalf("%d escalation messages published, want %d", got, n)
	}
}

// launchRunning launches a session and starts the loop, the opening of
// most loop tests: the session's id and its process.
func (h *loopHarness) launchRunning() (string, *fakeProc) {
	h.t.Helper()
	s, p := h.launch()
	h.run()
	return s.ID, p
}

// launchAgent is launch for a session of the named agent.
func (h *loopHarness) launchAgent(agent string) (sessions.Session, *fakeProc) {
	h.t.Helper()
	s, err := h.rt.Launch(context.Background(), localapi.LaunchRequest{Agent: agent, Cwd: os.TempDir(), Prompt: "refactor the parser"})
	if err != nil {
		h.t.Fatalf("Launch: %v", err)
	}
	p := h.agent.proc(-1)
	h.emit(p, sessions.Event{Kind: sessions.EvSessionInit, AgentSessionID: agentSessionID})
	return s, p
}

// until sleeps to fake time start+d and lets everything settle.
func (h *loopHarness) until(d time.Duration) {
	h.t.Helper()
	if now := h.elapsed(); d < now {
		h.t.Fatalf("until(%v): already at %v", d, now)
	}
	time.Sleep(time.Until(h.start.Add(d)))
	synctest.Wait()
}

func (h *loopHarness) elapsed() time.Duration { return time.Since(h.start) }

// emit plays the agent: one stream event, applied before emit returns.
func (h *loopHarness) emit(p *fakeProc, evs ...sessions.Event) {
	for _, ev := range evs {
		p.events <- ev
	}
	synctest.Wait()
}

func (h *loopHarness) session(id string) sessions.Session {
	h.t.Helper()
	s, err := h.rt.Session(id)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// wantState checks the state and the wait reason (NoWait unless waiting).
func (h *loopHarness) wantState(id string, want sessions.State, wait sessions.WaitReason) sessions.Session {
	h.t.Helper()
	s := h.session(id)
	if s.State != want || s.WaitReason != wait {
		h.t.Fatalf("at %v: state %v (%v), want %v (%v); evidence %q", h.elapsed(), s.State, s.WaitReason, want, wait, s.Evidence)
	}
	return s
}

func (h *loopHarness) wantKinds(id string, want ...string) {
	h.t.Helper()
	if got := h.store.kinds(id); !slices.Equal(got, want) {
		h.t.Fatalf("at %v: timeline kinds\n got %q\nwant %q", h.elapsed(), got, want)
	}
}

// at returns fake time start+d, for comparing recorded times.
func (h *loopHarness) at(d time.Duration) time.Time { return h.start.Add(d) }

// callsOf filters the agent's calls by what.
func callsOf(calls []agentCall, what string) []agentCall {
	var out []agentCall
	for _, c := range calls {
		if c.What == what {
			out = append(out, c)
		}
	}
	return out
}

// launchKinds is the timeline of a launch: the process, the first prompt,
// and Idle → Working.
var launchKinds = []string{"process_started", "prompt_sent", core.TimelineStateChanged}

// afterLaunch is a launch's timeline followed by more.
func afterLaunch(more ...string) []string { return append(slices.Clone(launchKinds), more...) }

// wantOutcomes checks that every intent row of id has its outcome recorded.
func (h *loopHarness) wantOutcomes(id string) {
	h.t.Helper()
	for _, r := range h.store.timeline(id) {
		switch r.Kind {
		case core.TimelineStallInterrupt, core.TimelineNudgeSent, core.TimelineEscalated, core.TimelineOverflowRedrive:
		case core.TimelineRateLimitDrain, core.TimelineAuthResume:
			if rowField(r, "action") == "" {
				continue // the observation that scheduled it, not an action
			}
		default:
			continue
		}
		if got := rowField(r, "outcome"); got != "ok" {
			h.t.Errorf("%s row %d (%s): outcome %q, want ok", r.Kind, r.ID, rowField(r, "message"), got)
		}
	}
}

// --- 1. the full stall story ---

// TestLoopStallSuspectHealInterruptNudge runs a turn that goes silent, turns
// Suspect exactly at stall_suspect_minutes, heals on a genuine event (but not
// on usage counters), goes silent again to the hard limit, is interrupted,
// aborts, is nudged, and completes — about three hours of fake time.
func TestLoopStallSuspectHealInterruptNudge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil) // the defaults: 15 s tick, 10 / 150 min
		defer h.stop()
		id, p := h.launchRunning()

		// Usage counters at 5 min are not activity: the stall clock stays at 0.
		h.until(5*time.Minute + 7*time.Second)
		h.emit(p, sessions.Event{Kind: sessions.EvMetrics})
		if got := h.session(id).LastEventAt; !got.Equal(h.at(0)) {
			t.Fatalf("a metrics-only event moved the stall clock to %v", got.Sub(h.start))
		}

		// Just before the threshold (the last tick was 9:45): still Working.
		h.until(9*time.Minute + 59*time.Second)
		h.wantState(id, sessions.Working, sessions.NoWait)
		// The tick at exactly 10:00 marks it.
		h.until(10*time.Minute + time.Second)
		sus := h.wantState(id, sessions.Suspect, sessions.NoWait)
		if !sus.StateChangedAt.Equal(h.at(10 * time.Minute)) {
			t.Fatalf("Suspect at %v, want at 10m0s", sus.StateChangedAt.Sub(h.start))
		}
		for _, want := range []string{"10 min silent", "pid 1001 alive"} {
			if !strings.Contains(sus.Evidence, want) {
				t.Errorf("Suspect evidence %q lacks %q", sus.Evidence, want)
			}
		}

		// Usage counters do not heal Suspect either, nor move its clock.
		h.until(12*time.Minute + 7*time.Second)
		h.emit(p, sessions.Event{Kind: sessions.EvMetrics})
		if got := h.wantState(id, sessions.Suspect, sessions.NoWait); !got.LastEventAt.Equal(h.at(0)) {
			t.Fatalf("a metrics-only event moved the stall clock to %v", got.LastEventAt.Sub(h.start))
		}

		// A genuine event does, and restarts the clock.
		healAt := 14*time.Minute + 7*time.Second
		h.until(healAt)
		h.emit(p, sessions.Event{Kind: sessions.EvActivity, Detail: "assistant text"})
		h.wantState(id, sessions.Working, sessions.NoWait)

		// Silent again: Suspect at the first tick at or after 24:07.
		h.until(24*time.Minute + 14*time.Second)
		h.wantState(id, sessions.Working, sessions.NoWait)
		h.until(24*time.Minute + 16*time.Second)
		h.wantState(id, sessions.Suspect, sessions.NoWait)

		// The hard limit counts from the last genuine event: 14:07 + 150 min,
		// so the interrupt goes out at the 164:15 tick and not before.
		h.until(164*time.Minute + 14*time.Second)
		if n := len(callsOf(p.received(), "interrupt")); n != 0 {
			t.Fatalf("interrupted %d time(s) before the hard limit", n)
		}
		h.until(164*time.Minute + 16*time.Second)
		ints := callsOf(p.received(), "interrupt")
		if len(ints) != 1 || !ints[0].At.Equal(h.at(164*time.Minute+15*time.Second)) {
			t.Fatalf("interrupts %+v, want one at 164m15s", ints)
		}
		if h.j.index("row:"+core.TimelineStallInterrupt) > h.j.index("agent:interrupt") {
			t.Fatal("the interrupt reached the agent before its intent was recorded")
		}

		// The agent answers the interrupt with an abort.
		h.until(164*time.Minute + 20*time.Second)
		h.emit(p, sessions.Event{Kind: sessions.EvTurnAborted, Detail: "aborted_streaming"})
		h.wantState(id, sessions.Interrupted, sessions.NoWait)

		// The next tick nudges on the live process: turn 2.
		h.until(164*time.Minute + 31*time.Second)
		prompts := callsOf(p.received(), "prompt")
		if len(prompts) != 2 || prompts[1].Text != core.NudgeText || !prompts[1].At.Equal(h.at(164*time.Minute+30*time.Second)) {
			t.Fatalf("prompts %+v, want the first prompt and the nudge at 164m30s", prompts)
		}
		if w := h.wantState(id, sessions.Working, sessions.NoWait); w.TurnGeneration != 2 {
			t.Fatalf("turn %d after the nudge, want 2", w.TurnGeneration)
		}

		h.until(165*time.Minute + 7*time.Second)
		h.emit(p, sessions.Event{Kind: sessions.EvActivity}, sessions.Event{Kind: sessions.EvTurnCompleted})
		h.until(180 * time.Minute)
		done := h.wantState(id, sessions.WaitingOnUser, sessions.WaitReview)
		if done.Nudge != (sessions.NudgeBudget{}) || done.Supervision != (sessions.Supervision{}) {
			t.Errorf("after completion: nudge %+v supervision %+v, want both refilled/cleared", done.Nudge, done.Supervision)
		}

		h.wantKinds(id, afterLaunch(
			core.TimelineMarkedSuspect,     // 10:00
			core.TimelineStateChanged,      // 14:07 Suspect → Working (a genuine event)
			core.TimelineMarkedSuspect,     // 24:15
			core.TimelineStallInterrupt,    // 164:15
			core.TimelineMarkedInterrupted, // 164:20 the abort (cause "abort")
			core.TimelineStateChanged,      // 164:20 → Interrupted
			core.TimelineNudgeSent,         // 164:30
			core.TimelineStateChanged,      // → Working, turn 2
			core.TimelineStateChanged,      // → Waiting on user (review)
		)...)
		h.wantOutcomes(id)
		// Rows carry the turn they were decided for.
		if r := h.store.rowsOf(id, core.TimelineNudgeSent)[0]; r.TurnGeneration != 1 {
			t.Errorf("nudge_sent recorded for turn %d, want 1 (the turn that died)", r.TurnGeneration)
		}
		if len(callsOf(h.agent.calls(), "prompt")) != 2 || len(h.agent.startOptions()) != 1 {
			t.Error("unexpected extra prompts or process starts")
		}
	})
}

// --- 2. the tool-open relaxation ---

func TestLoopStallToolOpenRelaxation(t *testing.T) {
	cases := []struct {
		name      string
		open      *sessions.Event
		suspectAt time.Duration // the tick that marks it
		evidence  string
	}{
		{"nothing open", nil, 10 * time.Minute, "10 min silent, pid 1001 alive"},
		{"tool call open", &sessions.Event{Kind: sessions.EvToolStarted, CallID: "toolu_1", Name: "Bash"}, 30 * time.Minute, "30 min silent, Bash open, pid 1001 alive"},
		{"background task open", &sessions.Event{Kind: sessions.EvTaskStarted, CallID: "task_1", Name: "tests"}, 30 * time.Minute, "30 min silent, tests open, pid 1001 alive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newLoopHarness(t, nil)
				defer h.stop()
				s, p := h.launch()
				if tc.open != nil {
					h.emit(p, *tc.open) // at 0, so the clock still starts at 0
				}
				h.run()
				if tc.suspectAt > 10*time.Minute {
					// At the plain threshold the open call keeps it Working.
					h.until(10*time.Minute + time.Second)
					h.wantState(s.ID, sessions.Working, sessions.NoWait)
				}
				h.until(tc.suspectAt - time.Second)
				h.wantState(s.ID, sessions.Working, sessions.NoWait)
				h.until(tc.suspectAt + time.Second)
				got := h.wantState(s.ID, sessions.Suspect, sessions.NoWait)
				if !got.StateChangedAt.Equal(h.at(tc.suspectAt)) || got.Evidence != tc.evidence {
					t.Fatalf("Suspect at %v with %q, want at %v with %q",
						got.StateChangedAt.Sub(h.start), got.Evidence, tc.suspectAt, tc.evidence)
				}
				h.wantKinds(s.ID, afterLaunch(core.TimelineMarkedSuspect)...)
			})
		})
	}
}

// --- 3. an ignored interrupt: bounded escalation ---

func TestLoopInterruptIgnoredEscalatesToSignals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, func(s *settings.Settings) {
			s.StallSuspect, s.StallHard = 1*time.Minute, 5*time.Minute
		})
		defer h.stop()
		id, p := h.launchRunning()

		// The interrupt at 5:00 is ignored; SIGTERM follows after the grace
		// (30 s), SIGKILL after a second grace.
		h.until(6*time.Minute + 7*time.Second)
		grace := DefaultPolicy().InterruptGrace
		var got []string
		for _, c := range p.received()[1:] { // [0] is the first prompt
			got = append(got, fmt.Sprintf("%s %s @%v", c.What, c.Text, c.At.Sub(h.start)))
		}
		want := []string{
			fmt.Sprintf("interrupt  @%v", 5*time.Minute),
			fmt.Sprintf("signal %v @%v", syscall.SIGTERM, 5*time.Minute+grace),
			fmt.Sprintf("signal %v @%v", syscall.SIGKILL, 5*time.Minute+2*grace),
		}
		if !slices.Equal(got, want) {
			t.Fatalf("the agent received\n %q\nwant\n %q", got, want)
		}
		h.wantState(id, sessions.Suspect, sessions.NoWait)

		// SIGKILL took: the process exits by signal mid-turn → Interrupted.
		p.exit(-1, "killed")
		synctest.Wait()
		intr := h.wantState(id, sessions.Interrupted, sessions.NoWait)
		if !strings.Contains(intr.Evidence, "signal killed during turn 1") {
			t.Errorf("evidence %q does not say how the turn ended", intr.Evidence)
		}

		// The next tick nudges by resuming the agent's session.
		h.until(6*time.Minute + 16*time.Second)
		starts := h.agent.startOptions()
		if len(starts) != 2 || starts[1].ResumeID != agentSessionID {
			t.Fatalf("starts %+v, want a resume of %s", starts, agentSessionID)
		}
		if pr := callsOf(h.agent.proc(1).received(), "prompt"); len(pr) != 1 || pr[0].Text != core.NudgeText {
			t.Fatalf("resumed process got %+v, want the nudge", pr)
		}
		h.wantKinds(id, afterLaunch(
			core.TimelineMarkedSuspect,
			core.TimelineStallInterrupt,    // interrupt
			core.TimelineStallInterrupt,    // SIGTERM
			core.TimelineStallInterrupt,    // SIGKILL
			core.TimelineMarkedInterrupted, // the exit (cause "exit_event")
			core.TimelineStateChanged,      // → Interrupted
			core.TimelineNudgeSent,
			"process_started", // the resume
			core.TimelineStateChanged,
		)...)
		steps := h.store.rowsOf(id, core.TimelineStallInterrupt)
		for i, action := range []string{"interrupt", "terminate", "kill"} {
			if got := rowField(steps[i], "action"); got != action {
				t.Errorf("stall_interrupt row %d is %q, want %q", i, got, action)
			}
		}
		h.wantOutcomes(id)
	})
}

// --- 4. the nudge cap ---

func TestLoopNudgeCapEscalatesAndAckClears(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil) // 2 nudges, 10 min apart
		defer h.stop()
		id, p := h.launchRunning()
		set := h.store.settings

		// The process dies mid-turn, and so does every resumed one right
		// after the nudge reaches it.
		h.until(7 * time.Second)
		h.emit(p, sessions.Event{Kind: sessions.EvToolStarted, CallID: "t1", Name: "Bash"})
		p.exit(1, "")
		synctest.Wait()
		h.wantState(id, sessions.Interrupted, sessions.NoWait)
		for i := 1; ; i++ {
			// Wait for the next resume; give up after an hour.
			var next *fakeProc
			for next == nil && h.elapsed() < time.Hour {
				h.until(h.elapsed() + 15*time.Second)
				next = h.agent.proc(i)
			}
			if next == nil {
				break
			}
			h.until(h.elapsed() + 7*time.Second)
			h.emit(next, sessions.Event{Kind: sessions.EvActivity})
			next.exit(1, "")
			synctest.Wait()
		}

		nudges := callsOf(h.agent.calls(), "prompt")[1:]
		if len(nudges) != set.NudgeMaxAttempts {
			t.Fatalf("%d nudges, want nudge_max_attempts = %d", len(nudges), set.NudgeMaxAttempts)
		}
		for i, n := range nudges {
			if n.Text != core.NudgeText {
				t.Errorf("nudge %d text %q", i, n.Text)
			}
			if i > 0 && n.At.Sub(nudges[i-1].At) < set.NudgeCooldown {
				t.Errorf("nudges %d and %d only %v apart (cooldown %v)", i-1, i, n.At.Sub(nudges[i-1].At), set.NudgeCooldown)
			}
		}
		for i, o := range h.agent.startOptions()[1:] {
			if o.ResumeID != agentSessionID {
				t.Errorf("start %d resumed %q, want %q", i+1, o.ResumeID, agentSessionID)
			}
		}

		esc := h.wantState(id, sessions.Interrupted, sessions.NoWait)
		if !esc.NeedsAttention {
			t.Fatal("nudges spent, but needs-attention is not raised")
		}
		h.wantKinds(id, afterLaunch(
			core.TimelineMarkedInterrupted, core.TimelineStateChanged, // exit → Interrupted
			core.TimelineNudgeSent, "process_started", core.TimelineStateChanged, core.TimelineMarkedInterrupted, core.TimelineStateChanged,
			core.TimelineNudgeSent, "process_started", core.TimelineStateChanged, core.TimelineMarkedInterrupted, core.TimelineStateChanged,
			core.TimelineEscalated,
		)...)
		// The escalation waits for the last nudge's cooldown.
		lastNudge := nudges[len(nudges)-1].At
		escRow := h.store.rowsOf(id, core.TimelineEscalated)[0]
		if escRow.Time.Before(lastNudge.Add(set.NudgeCooldown)) || !strings.Contains(rowField(escRow, "message"), "2 of 2 continuation nudges spent") {
			t.Errorf("escalated at %v (%s), last nudge at %v", escRow.Time.Sub(h.start), rowField(escRow, "message"), lastNudge.Sub(h.start))
		}
		h.wantOutcomes(id)
		msgs := h.messages(localapi.MsgEscalation)
		if len(msgs) != 1 || msgs[0].Session == nil || msgs[0].Session.ID != id || !msgs[0].Session.NeedsAttention {
			t.Fatalf("escalation messages %+v, want one for %s with needs-attention", msgs, id)
		}

		// Hours later nothing more has been tried, and it still says so.
		h.until(4 * time.Hour)
		if got := len(callsOf(h.agent.calls(), "prompt")); got != 1+set.NudgeMaxAttempts {
			t.Fatalf("%d prompts after the escalation", got-1-set.NudgeMaxAttempts)
		}
		if st := h.wantState(id, sessions.Interrupted, sessions.NoWait); !st.NeedsAttention {
			t.Fatal("needs-attention dropped without an ack")
		}

		if _, err := h.rt.Ack(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		acked := h.wantState(id, sessions.Idle, sessions.NoWait)
		if acked.NeedsAttention {
			t.Fatal("ack did not clear needs-attention")
		}
		h.until(5 * time.Hour)
		h.wantState(id, sessions.Idle, sessions.NoWait)
		if got := h.store.kinds(id); got[len(got)-2] != "acknowledged" || got[len(got)-1] != core.TimelineStateChanged {
			t.Fatalf("after ack the timeline ends %q", got[len(got)-3:])
		}
		h.wantEscalations(1) // exactly one per incident
	})
}

// --- 5. a rate-limit reset two hours away ---

func TestLoopRateLimitDrainedAtTheReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		id, p := h.launchRunning()
		tick := h.store.settings.Tick

		failAt := 1*time.Minute + 7*time.Second
		h.until(failAt)
		reset := h.at(failAt + 2*time.Hour)
		h.emit(p, sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{
			Kind: sessions.RateLimit, RetryAt: reset, Message: "usage limit reached",
		}})
		h.wantState(id, sessions.Errored, sessions.NoWait)

		// The next tick holds it in Recovering and says until when.
		h.until(failAt + 10*time.Second)
		rec := h.wantState(id, sessions.Recovering, sessions.NoWait)
		if want := core.ClockPhrase(reset, h.at(failAt+8*time.Second)); !strings.Contains(rec.Evidence, want) {
			t.Fatalf("Recovering evidence %q lacks the reset time %s", rec.Evidence, want)
		}
		if !rec.Supervision.NextAttemptAt.Equal(reset) {
			t.Fatalf("next attempt at %v, want the reset", rec.Supervision.NextAttemptAt.Sub(h.start))
		}

		// Nothing is sent before the reset, however many ticks pass.
		h.until(reset.Sub(h.start) - time.Second)
		if got := callsOf(h.agent.calls(), "prompt"); len(got) != 1 {
			t.Fatalf("%d prompt(s) before the reset", len(got)-1)
		}
		h.wantState(id, sessions.Recovering, sessions.NoWait)

		// The first tick at or after the reset continues the session.
		h.until(reset.Sub(h.start) + tick)
		prompts := callsOf(p.received(), "prompt")
		if len(prompts) != 2 || prompts[1].Text != core.NudgeText {
			t.Fatalf("prompts %+v, want the continue after the reset", prompts)
		}
		if at := prompts[1].At; at.Before(reset) || !at.Before(reset.Add(tick)) {
			t.Fatalf("continued at %v, want within one tick after the reset at %v", at.Sub(h.start), reset.Sub(h.start))
		}
		h.wantState(id, sessions.Working, sessions.NoWait)

		h.until(reset.Sub(h.start) + 2*time.Minute)
		h.emit(p, sessions.Event{Kind: sessions.EvTurnCompleted})
		h.until(reset.Sub(h.start) + 10*time.Minute)
		done := h.wantState(id, sessions.WaitingOnUser, sessions.WaitReview)
		if done.Supervision != (sessions.Supervision{}) {
			t.Errorf("incident not closed after the completed turn: %+v", done.Supervision)
		}
		h.wantKinds(id, afterLaunch(
			core.TimelineStateChanged,   // → Errored (rate limit)
			core.TimelineRateLimitDrain, // scheduled: → Recovering until the reset
			core.TimelineRateLimitDrain, // the continue
			core.TimelineStateChanged,   // → Working, turn 2
			core.TimelineStateChanged,   // → Waiting on user (review)
		)...)
		drains := h.store.rowsOf(id, core.TimelineRateLimitDrain)
		if !strings.HasPrefix(rowField(drains[0], "message"), "scheduled: ") || rowField(drains[1], "action") != "continue" {
			t.Errorf("rate_limit_drain rows: %s / %s", drains[0].Detail, drains[1].Detail)
		}
		h.wantOutcomes(id)
	})
}

// --- 6. a lost exit, and boot reconciliation ---

// TestLoopLostExitIsCaughtByTheProbe: the agent process dies but its exit
// never reaches the runtime (stdout held open by an orphan), so Events stays
// open. The tick's liveness probe is the safety net: Interrupted, then nudged
// by resume on a fresh process.
func TestLoopLostExitIsCaughtByTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		id, p := h.launchRunning()

		h.until(2*time.Minute + 7*time.Second)
		p.vanish()
		h.until(2*time.Minute + 16*time.Second)
		starts := h.agent.startOptions()
		if len(starts) != 2 || starts[1].ResumeID != agentSessionID {
			t.Fatalf("starts %+v, want a resume of %s", starts, agentSessionID)
		}
		if pr := callsOf(h.agent.proc(1).received(), "prompt"); len(pr) != 1 || pr[0].Text != core.NudgeText {
			t.Fatalf("resumed process got %+v, want the nudge", pr)
		}
		w := h.wantState(id, sessions.Working, sessions.NoWait)
		if w.TurnGeneration != 2 || w.PID != 1002 {
			t.Fatalf("turn %d on pid %d, want turn 2 on the resumed pid 1002", w.TurnGeneration, w.PID)
		}
		h.wantKinds(id, afterLaunch(core.TimelineMarkedInterrupted, core.TimelineNudgeSent, "process_started", core.TimelineStateChanged)...)
		if msg := rowField(h.store.rowsOf(id, core.TimelineMarkedInterrupted)[0], "message"); msg != "agent process 1001 is gone; turn 1 was in flight" {
			t.Errorf("marked_interrupted says %q", msg)
		}

		// The dead process's late output is ignored: it is not the
		// session's process any more.
		h.emit(p, sessions.Event{Kind: sessions.EvTurnCompleted})
		h.wantState(id, sessions.Working, sessions.NoWait)
		h.wantOutcomes(id)
	})
}

// TestLoopLostExitIsCaughtForEveryAgent: the runtime asks any agent's
// Process for its liveness (it names no agent), so a session of each agent
// whose process dies mid-turn with its exit lost is Interrupted at the
// next tick: the agents' Alive (agentkit.Liveness) is the only part that
// differs, and each adapter's tests kill its real CLI to check that part.
func TestLoopLostExitIsCaughtForEveryAgent(t *testing.T) {
	for _, agent := range everyAgent {
		t.Run(agent, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newLoopHarness(t, nil)
				defer h.stop()
				s, p := h.launchAgent(agent)
				h.run()
				h.until(7 * time.Second)
				p.vanish()
				h.until(16 * time.Second) // the first tick is at 15 s
				rows := h.store.rowsOf(s.ID, core.TimelineMarkedInterrupted)
				if len(rows) != 1 {
					t.Fatalf("%d marked_interrupted rows by the first tick after the process died, want 1", len(rows))
				}
				if msg := rowField(rows[0], "message"); msg != "agent process 1001 is gone; turn 1 was in flight" {
					t.Errorf("marked_interrupted says %q", msg)
				}
				if got := h.session(s.ID); got.Agent != agent {
					t.Errorf("the session's agent is %q, want %q", got.Agent, agent)
				}
			})
		})
	}
}

// TestLoopUnprobeableProcessIsNotCalledAlive: where the platform's probe
// cannot tell (known=false), the process is neither trusted alive nor
// declared dead: a silent turn becomes Suspect with "not probed" in its
// evidence, never Interrupted by the liveness rule (issue: macOS and Windows
// used to answer "alive").
func TestLoopUnprobeableProcessIsNotCalledAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		s, p := h.launch()
		p.mu.Lock()
		p.unprobeable = true
		p.mu.Unlock()
		h.run()
		h.until(10*time.Minute + 16*time.Second)
		got := h.wantState(s.ID, sessions.Suspect, sessions.NoWait)
		if !strings.Contains(got.Evidence, "pid 1001 not probed") {
			t.Errorf("evidence %q, want it to say the pid was not probed", got.Evidence)
		}
		if got.ProcessAlive != true {
			t.Errorf("ProcessAlive changed to %v by a probe that could not tell", got.ProcessAlive)
		}
	})
}

// TestLoopBootReconcilesAndResumes: a session persisted mid-turn (the app was
// killed) loads as Interrupted and is nudged by resuming the agent session;
// an action whose outcome was never recorded is reported uncertain, not
// replayed.
func TestLoopBootReconcilesAndResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		before := h.at(-20 * time.Minute)
		persisted := sessions.Session{
			ID: "0b8f6c1e-boot", Agent: "claude", AgentSessionID: agentSessionID, Source: sessions.Managed,
			Cwd: os.TempDir(), PID: 4242, ProcessAlive: true,
			State: sessions.Working, Evidence: "running Bash", TurnGeneration: 4, InTurn: true,
			TurnStarted: before, LastEventAt: before, StateChangedAt: before, CreatedAt: before, UpdatedAt: before,
			OpenTools: map[string]sessions.OpenCall{"t1": {Name: "Bash", Started: before}},
		}
		h.store.sessions[persisted.ID] = persisted
		intent := newRow(persisted, before, core.TimelineNudgeSent, sessions.TimelineDetail{Message: "…", Action: "nudge", Outcome: storage.OutcomePending})
		if _, err := h.store.AppendEvent(context.Background(), intent); err != nil {
			t.Fatal(err)
		}

		if err := h.rt.Boot(context.Background()); err != nil {
			t.Fatal(err)
		}
		b := h.wantState(persisted.ID, sessions.Interrupted, sessions.NoWait)
		if b.InTurn || b.ProcessAlive || b.OpenTools != nil || !strings.Contains(b.Evidence, "turn 4 was in flight when the app last stopped") {
			t.Fatalf("boot left %+v", b)
		}
		if got := rowField(h.store.timeline(persisted.ID)[0], "outcome"); got != "uncertain" {
			t.Fatalf("the unfinished intent's outcome is %q, want uncertain", got)
		}

		h.run()
		h.until(16 * time.Second)
		starts := h.agent.startOptions()
		if len(starts) != 1 || starts[0].ResumeID != agentSessionID {
			t.Fatalf("starts %+v, want one resume of %s", starts, agentSessionID)
		}
		if pr := callsOf(h.agent.calls(), "prompt"); len(pr) != 1 || pr[0].Text != core.NudgeText || !pr[0].At.Equal(h.at(15*time.Second)) {
			t.Fatalf("prompts %+v, want the nudge at the first tick", pr)
		}
		if w := h.wantState(persisted.ID, sessions.Working, sessions.NoWait); w.TurnGeneration != 5 {
			t.Fatalf("turn %d, want 5", w.TurnGeneration)
		}
		// Boot's own state_changed row right after boot_reconciled is
		// runtime.go's business (it may or may not add one); everything
		// else is exact.
		var got []string
		for i, k := range h.store.kinds(persisted.ID) {
			if k == core.TimelineStateChanged && i > 0 && got[len(got)-1] == "boot_reconciled" {
				continue
			}
			got = append(got, k)
		}
		want := []string{core.TimelineNudgeSent, "boot_reconciled", core.TimelineMarkedInterrupted, "uncertain_action", core.TimelineNudgeSent, "process_started", core.TimelineStateChanged}
		if !slices.Equal(got, want) {
			t.Fatalf("timeline %q, want %q", h.store.kinds(persisted.ID), want)
		}
	})
}

// --- 7. a stuck compaction ---

// Issue 10, item 10: a compaction that runs past its timeout is failed and
// escalated; nothing is written into the agent (it may still be compacting:
// a /compact or a retried turn would land in that running turn), and the late
// end of the compaction books no retry and starts no extra turn.
func TestLoopCompactionTimeoutStartsNoExtraTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, func(s *settings.Settings) { s.CompactTimeout = 120 * time.Second })
		defer h.stop()
		id, p := h.launchRunning()

		h.until(1*time.Minute + 7*time.Second)
		h.emit(p, sessions.Event{Kind: sessions.EvCompactionStarted})
		h.wantState(id, sessions.Compacting, sessions.NoWait)
		// Claude repeats "compacting" every ~30 s; the first start counts.
		h.until(2*time.Minute + 7*time.Second)
		h.emit(p, sessions.Event{Kind: sessions.EvCompactionStarted})

		// Not failed before 1:07 + 120 s (tick 3:15 is the first after 3:07).
		h.until(3*time.Minute + 14*time.Second)
		h.wantState(id, sessions.Compacting, sessions.NoWait)
		h.until(3*time.Minute + 16*time.Second)
		failed := h.wantState(id, sessions.Errored, sessions.NoWait)
		if !failed.NeedsAttention || failed.Failure.Kind != sessions.ContextOverflow {
			t.Fatalf("after the timeout: needs attention %v, failure %+v", failed.NeedsAttention, failed.Failure)
		}
		ct := h.store.rowsOf(id, core.TimelineCompactionTimeout)
		if len(ct) != 1 || !strings.Contains(rowField(ct[0], "message"), "compaction ran past 120 s") {
			t.Fatalf("compaction_timeout rows %+v", ct)
		}

		// The agent's compaction ends late, with its turn's result.
		h.until(3*time.Minute + 37*time.Second)
		h.emit(p, sessions.Event{Kind: sessions.EvCompactionFinished, OK: true},
			sessions.Event{Kind: sessions.EvTurnCompleted})
		h.until(30 * time.Minute)
		if c := callsOf(p.received(), "compact"); len(c) != 0 {
			t.Fatalf("compacts %+v, want none", c)
		}
		if pr := callsOf(p.received(), "prompt"); len(pr) != 1 {
			t.Fatalf("prompts %+v, want only the launch prompt", pr)
		}
		end, _ := h.rt.Session(id)
		if end.TurnGeneration != 1 || end.InTurn {
			t.Fatalf("an extra turn started: turn %d, in turn %v, %v %q", end.TurnGeneration, end.InTurn, end.State, end.Evidence)
		}
		if n := len(h.store.rowsOf(id, core.TimelineEscalated)); n != 1 {
			t.Errorf("escalated %d times, want once", n)
		}
		h.wantOutcomes(id)
	})
}

// TestLoopCompactionWithNoStartTimeStillTimesOut: a Compacting session with
// no start time recorded anywhere (old data) gets its clock started by the
// first tick — which the loop must persist, or every tick restarts it and the
// compaction latches forever.
func TestLoopCompactionWithNoStartTimeStillTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, func(s *settings.Settings) { s.AutoRecover = false })
		defer h.stop()
		h.store.sessions["c1"] = sessions.Session{
			ID: "c1", Agent: "claude", Source: sessions.Managed, State: sessions.Compacting,
			Evidence: "compacting the context", TurnGeneration: 2, CreatedAt: h.at(-time.Hour),
		}
		if err := h.rt.Boot(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.run()
		timeout := h.store.settings.CompactTimeout
		h.until(timeout + time.Minute)
		if st := h.session("c1"); st.State != sessions.Errored || st.Failure.Kind != sessions.ContextOverflow {
			t.Fatalf("after %v: %v (%q), want Errored (context overflow)", h.elapsed(), st.State, st.Evidence)
		}
		h.wantKinds("c1", core.TimelineCompactionTimeout, core.TimelineEscalated)
		if at := h.store.rowsOf("c1", core.TimelineCompactionTimeout)[0].Time; !at.Equal(h.at(15*time.Second + timeout)) {
			t.Errorf("timed out at %v, want %v after the first tick", at.Sub(h.start), timeout)
		}
	})
}

// --- 8. the switches ---

func TestLoopSwitches(t *testing.T) {
	short := func(s *settings.Settings) { s.StallSuspect, s.StallHard = 1*time.Minute, 3*time.Minute }
	cases := []struct {
		name string
		set  func(*settings.Settings)
		// want is the timeline after the launch; reason is in the escalation.
		want   []string
		reason string
	}{
		{"supervisor disabled", func(s *settings.Settings) { short(s); s.Enabled = false }, nil, ""},
		{"auto recover off", func(s *settings.Settings) { short(s); s.AutoRecover = false },
			[]string{core.TimelineMarkedSuspect, core.TimelineStallInterrupt, core.TimelineMarkedInterrupted, core.TimelineStateChanged, core.TimelineEscalated}, "automatic recovery is off"},
		{"nudge off", func(s *settings.Settings) { short(s); s.NudgeEnabled = false },
			[]string{core.TimelineMarkedSuspect, core.TimelineStallInterrupt, core.TimelineMarkedInterrupted, core.TimelineStateChanged, core.TimelineEscalated}, "the continuation nudge is off"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newLoopHarness(t, tc.set)
				defer h.stop()
				s, p := h.launch()
				h.run()
				id := s.ID

				// Status reconciliation runs with recovery off: Suspect at
				// 1:00, the stall interrupt at 3:00, which the agent honours.
				h.until(3*time.Minute + 7*time.Second)
				if len(callsOf(p.received(), "interrupt")) == 1 {
					h.emit(p, sessions.Event{Kind: sessions.EvTurnAborted})
				}
				h.until(5 * time.Hour)
				got := h.session(id)
				if tc.want == nil {
					// Disabled: hours of silence change nothing and do nothing.
					h.wantState(id, sessions.Working, sessions.NoWait)
					if calls := p.received(); len(calls) != 1 {
						t.Fatalf("the disabled supervisor sent %+v", calls[1:])
					}
					h.wantKinds(id, afterLaunch()...)

					// Switching it on applies at the next tick.
					h.store.setSettings(func(s *settings.Settings) { s.Enabled = true })
					h.until(5*time.Hour + 16*time.Second)
					if st := h.wantState(id, sessions.Suspect, sessions.NoWait); !st.StateChangedAt.Equal(h.at(5*time.Hour + 15*time.Second)) {
						t.Fatalf("Suspect at %v, want at the first tick after enabling", st.StateChangedAt.Sub(h.start))
					}
					return
				}
				if got.State != sessions.Interrupted || !got.NeedsAttention {
					t.Fatalf("%v needs-attention=%v, want Interrupted and escalated", got.State, got.NeedsAttention)
				}
				if pr := callsOf(h.agent.calls(), "prompt"); len(pr) != 1 {
					t.Fatalf("nudged with the switch off: %+v", pr[1:])
				}
				h.wantKinds(id, afterLaunch(tc.want...)...)
				if msg := rowField(h.store.rowsOf(id, core.TimelineEscalated)[0], "message"); !strings.Contains(msg, tc.reason) {
					t.Errorf("escalation %q does not say %q", msg, tc.reason)
				}
				h.wantOutcomes(id)
			})
		})
	}
}

// --- 9. waiting on the user ---

func TestLoopWaitingOnUserIsLeftAlone(t *testing.T) {
	cases := []struct {
		reason sessions.WaitReason
		perm   *sessions.Permission
	}{
		{sessions.WaitPermission, &sessions.Permission{RequestID: "req-1", Tool: "Bash"}},
		{sessions.WaitQuestion, nil},
		{sessions.WaitPlan, nil},
	}
	for _, tc := range cases {
		t.Run(tc.reason.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newLoopHarness(t, nil)
				defer h.stop()
				s, p := h.launch()
				h.emit(p, sessions.Event{Kind: sessions.EvWaitingOnUser, Reason: tc.reason, Permission: tc.perm})
				h.run()
				h.until(10 * time.Hour)
				w := h.wantState(s.ID, sessions.WaitingOnUser, tc.reason)
				if w.NeedsAttention || !w.InTurn {
					t.Fatalf("after 10 h: %+v", w)
				}
				if calls := p.received(); len(calls) != 1 {
					t.Fatalf("acted on a session waiting on the user: %+v", calls[1:])
				}
				h.wantKinds(s.ID, afterLaunch(core.TimelineStateChanged)...)
			})
		})
	}
}

// --- 10. snapshots ---

func TestLoopSnapshotReemission(t *testing.T) {
	cases := []struct {
		tick, interval time.Duration
	}{
		{15 * time.Second, 60 * time.Second}, // the defaults
		{15 * time.Second, 45 * time.Second}, // not a multiple of the tick
		{60 * time.Second, 90 * time.Second}, // slower tick than snapshot
		{60 * time.Second, 5 * time.Second},  // faster snapshot than tick
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("tick %v every %v", tc.tick, tc.interval), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newLoopHarness(t, func(s *settings.Settings) { s.Tick, s.SnapshotInterval = tc.tick, tc.interval })
				defer h.stop()
				s, _ := h.launch()
				// A subscriber that never reads still ends up holding the
				// latest snapshot: publishing never waits for it.
				slow := h.rt.Bus().Subscribe(1)
				defer h.rt.Bus().Unsubscribe(slow)
				h.run()
				span := 10 * time.Minute
				h.until(span + time.Second)
				snaps := h.messages(localapi.MsgSnapshot)
				if want := int(span / tc.interval); len(snaps) != want {
					t.Fatalf("%d snapshots in %v, want %d", len(snaps), span, want)
				}
				for _, sn := range snaps {
					if len(sn.Sessions) != 1 || sn.Sessions[0].ID != s.ID {
						t.Fatalf("snapshot %+v does not hold the session", sn.Sessions)
					}
				}
				if msg := <-slow.C; msg.Type != localapi.MsgSnapshot || msg.Cursor != snaps[len(snaps)-1].Cursor {
					t.Fatalf("the slow subscriber holds %v %v, want the last snapshot", msg.Type, msg.Cursor)
				}
			})
		})
	}
}

// TestLoopSnapshotTimes checks the snapshots land on their interval (read
// as they arrive, with their fake time).
func TestLoopSnapshotTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, func(s *settings.Settings) { s.SnapshotInterval = 45 * time.Second })
		defer h.stop()
		sub := h.rt.Bus().Subscribe(64)
		var times []time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			for msg := range sub.C {
				if msg.Type == localapi.MsgSnapshot {
					times = append(times, time.Since(h.start))
				}
			}
		}()
		h.run()
		h.until(4 * time.Minute)
		// A settings change applies from the next round.
		h.store.setSettings(func(s *settings.Settings) { s.SnapshotInterval = 60 * time.Second })
		h.until(8*time.Minute + time.Second)
		h.rt.Bus().Unsubscribe(sub)
		<-done
		want := []time.Duration{45 * time.Second, 90 * time.Second, 135 * time.Second, 180 * time.Second, 225 * time.Second,
			285 * time.Second, 345 * time.Second, 405 * time.Second, 465 * time.Second}
		if !slices.Equal(times, want) {
			t.Fatalf("snapshots at %v, want %v", times, want)
		}
	})
}

// --- 11. pruning ---

func TestLoopPrunesTheTimelineInTheBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil) // retention 30 days
		defer h.stop()
		s, _ := h.launch()
		day := 24 * time.Hour
		for _, age := range []time.Duration{45 * day, 31 * day, 29 * day, day} {
			r := newRow(s, h.at(-age), "marked_suspect", sessions.TimelineDetail{Message: fmt.Sprintf("%v old", age)})
			if _, err := h.store.AppendEvent(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
		gate := make(chan struct{})
		h.store.pruneGate = gate
		h.run()

		// The first round starts a prune, which hangs on a slow disk; the
		// loop keeps ticking meanwhile (the stall is marked at 10:00).
		h.until(11 * time.Minute)
		if got := h.wantState(s.ID, sessions.Suspect, sessions.NoWait); got.StateChangedAt != h.at(10*time.Minute) {
			t.Fatalf("the tick was held up by the prune: Suspect at %v", got.StateChangedAt.Sub(h.start))
		}
		if len(h.store.pruneCalls()) != 0 {
			t.Fatal("the prune did not wait for its gate")
		}
		close(gate)
		synctest.Wait()
		if len(h.store.pruneCalls()) != 1 {
			t.Fatalf("%d prunes, want 1", len(h.store.pruneCalls()))
		}
		pr := h.store.pruneCalls()[0]
		if want := h.at(15*time.Second).AddDate(0, 0, -30); !pr.cutoff.Equal(want) || pr.deleted != 2 {
			t.Fatalf("pruned %d rows before %v, want 2 before %v", pr.deleted, pr.cutoff, want)
		}
		for _, r := range h.store.timeline(s.ID) {
			if r.Time.Before(pr.cutoff) {
				t.Errorf("row %s of %v survived the prune", r.Kind, r.Time)
			}
		}
		if got := len(h.store.timeline(s.ID)); got != 2+len(afterLaunch(core.TimelineMarkedSuspect)) {
			t.Fatalf("%d rows left, want the 2 recent ones and the launch's", got)
		}

		// And again every six hours, on the settings of the day.
		h.until(13 * time.Hour)
		if n := len(h.store.pruneCalls()); n != 3 {
			t.Fatalf("%d prunes in 13 h, want 3 (at 0:00:15, 6:00:15, 12:00:15)", n)
		}
	})
}

// --- settings apply at the next tick ---

// TestLoopSettingsApplyAtTheNextTick changes the thresholds and the tick
// while the loop waits: the change applies at the very next tick.
func TestLoopSettingsApplyAtTheNextTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		s, p := h.launch()
		h.run()

		// At 5:01 the loop is waiting for the 5:15 tick with the old
		// settings in hand. The change must still be what 5:15 uses.
		h.until(5*time.Minute + time.Second)
		h.wantState(s.ID, sessions.Working, sessions.NoWait)
		h.store.setSettings(func(st *settings.Settings) {
			st.StallSuspect = 5 * time.Minute
			st.StallHard = 6*time.Minute + 2*time.Second
			st.Tick = 5 * time.Second
		})
		h.until(5*time.Minute + 16*time.Second)
		if got := h.wantState(s.ID, sessions.Suspect, sessions.NoWait); !got.StateChangedAt.Equal(h.at(5*time.Minute + 15*time.Second)) {
			t.Fatalf("Suspect at %v, want at the next tick (5m15s)", got.StateChangedAt.Sub(h.start))
		}
		// From then on it ticks every 5 s: the hard limit at 6:02 is acted
		// on at 6:05, not at 6:15.
		h.until(6*time.Minute + 20*time.Second)
		ints := callsOf(p.received(), "interrupt")
		if len(ints) != 1 || !ints[0].At.Equal(h.at(6*time.Minute+5*time.Second)) {
			t.Fatalf("interrupts %+v, want one at 6m5s", ints)
		}
	})
}

// --- issue 10 ---

// TestLoopUserStopIsNeverNudged: the user interrupts a running turn, and the
// turn then ends every way it can before the agent acknowledges the stop. It
// always ends as the user's stop, in review, and the supervisor never
// nudges or relaunches it (issue 10, item 2).
func TestLoopUserStopIsNeverNudged(t *testing.T) {
	ends := []struct {
		name string
		end  func(h *loopHarness, p *fakeProc)
	}{
		{"the process exits", func(h *loopHarness, p *fakeProc) { p.exit(143, "") }},
		{"the process is killed", func(h *loopHarness, p *fakeProc) { p.exit(-1, "SIGKILL") }},
		{"the exit is lost (liveness probe)", func(h *loopHarness, p *fakeProc) { p.vanish() }},
		{"the abort arrives within the grace", func(h *loopHarness, p *fakeProc) {
			h.until(time.Minute + 30*time.Second)
			h.emit(p, sessions.Event{Kind: sessions.EvTurnAborted})
		}},
		// Ignored past the interrupt grace (30 s from 1:07), the stop is
		// enforced (issue 20 item 7): SIGTERM at the 1:45 tick, SIGKILL at
		// 2:15, never the stall chain's interrupt and nudge hours later.
		{"the stop is ignored: SIGTERM ends it", func(h *loopHarness, p *fakeProc) {
			h.until(time.Minute + 46*time.Second)
			if c := callsOf(p.received(), "signal"); len(c) != 1 || c[0].Text != syscall.SIGTERM.String() {
				h.t.Fatalf("signals %+v, want SIGTERM", c)
			}
			p.exit(-1, "SIGTERM")
		}},
		{"the stop and SIGTERM are ignored: SIGKILL ends it", func(h *loopHarness, p *fakeProc) {
			h.until(2*time.Minute + 16*time.Second)
			if c := callsOf(p.received(), "signal"); len(c) != 2 {
				h.t.Fatalf("signals %+v, want SIGTERM and SIGKILL", c)
			}
			p.exit(-1, "SIGKILL")
		}},
	}
	for _, tt := range ends {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newLoopHarness(t, nil)
				defer h.stop()
				s, p := h.launch()
				h.run()
				id := s.ID

				h.until(time.Minute + 7*time.Second)
				if _, err := h.rt.Interrupt(context.Background(), id); err != nil {
					t.Fatal(err)
				}
				tt.end(h, p)
				h.until(h.elapsed() + 2*time.Hour)

				end := h.wantState(id, sessions.WaitingOnUser, sessions.WaitReview)
				if !strings.Contains(end.Evidence, "stopped at your request") || end.NeedsAttention {
					t.Errorf("evidence %q, needs attention %v", end.Evidence, end.NeedsAttention)
				}
				if n := len(h.store.rowsOf(id, core.TimelineNudgeSent)); n != 0 {
					t.Errorf("%d nudges sent for a stop the user asked for", n)
				}
				if starts := h.agent.startOptions(); len(starts) != 1 {
					t.Errorf("the agent was relaunched: %+v", starts)
				}
				if pr := callsOf(h.agent.calls(), "prompt"); len(pr) != 1 {
					t.Errorf("prompts %+v, want only the user's", pr)
				}
			})
		})
	}
}

// TestLoopUserStopSurvivesARestart: the app stopped after the user's
// interrupt and before the agent acknowledged it. Boot ends the turn as the
// user's stop, and nothing is nudged.
func TestLoopUserStopSurvivesARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		before := h.at(-20 * time.Minute)
		user := sessions.ByUser
		persisted := sessions.Session{
			ID: "0b8f6c1e-stop", Agent: "claude", AgentSessionID: agentSessionID, Source: sessions.Managed,
			Cwd: os.TempDir(), PID: 4242, ProcessAlive: true, InterruptBy: &user,
			State: sessions.Working, Evidence: "running Bash", TurnGeneration: 4, InTurn: true,
			TurnStarted: before, LastEventAt: before, StateChangedAt: before, CreatedAt: before, UpdatedAt: before,
		}
		h.store.sessions[persisted.ID] = persisted
		if err := h.rt.Boot(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.wantState(persisted.ID, sessions.WaitingOnUser, sessions.WaitReview)
		h.run()
		h.until(time.Hour)
		b := h.wantState(persisted.ID, sessions.WaitingOnUser, sessions.WaitReview)
		if b.InTurn || b.InterruptBy != nil || !strings.Contains(b.Evidence, "stopped at your request") {
			t.Fatalf("boot left %+v", b)
		}
		if starts := h.agent.startOptions(); len(starts) != 0 {
			t.Fatalf("the agent was relaunched: %+v", starts)
		}
	})
}

// TestLoopLaunchFailureEscalatesAtOnce: the agent dies before it printed
// anything. That is a launch failure: Errored(launch) with the exit code,
// escalated once at the next tick, never nudged or relaunched (issue 10,
// item 3).
func TestLoopLaunchFailureEscalatesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		s, err := h.rt.Launch(context.Background(), localapi.LaunchRequest{Agent: "claude", Cwd: os.TempDir(), Prompt: "refactor the parser"})
		if err != nil {
			t.Fatal(err)
		}
		h.run()
		id := s.ID
		h.until(2 * time.Second)
		h.agent.proc(0).exit(1, "")
		h.until(time.Hour)

		end := h.wantState(id, sessions.Errored, sessions.NoWait)
		if end.Failure.Kind != sessions.Launch || !strings.Contains(end.Failure.Message, "code 1") || !end.NeedsAttention {
			t.Fatalf("failure %+v, needs attention %v, evidence %q", end.Failure, end.NeedsAttention, end.Evidence)
		}
		if n := len(h.store.rowsOf(id, core.TimelineEscalated)); n != 1 {
			t.Errorf("escalated %d times, want once", n)
		}
		if n := len(h.store.rowsOf(id, core.TimelineNudgeSent)); n != 0 {
			t.Errorf("%d nudges for an agent that never started", n)
		}
		if starts := h.agent.startOptions(); len(starts) != 1 {
			t.Errorf("relaunched: %+v", starts)
		}
		h.wantOutcomes(id)
	})
}

// TestLoopOwnMidTurnPromptKeepsTheStallClock: a prompt the app writes into
// the running turn is not the agent's activity: the turn still turns
// Suspect on time (issue 10, item 14).
func TestLoopOwnMidTurnPromptKeepsTheStallClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		id, _ := h.launchRunning()
		h.until(8 * time.Minute)
		if _, err := h.rt.Send(context.Background(), id, "also update the docs"); err != nil {
			t.Fatal(err)
		}
		if got := h.session(id).LastEventAt; !got.Equal(h.at(0)) {
			t.Fatalf("the app's own prompt moved the stall clock to %v", got.Sub(h.start))
		}
		h.until(10*time.Minute + 1*time.Second)
		h.wantState(id, sessions.Suspect, sessions.NoWait)
	})
}

// TestLoopSeveralPermissionRequests: two requests are open at once and other
// work of the turn goes on. The session keeps waiting while either is open,
// and each answer names the request it answers (issue 20, item 10): one
// that is no longer open is refused with ErrRequestClosed, and an answer
// naming none is refused while several are open.
func TestLoopSeveralPermissionRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		id, p := h.launchRunning()
		ask := func(req, tool string) sessions.Event {
			return sessions.Event{Kind: sessions.EvWaitingOnUser, Reason: sessions.WaitPermission, Permission: &sessions.Permission{RequestID: req, Tool: tool}}
		}
		h.until(time.Minute)
		h.emit(p, ask("req_a", "Bash"), ask("req_b", "Write"),
			sessions.Event{Kind: sessions.EvToolFinished, CallID: "toolu_9", Name: "Grep"},
			sessions.Event{Kind: sessions.EvActivity, Detail: "subagent writing a reply"})
		h.wantState(id, sessions.WaitingOnUser, sessions.WaitPermission)

		ctx := context.Background()
		_, err := h.rt.Answer(ctx, id, "", true, "")
		if !errors.Is(err, localapi.ErrConflict) || !strings.Contains(err.Error(), "req_a (Bash)") || !strings.Contains(err.Error(), "req_b (Write)") {
			t.Fatalf("approve naming no request with two open: %v, want a conflict listing both", err)
		}
		// The newer request first: the user answers the one they saw.
		if _, err := h.rt.Answer(ctx, id, "req_b", true, ""); err != nil {
			t.Fatalf("approve req_b: %v", err)
		}
		h.emit(p, sessions.Event{Kind: sessions.EvActivity})
		w := h.wantState(id, sessions.WaitingOnUser, sessions.WaitPermission)
		if w.Permission == nil || w.Permission.RequestID != "req_a" || len(w.Permissions) != 1 {
			t.Fatalf("still open: %+v", w.Permissions)
		}
		// A double click: the second answer's request is gone.
		_, err = h.rt.Answer(ctx, id, "req_b", true, "")
		if !errors.Is(err, localapi.ErrRequestClosed) || localapi.ErrorKind(err) != "request_closed" || !strings.Contains(err.Error(), "req_b") {
			t.Fatalf("answering req_b again: %v, want ErrRequestClosed naming it", err)
		}
		// One open: an answer naming none answers it.
		if _, err := h.rt.Answer(ctx, id, "", false, "no"); err != nil {
			t.Fatalf("second answer: %v", err)
		}
		h.wantState(id, sessions.Working, sessions.NoWait)
		if a := callsOf(p.received(), "answer"); len(a) != 2 || a[0].Text != "Write allow=true" || a[1].Text != "Bash allow=false" {
			t.Fatalf("answers %+v", a)
		}
		_, err = h.rt.Answer(ctx, id, "req_a", true, "")
		if !errors.Is(err, localapi.ErrRequestClosed) {
			t.Fatalf("answering req_a with nothing open: %v, want ErrRequestClosed", err)
		}
		// Waiting on the user is never a stall, however long it lasts.
		h.until(2 * time.Minute)
	})
}

// TestLoopRacedPromptStartsASupervisedTurn: the user's prompt reaches the
// agent just as it prints the turn's result, so the agent starts a turn of
// its own with it. That turn is supervised like any other: it goes Suspect
// when it stalls (issue 10, item 8).
func TestLoopRacedPromptStartsASupervisedTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		id, p := h.launchRunning()
		h.until(time.Minute)
		if _, err := h.rt.Send(context.Background(), id, "and the tests"); err != nil {
			t.Fatal(err)
		}
		h.emit(p, sessions.Event{Kind: sessions.EvTurnCompleted})
		h.wantState(id, sessions.WaitingOnUser, sessions.WaitReview)
		h.emit(p, sessions.Event{Kind: sessions.EvSessionInit, AgentSessionID: agentSessionID})
		w := h.wantState(id, sessions.Working, sessions.NoWait)
		if w.TurnGeneration != 2 || !w.InTurn {
			t.Fatalf("turn %d in turn %v", w.TurnGeneration, w.InTurn)
		}
		// It works, then falls silent: the stall rules watch it.
		h.emit(p, sessions.Event{Kind: sessions.EvActivity})
		h.until(time.Minute + 11*time.Minute)
		h.wantState(id, sessions.Suspect, sessions.NoWait)
	})
}

func unknownConnectivity() Connectivity { return ConnUnknown }
