package supervisor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/enum"
	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// The soak: 100 managed sessions over 24 simulated hours, driven through the
// real loop (Run, Tick, the executor, the writer, the serial queues, Apply,
// Reconcile, Boot) inside one synctest bubble, with faults drawn from a
// seeded source. The test plays both the agent (which answers the
// supervisor's actions the way Claude Code would) and the user (sends,
// interrupts, acks), and crashes the app now and then (a new Runtime booted
// over the same store; the old processes are gone). After every step it
// checks the invariants the spec promises; see the soakCheck* names.
// Beside them run terminal sessions (soak_terminal_test.go): sessions the
// app did not launch, from an in-memory ExternalSource, whose turns stall,
// die (also while the app is down), hit rate limits, and a second process
// on a managed session's conversation, under settings switched over the day.
//
// Determinism: one seed drives every choice; the test acts at instants off
// every tick (steps at 30k+7 s, ticks at 15k s, or 15k+10 s after a
// restart), sessions are visited in a fixed order, and invariants are
// checked per session, so the writer's interleaving of different sessions'
// rows (which does vary) cannot change a verdict.

// soakSeed is the seed of the soak's fault source. Change it to explore; a
// failure message names it so a run can be replayed.
const soakSeed uint64 = 20261130

// soakKnownFailing lists invariants that fail today for a reason tracked
// elsewhere: their violations are logged, not failed, so the rest of the
// soak still guards everything else. When the cause is fixed, delete the
// entry: the check then fails again if the fault comes back. A listed check
// that no longer fires is reported in the log so the entry can be removed.
var soakKnownFailing = map[string]string{}

// The invariants, by the name a violation and soakKnownFailing use.
const (
	soakCheckNudgeCap        = "nudge_cap"                 // 1
	soakCheckNewerTurn       = "action_on_newer_turn"      // 2 (rows and agent side)
	soakCheckCompactInTurn   = "compact_into_running_turn" // 2, the compaction flavour (issue 10 item 10)
	soakCheckUserStopNudged  = "user_stop_nudged"          // 3
	soakCheckWorkingDead     = "working_without_process"   // 4
	soakCheckEscalatedOnce   = "escalation_notified_once"  // 5
	soakCheckTimelineRowLost = "timeline_row_lost"         // 6
)

const (
	soakSessions = 100
	soakDuration = 24 * time.Hour
	// soakStep is the test's step: the agent answers what it received in
	// the step after, within 22 s of the tick that sent it (less than the
	// 30 s interrupt grace, as a live agent would).
	soakStep   = 30 * time.Second
	soakOffset = 7 * time.Second // steps at 30k+7 s: never on a tick (15k s)
	soakTick   = 15 * time.Second
	// soakRestartGap is how long the app is down on a restart; the new
	// runtime's ticks then fall at 15k+10 s, still off the steps.
	soakRestartGap = 3 * time.Second
)

// The agent's plan for a turn: how it ends.
type soakPlan int

const (
	planComplete soakPlan = iota
	planDie
	planVanish
	planStall
	planRateLimit
	planOverflow
	planAuth
	planCompaction // a /compact turn: finishes at endAt
)

var soakPlanNames = [...]string{"complete", "death", "vanish", "stall", "rate_limit", "overflow", "auth", "compaction"}

func (p soakPlan) String() string { return enum.Name(p, "soakPlan", soakPlanNames[:]) }

// soakStore is one runtime's view of the shared memStore. A crashed app
// writes nothing more: once dead, the view drops every write, so the old
// runtime's goroutines (pumps observing their processes' ends) cannot touch
// the store the new runtime booted from.
type soakStore struct {
	*memStore
	dead atomic.Bool
}

func (s *soakStore) SaveSessionWithEvents(ctx context.Context, sess sessions.Session, events []storage.TimelineEvent) error {
	if s.dead.Load() {
		return nil
	}
	return s.memStore.SaveSessionWithEvents(ctx, sess, events)
}

func (s *soakStore) AppendEvent(ctx context.Context, ev storage.TimelineEvent) (int64, error) {
	if s.dead.Load() {
		return 0, errors.New("the app is dead")
	}
	return s.memStore.AppendEvent(ctx, ev)
}

func (s *soakStore) SetEventOutcome(ctx context.Context, id int64, outcome string) error {
	if s.dead.Load() {
		return nil
	}
	return s.memStore.SetEventOutcome(ctx, id, outcome)
}

// soakAgent is the fake agent, keeping which session (by working
// directory) every process was started for.
type soakAgent struct {
	*fakeAgent
	mu    sync.Mutex
	byCwd map[string][]*fakeProc
}

func (a *soakAgent) Start(ctx context.Context, opts StartOptions) (Process, error) {
	p, err := a.fakeAgent.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.byCwd[opts.Cwd] = append(a.byCwd[opts.Cwd], p.(*fakeProc))
	a.mu.Unlock()
	return p, nil
}

func (a *soakAgent) latest(cwd string) *fakeProc {
	a.mu.Lock()
	defer a.mu.Unlock()
	ps := a.byCwd[cwd]
	if len(ps) == 0 {
		return nil
	}
	return ps[len(ps)-1]
}

// soakSess is one session as the test sees it: the agent's side of it and
// the checker's memory of its timeline.
type soakSess struct {
	n         int
	name, cwd string
	asid      string // the agent's own session id
	id        string // the app's session id, once launched

	// The agent side, for its current process.
	proc       *fakeProc
	seen       int  // calls of proc already answered
	inited     bool // proc announced the agent session id
	busy       bool // the agent is in a turn
	plan       soakPlan
	bySup      bool // the turn was started by a supervisor prompt
	endAt      time.Time
	nextAct    time.Time
	deadAt     time.Time      // when proc died (zero: alive)
	recvBusy   bool           // the agent was in a turn when the call being answered arrived
	ignoreInt  bool           // this stall ignores the agent interrupt
	ignoreTerm bool           // … and SIGTERM (a wedged tool holding the group)
	userStop   string         // "abort" or "die": how the agent answers the user's interrupt
	rlUntil    time.Time      // the provider's rate-limit reset
	authUntil  time.Time      // when the credentials are good again
	stopped    map[int64]bool // generations the user stopped (and did not resume)

	// The checker's memory.
	nudges  int   // nudge_sent rows since the last clean completion or ack
	maxGen  int64 // highest turn generation on a row so far
	escGen  int64 // generation of the last escalation since the last ack (-1: none)
	escRows map[int64]int
	escMsgs map[int64]int
	trace   []string // the last steps, for a violation's reproduction

	// A terminal session (soak_terminal_test.go): its process, nil for a
	// managed session.
	term *soakTermProc
	// shares are the spans a second process ran this managed session's
	// conversation in a terminal (an open span ends at zero).
	shares      [][2]time.Time
	resumed     bool // resumed in the background (a resumed_as row)
	badEvidence bool // reported once
	latched     bool // Recovering with no hold at the last check
}

func (s *soakSess) log(at time.Duration, format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf("%v %s", at.Round(time.Second), fmt.Sprintf(format, args...)))
	if len(s.trace) > 40 {
		s.trace = s.trace[len(s.trace)-40:]
	}
}

type soakViolation struct {
	check, msg string
}

// soak is the whole run.
type soak struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand
	start time.Time
	set   settings.Settings

	j     *journal
	store *memStore
	agent *soakAgent
	view  *soakStore
	rt    *Runtime

	sub    *localapi.Subscription
	reader chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	msgMu  sync.Mutex
	msgs   []localapi.Message

	sess   []*soakSess
	terms  []*soakSess // the terminal sessions, in the order they started
	term   *soakTermWorld
	byID   map[string]*soakSess
	step   int
	counts map[string]int

	// the checker's cursors and indexes
	rowCursor  int
	msgCursor  int
	storedKeys map[string]int
	storedIDs  map[int64]bool

	final      []sessions.Session // at the end, before the processes are stopped
	violations []soakViolation
	known      map[string]int
}

func TestSoak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seed := soakSeed
		if v := os.Getenv("SOAK_SEED"); v != "" {
			// Exploring other seeds: SOAK_SEED=n go test -run TestSoak ./supervisor/
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("SOAK_SEED=%q: %v", v, err)
			}
			seed = n
		}
		t.Logf("soak seed %d", seed)
		k := newSoak(t, seed)
		k.run()
		k.report()
	})
}

func newSoak(t *testing.T, seed uint64) *soak {
	j := &journal{}
	st := newMemStore(j)
	st.setSettings(func(s *settings.Settings) { s.Tick = soakTick })
	set := st.currentSettings()
	k := &soak{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), start: time.Now(), set: set,
		j: j, store: st, agent: &soakAgent{fakeAgent: &fakeAgent{j: j}, byCwd: map[string][]*fakeProc{}},
		byID: map[string]*soakSess{}, counts: map[string]int{},
		storedKeys: map[string]int{}, storedIDs: map[int64]bool{}, known: map[string]int{},
	}
	root := t.TempDir()
	k.term = newSoakTermWorld(root, k.start)
	for i := range soakSessions {
		s := &soakSess{n: i, name: fmt.Sprintf("s%03d", i), asid: fmt.Sprintf("agent-session-%03d", i),
			stopped: map[int64]bool{}, escGen: -1, escRows: map[int64]int{}, escMsgs: map[int64]int{}}
		s.cwd = filepath.Join(root, s.name)
		if err := os.Mkdir(s.cwd, 0o755); err != nil {
			t.Fatal(err)
		}
		k.sess = append(k.sess, s)
	}
	return k
}

func (k *soak) now() time.Duration { return time.Since(k.start) }

// boot builds a runtime over the store, as the app does at start, and runs
// its loop.
func (k *soak) boot() {
	k.view = &soakStore{memStore: k.store}
	k.rt = New(Options{Store: k.view, Agents: map[string]Agent{"claude": k.agent}, DefaultAgent: "claude", Settings: k.store.currentSettings,
		// A nudge into a terminal is verified for 10 s, not the default
		// 15 s: a wait that ends on a tick would race it for the session.
		External: []ExternalSource{k.term.d}, NudgeVerify: 10 * time.Second})
	k.rt.bootProbe = k.term.d.bootProbe
	if err := k.rt.Boot(context.Background()); err != nil {
		k.t.Fatalf("Boot: %v", err)
	}
	k.termBooted()
	k.sub = k.rt.Bus().Subscribe(1 << 16)
	k.reader = make(chan struct{})
	go func(sub *localapi.Subscription, done chan struct{}) {
		defer close(done)
		for msg := range sub.C {
			k.msgMu.Lock()
			k.msgs = append(k.msgs, msg)
			k.msgMu.Unlock()
		}
	}(k.sub, k.reader)
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel, k.done = cancel, make(chan struct{})
	go func(rt *Runtime, done chan struct{}) {
		defer close(done)
		rt.Run(ctx)
	}(k.rt, k.done)
	synctest.Wait()
}

// crash stops the app the hard way: its loop and its writes end at once,
// and its agent processes are gone with it.
func (k *soak) crash() {
	k.termCrash()
	k.cancel()
	<-k.done
	k.view.dead.Store(true)
	k.rt.Bus().Unsubscribe(k.sub)
	<-k.reader
	for _, s := range k.sess {
		for _, p := range k.agent.byCwd[s.cwd] {
			p.exit(0, "SIGHUP")
		}
		if s.proc != nil && s.deadAt.IsZero() {
			s.deadAt = time.Now()
		}
		s.busy, s.userStop = false, ""
		s.log(k.now(), "app crashed; agent process gone")
	}
	synctest.Wait()
}

func (k *soak) run() {
	k.boot()
	defer func() {
		k.cancel()
		<-k.done
		for _, s := range k.sess {
			for _, p := range k.agent.byCwd[s.cwd] {
				p.exit(0, "")
			}
		}
		synctest.Wait()
		k.rt.Bus().Unsubscribe(k.sub)
		<-k.reader
	}()
	for k.step = 0; ; k.step++ {
		at := time.Duration(k.step)*soakStep + soakOffset
		if at > soakDuration {
			break
		}
		time.Sleep(time.Until(k.start.Add(at)))
		synctest.Wait()
		if k.term.bootExpect != nil {
			k.termAfterFirstTick()
		}
		if k.step < soakSessions {
			k.launch(k.sess[k.step]) // staggered launches over the first 50 min
		}
		for _, s := range k.sess {
			k.agentStep(s)
		}
		k.termStep(time.Now())
		synctest.Wait()
		for _, s := range k.sess {
			k.userStep(s)
		}
		for _, s := range k.terms {
			k.termUserStep(s)
		}
		synctest.Wait()
		k.check()
		if k.t.Failed() && len(k.violations) > 30 {
			k.t.Fatalf("stopping after %d violations", len(k.violations))
		}
		if k.step > soakSessions && k.rng.IntN(2880) < 5 { // about 5 a day
			k.counts["fault app_restart"]++
			// Sometimes the user stops a turn and the app dies before the
			// agent answered.
			for _, s := range k.sess {
				if s.busy && s.plan != planCompaction && k.rng.IntN(20) == 0 && k.userInterrupt(s, "") {
					k.counts["fault user_interrupt_then_restart"]++
				}
			}
			k.crash()
			time.Sleep(soakRestartGap)
			k.boot()
			for _, s := range k.allSess() {
				s.log(k.now(), "app restarted")
			}
			synctest.Wait()
			k.check()
		}
	}
	synctest.Wait()
	k.check()
	k.final = k.rt.Sessions()
}

func (k *soak) launch(s *soakSess) {
	got, err := k.rt.Launch(context.Background(), localapi.LaunchRequest{Agent: "claude", Cwd: s.cwd, Name: s.name, Prompt: "work on " + s.name})
	if err != nil {
		k.t.Fatalf("launching %s: %v", s.name, err)
	}
	s.id = got.ID
	k.byID[s.id] = s
	s.log(k.now(), "launched %s", s.id)
}

// --- the agent ---

// refresh follows the session to the process the runtime started last.
func (k *soak) refresh(s *soakSess) {
	p := k.agent.latest(s.cwd)
	if p == nil || p == s.proc {
		return
	}
	s.proc, s.seen, s.inited, s.busy, s.deadAt, s.userStop = p, 0, false, false, time.Time{}, ""
	s.log(k.now(), "agent process %d started", p.pid)
}

func (k *soak) emit(s *soakSess, evs ...sessions.Event) {
	if s.proc == nil || !s.deadAt.IsZero() {
		return // a dead agent says nothing
	}
	for _, ev := range evs {
		s.proc.events <- ev
	}
}

func (k *soak) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(k.rng.Int64N(int64(hi-lo)))
}

// agentStep answers what the supervisor and the user sent since the last
// step, then plays the turn in flight.
func (k *soak) agentStep(s *soakSess) {
	k.refresh(s)
	if s.proc == nil || !s.deadAt.IsZero() {
		return
	}
	now := time.Now()
	calls := s.proc.callsSince(s.seen)
	s.seen += len(calls)
	// Every call was received before now, and the agent's answers happen
	// now: whether the agent was in a turn when a call arrived is what it
	// was at the start of the step, unless an earlier call started one.
	s.recvBusy = s.busy
	for _, c := range calls {
		k.answer(s, c, now)
		if !s.deadAt.IsZero() {
			break
		}
	}
	if !s.busy || !s.deadAt.IsZero() {
		return
	}
	if now.Before(s.endAt) {
		if s.plan != planStall && s.plan != planCompaction && !now.Before(s.nextAct) {
			k.emit(s, sessions.Event{Kind: sessions.EvActivity, Detail: "assistant text"})
			s.nextAct = now.Add(k.between(time.Minute, 6*time.Minute))
		}
		return
	}
	k.endTurn(s, now)
}

func (k *soak) answer(s *soakSess, c agentCall, now time.Time) {
	switch c.What {
	case "prompt":
		sup := c.Text == core.NudgeText || c.Text == core.RetryTurnText
		if !s.inited {
			s.inited = true
			k.emit(s, sessions.Event{Kind: sessions.EvSessionInit, AgentSessionID: s.asid})
		}
		if sup {
			k.checkTyped(s, c)
		}
		if sup && s.recvBusy {
			k.violate(soakCheckNewerTurn, s, "a supervisor prompt (%q) reached the agent in the middle of a running turn (plan %v)", shortText(c.Text), s.plan)
		}
		s.recvBusy = true
		if s.busy {
			s.log(k.now(), "prompt joined the running turn")
			k.emit(s, sessions.Event{Kind: sessions.EvActivity, Detail: "prompt received"})
			return
		}
		k.newTurn(s, now, sup)
		k.emit(s, sessions.Event{Kind: sessions.EvActivity, Detail: "assistant text"})
	case "interrupt":
		if s.userStop != "" && s.busy && s.plan == planStall && s.ignoreInt {
			// A wedged agent ignores the user's stop too: the stall chain
			// takes over the turn the user asked to stop.
			s.userStop = ""
			s.log(k.now(), "agent ignored the user's interrupt")
			return
		}
		switch s.userStop {
		case "abort":
			s.userStop = ""
			if s.busy {
				s.busy = false
				s.log(k.now(), "agent aborted the turn at the user's interrupt")
				k.emit(s, sessions.Event{Kind: sessions.EvTurnAborted, Detail: "aborted_streaming"})
			}
		case "die":
			s.userStop = ""
			k.die(s, "died before acknowledging the user's interrupt")
		default:
			if !s.recvBusy {
				k.violate(soakCheckNewerTurn, s, "a supervisor interrupt reached an agent with no turn in flight")
				return
			}
			if !s.busy {
				return // the turn already ended at an earlier call (the user's interrupt)
			}
			if s.ignoreInt {
				s.log(k.now(), "agent ignored the stall interrupt")
				return
			}
			s.busy = false
			s.log(k.now(), "agent aborted the turn at the stall interrupt")
			k.emit(s, sessions.Event{Kind: sessions.EvTurnAborted, Detail: "aborted_streaming"})
		}
	case "compact":
		if s.recvBusy {
			k.violate(soakCheckCompactInTurn, s, "/compact was written into the agent's running turn (plan %v)", s.plan)
			return
		}
		s.busy, s.plan, s.bySup = true, planCompaction, true
		s.endAt = now
		if k.rng.IntN(100) < 15 {
			k.counts["fault compaction_hang"]++
			s.endAt = now.Add(k.between(12*time.Minute, time.Hour))
			s.log(k.now(), "compaction started; it hangs until %v", s.endAt.Sub(k.start).Round(time.Second))
		} else {
			s.log(k.now(), "compaction started")
		}
		k.emit(s, sessions.Event{Kind: sessions.EvCompactionStarted})
		if !now.Before(s.endAt) {
			k.endTurn(s, now)
		}
	case "signal":
		if s.ignoreTerm && c.Text == "terminated" {
			s.log(k.now(), "agent ignored SIGTERM")
			return
		}
		if !s.recvBusy {
			k.violate(soakCheckNewerTurn, s, "%s reached an agent with no turn in flight", c.Text)
		}
		k.counts["signal "+c.Text]++
		s.deadAt = now
		s.busy = false
		s.log(k.now(), "agent killed by signal %q", c.Text)
		s.proc.exit(0, c.Text)
	}
}

// callsSince returns the calls after the first n (nil, without copying,
// when there are none: most steps of most sessions).
func (p *fakeProc) callsSince(n int) []agentCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.calls) <= n {
		return nil
	}
	return slices.Clone(p.calls[n:])
}

func shortText(s string) string {
	if len(s) > 30 {
		return s[:30] + "…"
	}
	return s
}

// newTurn draws how the turn the agent just started will end.
func (k *soak) newTurn(s *soakSess, now time.Time, bySup bool) {
	s.busy, s.bySup, s.ignoreInt, s.ignoreTerm = true, bySup, false, false
	s.nextAct = now.Add(k.between(time.Minute, 6*time.Minute))
	switch {
	case now.Before(s.authUntil):
		s.plan, s.endAt = planAuth, now.Add(20*time.Second)
	case now.Before(s.rlUntil):
		s.plan, s.endAt = planRateLimit, now.Add(20*time.Second)
	default:
		r := k.rng.IntN(100)
		switch {
		case r < 58:
			s.plan = planComplete
		case r < 66:
			s.plan = planDie
		case r < 70:
			s.plan = planVanish
		case r < 82:
			s.plan = planStall
		case r < 88:
			s.plan = planRateLimit
		case r < 93:
			s.plan = planOverflow
		default:
			s.plan = planAuth
		}
		s.endAt = now.Add(k.between(2*time.Minute, 40*time.Minute))
		if s.plan == planStall {
			s.endAt = now.Add(k.between(20*time.Minute, 5*time.Hour))
			s.ignoreInt = k.rng.IntN(100) < 30
			k.counts["fault stall"]++
			if s.ignoreInt {
				k.counts["fault stall ignoring the interrupt"]++
				if s.ignoreTerm = k.rng.IntN(2) == 0; s.ignoreTerm {
					k.counts["fault stall ignoring the interrupt and SIGTERM"]++
				}
			}
		}
	}
	by := "user"
	if bySup {
		by = "supervisor"
	}
	s.log(k.now(), "turn started by the %s; plan %v at %v", by, s.plan, s.endAt.Sub(k.start).Round(time.Second))
}

func (k *soak) die(s *soakSess, why string) {
	s.busy = false
	s.deadAt = time.Now()
	if k.rng.IntN(2) == 0 {
		s.log(k.now(), "%s: exit code 1", why)
		s.proc.exit(1, "")
	} else {
		s.log(k.now(), "%s: SIGKILL", why)
		s.proc.exit(0, "SIGKILL")
	}
}

func (k *soak) endTurn(s *soakSess, now time.Time) {
	plan := s.plan
	if plan != planCompaction && plan != planComplete && plan != planStall {
		k.counts["fault "+plan.String()]++ // a stall is counted when it starts
	}
	switch plan {
	case planComplete, planStall, planCompaction:
		if plan == planStall {
			s.log(k.now(), "stalled agent woke up and completed")
		}
		evs := []sessions.Event{{Kind: sessions.EvActivity, Detail: "assistant text"}, {Kind: sessions.EvTurnCompleted}}
		if plan == planCompaction {
			evs = []sessions.Event{{Kind: sessions.EvCompactionFinished, OK: true}, {Kind: sessions.EvTurnCompleted}}
		}
		s.busy = false
		k.counts["agent turns completed"]++
		if s.bySup && plan != planCompaction {
			k.counts["recoveries (supervisor-started turns completed)"]++
		}
		s.log(k.now(), "turn completed (%v)", plan)
		k.emit(s, evs...)
	case planDie:
		k.die(s, "agent died mid-turn")
	case planVanish:
		s.busy = false
		s.deadAt = now
		s.log(k.now(), "agent vanished mid-turn (exit lost)")
		s.proc.vanish()
	case planRateLimit:
		if !now.Before(s.rlUntil) {
			s.rlUntil = now.Add(k.between(5*time.Minute, 2*time.Hour))
		}
		s.busy = false
		s.log(k.now(), "429; resets at %v", s.rlUntil.Sub(k.start).Round(time.Second))
		k.emit(s, sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{
			Kind: sessions.RateLimit, RetryAt: s.rlUntil, Message: "429 rate_limit_error: usage limit reached"}})
	case planOverflow:
		s.busy = false
		s.log(k.now(), "context overflow")
		k.emit(s, sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{
			Kind: sessions.ContextOverflow, Message: "prompt is too long: 212000 tokens > 200000 maximum"}})
	case planAuth:
		if !now.Before(s.authUntil) {
			s.authUntil = now.Add(k.between(time.Minute, 25*time.Minute))
		}
		s.busy = false
		s.log(k.now(), "auth failure; credentials good again at %v", s.authUntil.Sub(k.start).Round(time.Second))
		k.emit(s, sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{
			Kind: sessions.Auth, Message: "401 authentication_error: invalid credentials"}})
	}
}

// --- the user ---

func (k *soak) userStep(s *soakSess) {
	if s.id == "" {
		return
	}
	cur, err := k.rt.Session(s.id)
	if err != nil {
		k.t.Fatalf("session %s: %v", s.name, err)
	}
	ctx := context.Background()
	r := k.rng.IntN(1200) // per 30 s step
	switch {
	case cur.InTurn && s.busy && s.plan != planCompaction && r < 2:
		how := "abort"
		if k.rng.IntN(100) < 35 {
			how = "die"
		}
		k.userInterrupt(s, how)
	case cur.InTurn && s.busy && r < 4:
		if _, err := k.rt.Send(ctx, s.id, "also check the tests"); err != nil {
			s.log(k.now(), "user send mid-turn refused: %v", err)
			return
		}
		k.counts["user send mid-turn"]++
		// A prompt after a stop asks the agent to go on: a nudge of that
		// turn would no longer be against the user's wish.
		clear(s.stopped)
		s.log(k.now(), "user sent a prompt into the running turn")
	case !cur.InTurn && !s.busy && r < 60 && (cur.State == sessions.Interrupted || cur.State == sessions.Errored):
		// A user watching the session types "continue" themselves, racing
		// the supervisor's own recovery.
		if _, err := k.rt.Send(ctx, s.id, "continue"); err != nil {
			k.counts["user send refused"]++
			s.log(k.now(), "user continue refused: %v", err)
			return
		}
		k.counts["user continue after a failure"]++
		s.log(k.now(), "user sent continue (was %v)", cur.State)
	case !cur.InTurn && !s.busy && r < 16:
		if cur.NeedsAttention || cur.State != sessions.Idle && k.rng.IntN(2) == 0 {
			if _, err := k.rt.Ack(ctx, s.id); err != nil {
				k.t.Fatalf("ack %s: %v", s.name, err)
			}
			k.counts["user ack"]++
			s.log(k.now(), "user acknowledged (%v)", cur.State)
			if k.rng.IntN(2) == 0 {
				return
			}
		}
		if _, err := k.rt.Send(ctx, s.id, "next task for "+s.name); err != nil {
			k.counts["user send refused"]++
			s.log(k.now(), "user send refused: %v", err)
			return
		}
		k.counts["user send"]++
		s.log(k.now(), "user sent a new prompt (was %v)", cur.State)
	}
}

// userInterrupt stops s's turn as the user; how is how the agent will
// answer ("abort", "die", or "" when the app is about to crash).
func (k *soak) userInterrupt(s *soakSess, how string) bool {
	got, err := k.rt.Interrupt(context.Background(), s.id)
	if err != nil {
		s.log(k.now(), "user interrupt refused: %v", err)
		return false
	}
	s.userStop = how
	s.stopped[got.TurnGeneration] = true
	k.counts["fault user_interrupt"]++
	if how == "die" {
		k.counts["fault user_interrupt_then_death"]++
	}
	s.log(k.now(), "user interrupted turn %d (agent will %s)", got.TurnGeneration, cmp.Or(how, "not answer before the crash"))
	return true
}

// --- the invariants ---

func (k *soak) violate(check string, s *soakSess, format string, args ...any) {
	name := "-"
	if s != nil {
		name = s.name + " " + s.id
	}
	msg := fmt.Sprintf("[%s] seed %d, step %d, fake time %v, session %s: %s", check, k.seed, k.step, k.now().Round(time.Second), name, fmt.Sprintf(format, args...))
	if s != nil {
		msg += "\n    trace:\n      " + strings.Join(s.trace, "\n      ")
	}
	if why, ok := soakKnownFailing[check]; ok {
		k.known[check]++
		if k.known[check] <= 2 {
			k.t.Logf("known failing (%s): %s", why, msg)
		}
		return
	}
	k.violations = append(k.violations, soakViolation{check, msg})
	k.t.Error(msg)
}

func (k *soak) newRows() []storage.TimelineEvent {
	k.store.mu.Lock()
	defer k.store.mu.Unlock()
	rows := slices.Clone(k.store.rows[k.rowCursor:])
	k.rowCursor = len(k.store.rows)
	return rows
}

func (k *soak) newMessages() []localapi.Message {
	k.msgMu.Lock()
	defer k.msgMu.Unlock()
	msgs := slices.Clone(k.msgs[k.msgCursor:])
	k.msgCursor = len(k.msgs)
	return msgs
}

// turnInDetail finds the turn an action's sentence is about ("turn 5 was
// interrupted …", "rate limited on turn 5; continuing …").
var turnInDetail = regexp.MustCompile(`\bturn (\d+)\b`)

func rowKey(r storage.TimelineEvent) string {
	return fmt.Sprintf("%s|%s|%d|%d|%s", r.SessionID, r.Kind, r.Time.UnixNano(), r.TurnGeneration, r.Detail)
}

// check runs every invariant over what happened since the last check.
func (k *soak) check() {
	k.rt.Settle()
	synctest.Wait()
	rows := k.newRows()
	k.adoptResumed(rows)
	for _, r := range rows {
		k.storedKeys[rowKey(r)]++
		k.storedIDs[r.ID] = true
		k.counts["rows"]++
		s := k.byID[r.SessionID]
		if s == nil {
			continue
		}
		k.checkRow(s, r)
	}
	k.drainTermViolations()
	for _, m := range k.newMessages() {
		switch m.Type {
		case localapi.MsgTimeline:
			k.checkPublished(m.Event)
		case localapi.MsgEscalation:
			if s := k.byID[m.Session.ID]; s != nil {
				s.escMsgs[m.Session.TurnGeneration]++
			}
		}
	}
	now := time.Now()
	for _, s := range k.sess {
		if s.id == "" {
			continue
		}
		k.refresh(s)
		cur, err := k.rt.Session(s.id)
		if err != nil {
			k.t.Fatalf("session %s: %v", s.name, err)
		}
		k.checkEscalations(s)
		k.checkLiveness(s, cur, now)
		k.checkEvidence(s, cur)
	}
	for _, s := range k.terms {
		cur, err := k.rt.Session(s.id)
		if err != nil {
			continue // not discovered yet (or not since a restart)
		}
		k.checkEscalations(s)
		k.checkLiveness(s, cur, now)
		k.checkEvidence(s, cur)
	}
}

// allSess is every session the test plays, managed and terminal.
func (k *soak) allSess() []*soakSess { return append(slices.Clip(k.sess), k.terms...) }

// adoptResumed plays the managed sessions that resumed a terminal session
// in the background (their first row, resumed_from, is among rows) as the
// others, before their rows are checked.
func (k *soak) adoptResumed(rows []storage.TimelineEvent) {
	var list []sessions.Session
	for _, r := range rows {
		if r.Kind != core.TimelineResumedFrom || k.byID[r.SessionID] != nil {
			continue
		}
		cur, err := k.rt.Session(r.SessionID)
		if err != nil {
			k.t.Fatalf("resumed session %s: %v", r.SessionID, err)
		}
		list = append(list, cur)
	}
	// In a fixed order (the new ids are random, and the writer interleaves
	// sessions' rows), so the seed replays.
	slices.SortFunc(list, func(a, b sessions.Session) int { return strings.Compare(a.ResumedFrom, b.ResumedFrom) })
	for _, cur := range list {
		s := &soakSess{n: len(k.sess), name: "resumed-" + sessions.ShortID(cur.ID), asid: cur.AgentSessionID, cwd: cur.Cwd, id: cur.ID,
			stopped: map[int64]bool{}, escGen: -1, escRows: map[int64]int{}, escMsgs: map[int64]int{}}
		k.sess = append(k.sess, s)
		k.byID[cur.ID] = s
		k.counts["terminal: resumed in the background"]++
		s.log(k.now(), "resumed in the background from %s", cur.ResumedFrom)
	}
}

// checkRow runs the per-row invariants (1, 2, 3, 5) on one new row.
func (k *soak) checkRow(s *soakSess, r storage.TimelineEvent) {
	var detail map[string]any
	_ = json.Unmarshal(r.Detail, &detail) // a malformed row is the memStore's failure
	field := func(key string) string { v, _ := detail[key].(string); return v }
	action := field("action")
	// 2. An action's intent row carries the generation it acts on; rows are
	// written in the order the runtime decided them, so a row for an older
	// turn after a newer turn started means the action hit the newer turn.
	if r.Kind != "uncertain_action" {
		if action != "" && r.TurnGeneration < s.maxGen {
			k.violate(soakCheckNewerTurn, s, "%s (%s) recorded for turn %d after turn %d started", r.Kind, action, r.TurnGeneration, s.maxGen)
		}
		s.maxGen = max(s.maxGen, r.TurnGeneration)
	}
	// The action's sentence names the turn it was decided for; the intent
	// row carries the generation it was executed against. They differ when
	// an action decided for one turn is applied to the next.
	if action != "" && r.Kind != core.TimelineEscalated {
		if m := turnInDetail.FindStringSubmatch(field("message")); m != nil {
			if decided, _ := strconv.ParseInt(m[1], 10, 64); decided != r.TurnGeneration {
				k.violate(soakCheckNewerTurn, s, "%s (%s) decided for turn %d was executed against turn %d", r.Kind, action, decided, r.TurnGeneration)
			}
		}
	}
	msg := field("message")
	if emptyClause(msg) && msg != "" {
		k.violate(soakCheckEmptyClause, s, "%s row with an empty clause: %q", r.Kind, msg)
	}
	if s.term != nil {
		k.checkTermRow(s, r, action, field)
		return
	}
	switch r.Kind {
	case core.TimelineNudgeSent:
		k.counts["nudges"]++
		s.nudges++
		s.log(k.now(), "row nudge_sent turn %d (%d since the last completion)", r.TurnGeneration, s.nudges)
		// 1. The cap per incident.
		if s.nudges > k.set.NudgeMaxAttempts {
			k.violate(soakCheckNudgeCap, s, "nudge %d of an incident, past the cap of %d (turn %d)", s.nudges, k.set.NudgeMaxAttempts, r.TurnGeneration)
		}
		// 3. A turn the user stopped is never nudged.
		if s.stopped[r.TurnGeneration] {
			k.violate(soakCheckUserStopNudged, s, "turn %d, stopped by the user, was nudged", r.TurnGeneration)
		}
	case core.TimelineStateChanged:
		// The incident ends (the budget refills) at a completed turn, at
		// an acknowledgement that takes, and at a turn the user starts
		// (issue 20, item 12).
		if strings.Contains(msg, "completed; waiting for review") || field("to") == "idle" && strings.HasPrefix(msg, "acknowledged (") ||
			field("to") == "working" && strings.HasSuffix(msg, "started by the user") {
			s.nudges = 0
		}
	case "acknowledged":
		s.escGen = -1
	case core.TimelineSharedConversation:
		s.log(k.now(), "row shared_conversation turn %d: %s", r.TurnGeneration, shortText(msg))
	case core.TimelineEscalated:
		k.counts["escalations"]++
		s.escRows[r.TurnGeneration]++
		s.log(k.now(), "row escalated turn %d: %s", r.TurnGeneration, msg)
		// 5. Once per incident: not again for the same turn until the user
		// acknowledged.
		if s.escGen == r.TurnGeneration {
			k.violate(soakCheckEscalatedOnce, s, "turn %d escalated twice with no acknowledgement in between", r.TurnGeneration)
		}
		s.escGen = r.TurnGeneration
	}
	if action != "" && r.Kind != core.TimelineNudgeSent && r.Kind != core.TimelineEscalated {
		k.counts["action "+action]++
	}
}

// checkPublished is invariant 6: a published row is in the store.
func (k *soak) checkPublished(ev *storage.TimelineEvent) {
	if ev.ID != 0 {
		if !k.storedIDs[ev.ID] {
			k.violate(soakCheckTimelineRowLost, k.byID[ev.SessionID], "published row %d (%s) is not in the store", ev.ID, ev.Kind)
		}
		return
	}
	key := rowKey(*ev)
	if k.storedKeys[key] == 0 {
		k.violate(soakCheckTimelineRowLost, k.byID[ev.SessionID], "published row %s (%s) is not in the store", ev.Kind, rowField(*ev, "message"))
		return
	}
	k.storedKeys[key]--
}

// checkEscalations is invariant 5: every escalated row was notified, once.
func (k *soak) checkEscalations(s *soakSess) {
	for gen, n := range s.escRows {
		if m := s.escMsgs[gen]; m != n {
			k.violate(soakCheckEscalatedOnce, s, "turn %d: %d escalated rows but %d escalation notifications", gen, n, m)
			s.escMsgs[gen] = n // report each mismatch once
		}
	}
	for gen, m := range s.escMsgs {
		if s.escRows[gen] == 0 {
			k.violate(soakCheckEscalatedOnce, s, "turn %d: %d escalation notifications with no escalated row", gen, m)
			s.escRows[gen] = m
		}
	}
}

// checkLiveness is invariant 4: a turn shown in progress on a process that
// is gone is corrected by the next tick.
func (k *soak) checkLiveness(s *soakSess, cur sessions.Session, now time.Time) {
	inProgress := cur.InTurn && (cur.State == sessions.Working || cur.State == sessions.Suspect || cur.State == sessions.Compacting)
	if !inProgress || s.deadAt.IsZero() {
		return
	}
	if now.Sub(s.deadAt) >= k.set.Tick {
		k.violate(soakCheckWorkingDead, s, "%v (turn %d) though its agent process died %v ago, more than one tick", cur.State, cur.TurnGeneration, now.Sub(s.deadAt))
		s.deadAt = now // report once per tick, not every step
	}
}

func (k *soak) report() {
	var keys []string
	for key := range k.counts {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %d sessions, %v simulated, seed %d, %d steps\n", soakSessions, soakDuration, k.seed, k.step)
	for _, key := range keys {
		fmt.Fprintf(&b, "  %-50s %d\n", key, k.counts[key])
	}
	final := map[sessions.State]int{}
	for _, s := range k.final {
		final[s.State]++
	}
	fmt.Fprintf(&b, "  final states: %v\n", final)
	if os.Getenv("SOAK_DEBUG") != "" {
		byID := map[string]sessions.Session{}
		for _, f := range k.final {
			byID[f.ID] = f
		}
		for _, s := range k.sess {
			cur := byID[s.id]
			fmt.Fprintf(&b, "  %s %v inturn=%v attn=%v busy=%v plan=%v dead=%v ev=%q\n", s.name, cur.State, cur.InTurn, cur.NeedsAttention, s.busy, s.plan, !s.deadAt.IsZero(), cur.Evidence)
		}
	}
	k.t.Log(b.String())
	for check, why := range soakKnownFailing {
		if n := k.known[check]; n > 0 {
			k.t.Logf("known-failing check %s (%s): %d violations logged, not failed", check, why, n)
		} else {
			k.t.Logf("known-failing check %s (%s) did not fire: remove it from soakKnownFailing", check, why)
		}
	}
}
