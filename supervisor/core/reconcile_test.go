package core

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// t0 is the start of every scenario: a Saturday morning, UTC, so clock
// phrases in evidence are predictable.
var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

var (
	alive   = Probe{Known: true, Alive: true}
	dead    = Probe{Known: true, Alive: false}
	unknown = Probe{}
)

func at(d time.Duration) time.Time { return t0.Add(d) }

// working is a managed Claude session on turn 3, started at t0, whose last
// genuine event was at t0.
func working() sessions.Session {
	return sessions.Session{
		ID: "s1", Agent: "claude", PID: 4242, ProcessAlive: true, ProcessSpoke: true,
		State: sessions.Working, Evidence: "stream active",
		TurnGeneration: 3, InTurn: true, TurnStarted: t0, LastEventAt: t0,
		StateChangedAt: t0, CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0,
	}
}

func withTool(s sessions.Session, id, name string, started time.Time) sessions.Session {
	if s.OpenTools == nil {
		s.OpenTools = map[string]sessions.OpenCall{}
	}
	s.OpenTools[id] = sessions.OpenCall{Name: name, Started: started}
	return s
}

func withTask(s sessions.Session, id, name string, started time.Time) sessions.Session {
	if s.OpenTasks == nil {
		s.OpenTasks = map[string]sessions.OpenCall{}
	}
	s.OpenTasks[id] = sessions.OpenCall{Name: name, Started: started}
	return s
}

func suspect() sessions.Session {
	s := working()
	s.State, s.Evidence, s.StateChangedAt = sessions.Suspect, "10 min silent, pid 4242 alive", at(10*time.Minute)
	return s
}

func compacting() sessions.Session {
	s := working()
	s.State, s.Evidence, s.CompactionStarted, s.StateChangedAt = sessions.Compacting, "compacting the context", t0, t0
	return s
}

func errored(kind sessions.FailureKind) sessions.Session {
	s := working()
	s.InTurn = false
	s.State = sessions.Errored
	s.Failure = sessions.Failure{Kind: kind, Message: "provider said no"}
	s.Evidence = "turn 3 failed: " + kind.Label()
	return s
}

func interrupted() sessions.Session {
	s := working()
	s.InTurn, s.ProcessAlive = false, false
	s.State, s.Evidence = sessions.Interrupted, "process exited by signal SIGKILL during turn 3"
	return s
}

// hold is a supervisor hold: Recovering, no turn in flight, bookkeeping set.
func hold(kind sessions.FailureKind, recovery string, attempts int, next time.Time) sessions.Session {
	s := errored(kind)
	s.State, s.Evidence = sessions.Recovering, "holding"
	s.Supervision = sessions.Supervision{Recovery: recovery, RecoveryAttempts: attempts, NextAttemptAt: next}
	return s
}

func waiting(reason sessions.WaitReason) sessions.Session {
	s := working()
	s.State, s.WaitReason, s.Evidence = sessions.WaitingOnUser, reason, "waiting on you"
	if reason == sessions.WaitReview {
		s.InTurn = false
	}
	if reason == sessions.WaitPermission {
		s.Permission = &sessions.Permission{RequestID: "r1", Tool: "Bash"}
	}
	return s
}

// reconcile runs Reconcile and checks what must hold for every call: the
// input is untouched, the output is valid, changed says exactly whether the
// output differs from the input in any field, and every action is fit to
// dispatch against the returned session.
func reconcile(t *testing.T, s sessions.Session, now time.Time, p Policy, probe Probe) (sessions.Session, []Observation, []Action) {
	t.Helper()
	before := s.Clone()
	out, obs, acts, changed := Reconcile(s, now, p, probe)
	if !reflect.DeepEqual(before, s) {
		t.Fatalf("Reconcile mutated its input:\nbefore %+v\nafter  %+v", before, s)
	}
	if msg := changeMisreported(s, out, changed); msg != "" {
		t.Fatalf("%s\nin  %+v\nout %+v", msg, s, out)
	}
	if msg := invalid(s, out, changed, now, p, obs, acts); msg != "" {
		t.Fatalf("%s\nin  %+v\nout %+v\nobs %+v\nacts %+v", msg, s, out, obs, acts)
	}
	return out, obs, acts
}

// changeMisreported returns why Reconcile's changed flag disagrees with a
// comparison of every field (reflect.DeepEqual, so a field added to Session
// is compared without anyone listing it), or "". The loop writes a session
// only when the flag says so: a write that does not set it is lost, and made
// again every tick.
func changeMisreported(in, out sessions.Session, changed bool) string {
	switch differs := !reflect.DeepEqual(in, out); {
	case differs && !changed:
		return "Reconcile changed the session but reported no change"
	case !differs && changed:
		return "Reconcile reported a change but returned the session as it was"
	}
	return ""
}

// invalid returns why a Reconcile result breaks an invariant, or "".
// changed is Reconcile's flag, which changeMisreported has checked against
// a comparison of every field: comparing again here (reflect.DeepEqual,
// slow under the race build's checkptr) was a third of the property test's
// time.
func invalid(in, out sessions.Session, changed bool, now time.Time, p Policy, obs []Observation, acts []Action) string {
	if !p.Enabled {
		if changed || len(obs) > 0 || len(acts) > 0 {
			return "changed or acted while disabled"
		}
		return ""
	}
	switch {
	case !out.State.Valid():
		return "invalid state"
	case out.Evidence == "":
		return "empty evidence"
	case out.State != in.State && len(obs) == 0:
		return "state changed without an observation"
	case out.NeedsAttention && !in.NeedsAttention && !slices.Contains(actKinds(acts), ActEscalate):
		return "needs-attention raised without an escalation"
	case (out.State == sessions.Working || out.State == sessions.Suspect) && !out.InTurn:
		return "working/suspect with no turn in flight"
	case out.State == sessions.Recovering && !out.InTurn && !slices.Contains(
		[]string{RecoveryOverflow, RecoveryOverflowRetry, RecoveryRateLimit, RecoveryAuth, RecoveryTransient}, out.Supervision.Recovery):
		return "a Recovering hold with no recovery behind it would latch"
	case in.State == sessions.WaitingOnUser && out.State == sessions.WaitingOnUser && len(acts) > 0:
		return "acted while waiting on the user"
	}
	if changed && !out.UpdatedAt.Equal(now) {
		return "changed session without UpdatedAt = now"
	}
	for _, o := range obs {
		if o.Kind == "" || o.Detail == "" || strings.ContainsAny(o.Detail, "\n\r") {
			return fmt.Sprintf("bad observation %+v", o)
		}
	}
	for _, a := range acts {
		switch {
		case !a.Kind.Valid() || a.TimelineKind == "" || a.Detail == "" || strings.ContainsAny(a.Detail, "\n\r"):
			return fmt.Sprintf("bad action %+v", a)
		case a.SessionID != out.ID || a.TurnGeneration != out.TurnGeneration:
			return fmt.Sprintf("action %v not keyed to the session's generation", a.Kind)
		case Stale(a, out):
			return fmt.Sprintf("action %v is stale against the session it was decided with", a.Kind)
		}
	}
	return ""
}

func obsKinds(obs []Observation) []string {
	var out []string
	for _, o := range obs {
		out = append(out, o.Kind)
	}
	return out
}

func actKinds(acts []Action) []ActionKind {
	var out []ActionKind
	for _, a := range acts {
		out = append(out, a.Kind)
	}
	return out
}

// rcase is one table row: a session, a time, a policy tweak and a probe,
// and what must come out.
type rcase struct {
	name   string
	s      sessions.Session
	now    time.Time
	policy func(*Policy)
	probe  Probe
	state  sessions.State
	obs    []string
	acts   []ActionKind
	// same: the session must come back deeply equal (nothing happened).
	same  bool
	check func(t *testing.T, out sessions.Session, obs []Observation, acts []Action)
}

func runCases(t *testing.T, cases []rcase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := specPolicy()
			if tc.policy != nil {
				tc.policy(&p)
			}
			out, obs, acts := reconcile(t, tc.s, tc.now, p, tc.probe)
			if out.State != tc.state {
				t.Errorf("state = %v, want %v (evidence %q)", out.State, tc.state, out.Evidence)
			}
			if got := obsKinds(obs); !slices.Equal(got, tc.obs) {
				t.Errorf("observations = %v, want %v (%+v)", got, tc.obs, obs)
			}
			if got := actKinds(acts); !slices.Equal(got, tc.acts) {
				t.Errorf("actions = %v, want %v (%+v)", got, tc.acts, acts)
			}
			if tc.same && !reflect.DeepEqual(out, tc.s) {
				t.Errorf("session changed, want it untouched:\nin  %+v\nout %+v", tc.s, out)
			}
			if tc.check != nil {
				tc.check(t, out, obs, acts)
			}
		})
	}
}

func wantEvidence(want string) func(*testing.T, sessions.Session, []Observation, []Action) {
	return func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
		t.Helper()
		if out.Evidence != want {
			t.Errorf("evidence = %q, want %q", out.Evidence, want)
		}
	}
}

func wantDetail(i int, sub string) func(*testing.T, sessions.Session, []Observation, []Action) {
	return func(t *testing.T, _ sessions.Session, _ []Observation, acts []Action) {
		t.Helper()
		if i >= len(acts) || !strings.Contains(acts[i].Detail, sub) {
			t.Errorf("action %d detail does not contain %q: %+v", i, sub, acts)
		}
	}
}

func all(checks ...func(*testing.T, sessions.Session, []Observation, []Action)) func(*testing.T, sessions.Session, []Observation, []Action) {
	return func(t *testing.T, out sessions.Session, obs []Observation, acts []Action) {
		t.Helper()
		for _, c := range checks {
			c(t, out, obs, acts)
		}
	}
}

func apply(s sessions.Session, now time.Time, evs ...sessions.Event) sessions.Session {
	for _, e := range evs {
		s = sessions.Apply(s, e, now)
	}
	return s
}

// ---------------------------------------------------------------------------

func TestReconcileDisabledChangesNothing(t *testing.T) {
	off := func(p *Policy) { p.Enabled = false }
	var cases []rcase
	for name, s := range map[string]sessions.Session{
		"dead process mid-turn": working(),
		"stalled for hours":     suspect(),
		"compaction past limit": compacting(),
		"rate limited":          errored(sessions.RateLimit),
		"interrupted":           interrupted(),
		"unknown state":         func() sessions.Session { s := working(); s.State = 42; return s }(),
	} {
		cases = append(cases, rcase{name: name, s: s, now: at(24 * time.Hour), policy: off, probe: dead, state: s.State, same: true})
	}
	runCases(t, cases)
}

func TestReconcileLiveness(t *testing.T) {
	gone := func(t *testing.T, out sessions.Session, obs []Observation, _ []Action) {
		t.Helper()
		if out.InTurn || out.ProcessAlive || out.OpenTools != nil || out.OpenTasks != nil || out.Permission != nil ||
			!out.CompactionStarted.IsZero() || out.WaitReason != sessions.NoWait {
			t.Errorf("turn not ended: %+v", out)
		}
		if want := "agent process 4242 is gone; turn 3 was in flight"; evidenceBase(out.Evidence) != want || obs[0].Detail != want {
			t.Errorf("evidence %q / detail %q, want %q", out.Evidence, obs[0].Detail, want)
		}
		// The row says why (issue 20, item 12).
		if obs[0].Kind == TimelineMarkedInterrupted && obs[0].Cause != sessions.CauseProbe {
			t.Errorf("marked_interrupted cause %q, want probe", obs[0].Cause)
		}
	}
	agentRetry := working()
	agentRetry.State = sessions.Recovering
	agentRetry.Failure = sessions.Failure{Kind: sessions.RateLimit, RetryAt: at(time.Hour)}
	closed := interrupted()
	closed.State, closed.Evidence = sessions.Idle, "session closed"
	closed.ProcessAlive = true
	noPID := working()
	noPID.PID = 0

	runCases(t, []rcase{
		{name: "working", s: working(), now: at(time.Minute), probe: dead, state: sessions.Interrupted,
			obs: []string{TimelineMarkedInterrupted}, acts: []ActionKind{ActNudge}, check: gone},
		{name: "working with a tool and a task open", s: withTask(withTool(working(), "t1", "Bash", t0), "k1", "indexer", t0),
			now: at(time.Minute), probe: dead, state: sessions.Interrupted,
			obs: []string{TimelineMarkedInterrupted}, acts: []ActionKind{ActNudge}, check: gone},
		{name: "compacting", s: compacting(), now: at(time.Minute), probe: dead, state: sessions.Interrupted,
			obs: []string{TimelineMarkedInterrupted}, acts: []ActionKind{ActNudge}, check: gone},
		{name: "suspect", s: suspect(), now: at(20 * time.Minute), probe: dead, state: sessions.Interrupted,
			obs: []string{TimelineMarkedInterrupted}, acts: []ActionKind{ActNudge}, check: gone},
		{name: "waiting on a question", s: waiting(sessions.WaitQuestion), now: at(time.Minute), probe: dead, state: sessions.Interrupted,
			obs: []string{TimelineMarkedInterrupted}, acts: []ActionKind{ActNudge}, check: gone},
		{name: "waiting on a plan", s: waiting(sessions.WaitPlan), now: at(time.Minute), probe: dead, state: sessions.Interrupted,
			obs: []string{TimelineMarkedInterrupted}, acts: []ActionKind{ActNudge}, check: gone},
		{name: "waiting on a permission", s: waiting(sessions.WaitPermission), now: at(time.Minute), probe: dead, state: sessions.Interrupted,
			obs: []string{TimelineMarkedInterrupted}, acts: []ActionKind{ActNudge}, check: gone},
		// The agent was retrying a rate limit: Interrupted at once, but the
		// nudge waits for the provider's reset.
		{name: "agent retrying (recovering in turn)", s: agentRetry, now: at(time.Minute), probe: dead, state: sessions.Interrupted,
			obs: []string{TimelineMarkedInterrupted}, check: gone},
		{name: "no pid known", s: noPID, now: at(time.Minute), probe: dead, state: sessions.Interrupted,
			obs: []string{TimelineMarkedInterrupted}, acts: []ActionKind{ActNudge},
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if got := evidenceBase(out.Evidence); got != "agent process is gone; turn 3 was in flight" {
					t.Errorf("evidence %q", got)
				}
			}},
		{name: "unknown probe does not act", s: working(), now: at(time.Minute), probe: unknown, state: sessions.Working, same: true},
		{name: "alive probe does not act", s: working(), now: at(time.Minute), probe: alive, state: sessions.Working, same: true},
		{name: "dead between turns: only ProcessAlive", s: closed, now: at(time.Minute), probe: dead, state: sessions.Idle,
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if out.ProcessAlive || !out.UpdatedAt.Equal(at(time.Minute)) {
					t.Errorf("ProcessAlive %v UpdatedAt %v", out.ProcessAlive, out.UpdatedAt)
				}
			}},
		{name: "dead while waiting for review", s: waiting(sessions.WaitReview), now: at(time.Minute), probe: dead, state: sessions.WaitingOnUser},
		{name: "alive probe refreshes ProcessAlive", s: closed, now: at(time.Minute), probe: alive, state: sessions.Idle,
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if !out.ProcessAlive {
					t.Error("ProcessAlive not set from the probe")
				}
			}},
	})
}

func TestReconcileStallSuspectThresholds(t *testing.T) {
	p := specPolicy()
	tool := withTool(working(), "t1", "Bash", t0)
	task := withTask(working(), "k1", "indexer", t0)
	noEvent := working()
	noEvent.LastEventAt = time.Time{}
	twoTools := withTool(withTool(working(), "t2", "Read", at(time.Minute)), "t1", "Bash", t0)
	strict := func(p *Policy) { p.StallToolSuspect = 5 * time.Minute }
	marked := []string{TimelineMarkedSuspect}

	runCases(t, []rcase{
		{name: "plain: just under", s: working(), now: at(p.StallSuspect - time.Second), probe: alive, state: sessions.Working, same: true},
		{name: "plain: at the threshold", s: working(), now: at(p.StallSuspect), probe: alive, state: sessions.Suspect, obs: marked,
			check: wantEvidence("10 min silent, pid 4242 alive")},
		{name: "plain: just over", s: working(), now: at(p.StallSuspect + time.Second), probe: alive, state: sessions.Suspect, obs: marked},
		{name: "tool open: plain threshold does not apply", s: tool, now: at(p.StallSuspect), probe: alive, state: sessions.Working, same: true},
		{name: "tool open: just under", s: tool, now: at(p.StallToolSuspect - time.Second), probe: alive, state: sessions.Working, same: true},
		{name: "tool open: at the threshold", s: tool, now: at(p.StallToolSuspect), probe: alive, state: sessions.Suspect, obs: marked,
			check: wantEvidence("30 min silent, Bash open, pid 4242 alive")},
		{name: "task open: just under", s: task, now: at(p.StallToolSuspect - time.Second), probe: alive, state: sessions.Working, same: true},
		{name: "task open: just over", s: task, now: at(p.StallToolSuspect + time.Second), probe: alive, state: sessions.Suspect, obs: marked,
			check: wantEvidence("30 min silent, indexer open, pid 4242 alive")},
		{name: "oldest open call is named", s: twoTools, now: at(31 * time.Minute), probe: alive, state: sessions.Suspect, obs: marked,
			check: wantEvidence("31 min silent, Bash open, pid 4242 alive")},
		{name: "unprobed pid says so", s: working(), now: at(12 * time.Minute), probe: unknown, state: sessions.Suspect, obs: marked,
			check: wantEvidence("12 min silent, pid 4242 not probed")},
		{name: "no event yet: measured from the turn start, under", s: noEvent, now: at(p.StallSuspect - time.Second), probe: alive,
			state: sessions.Working, same: true},
		{name: "no event yet: measured from the turn start, at", s: noEvent, now: at(p.StallSuspect), probe: alive,
			state: sessions.Suspect, obs: marked},
		{name: "tool threshold below plain never tightens", s: tool, now: at(5 * time.Minute), policy: strict, probe: alive,
			state: sessions.Working, same: true},
		{name: "tool threshold below plain: plain applies", s: tool, now: at(p.StallSuspect), policy: strict, probe: alive,
			state: sessions.Suspect, obs: marked},
		// Past the hard limit already (the machine slept): Suspect only, the
		// interrupt waits for the next tick.
		{name: "hard limit already past: suspect first", s: working(), now: at(4 * time.Hour), probe: alive, state: sessions.Suspect, obs: marked,
			check: wantEvidence("4 h silent, pid 4242 alive")},
		{name: "silence is measured from the last event, not the turn start", s: func() sessions.Session {
			s := working()
			s.LastEventAt = at(time.Hour)
			return s
		}(), now: at(time.Hour + p.StallSuspect - time.Second), probe: alive, state: sessions.Working, same: true},
	})
}

func TestReconcileStallHardInterrupt(t *testing.T) {
	p := specPolicy()
	interruptSent := func(t *testing.T, out sessions.Session, _ []Observation, acts []Action) {
		t.Helper()
		sv := out.Supervision
		if sv.Recovery != RecoveryStall || sv.RecoveryAttempts != stallInterrupted || !sv.InterruptSentAt.Equal(at(p.StallHard)) {
			t.Errorf("supervision = %+v", sv)
		}
		if acts[0].TimelineKind != TimelineStallInterrupt {
			t.Errorf("timeline kind %q", acts[0].TimelineKind)
		}
		if !strings.Contains(out.Evidence, "interrupt sent at 11:30:00") {
			t.Errorf("evidence %q", out.Evidence)
		}
	}
	lateSuspect := suspect()
	lateSuspect.StateChangedAt = at(p.StallHard - time.Minute)
	fresh := suspect()
	fresh.LastEventAt = at(3 * time.Hour)

	runCases(t, []rcase{
		{name: "just under the hard limit", s: suspect(), now: at(p.StallHard - time.Second), probe: alive, state: sessions.Suspect, same: true},
		{name: "at the hard limit", s: suspect(), now: at(p.StallHard), probe: alive, state: sessions.Suspect,
			acts: []ActionKind{ActInterrupt}, check: all(interruptSent, wantDetail(0, "turn 3 silent for 150 min, past the 150 min hard-stall limit"))},
		{name: "tools do not relax the hard limit", s: withTool(suspect(), "t1", "Bash", t0), now: at(p.StallHard), probe: alive,
			state: sessions.Suspect, acts: []ActionKind{ActInterrupt}, check: wantDetail(0, "with Bash open")},
		{name: "measured from the last event, not from when it turned suspect", s: lateSuspect, now: at(p.StallHard), probe: alive,
			state: sessions.Suspect, acts: []ActionKind{ActInterrupt}},
		{name: "unknown probe still interrupts through the agent", s: suspect(), now: at(p.StallHard), probe: unknown,
			state: sessions.Suspect, acts: []ActionKind{ActInterrupt}},
		// Suspect is advisory: only Apply returns it to Working.
		{name: "never moves suspect back to working", s: fresh, now: at(3 * time.Hour), probe: alive, state: sessions.Suspect, same: true},
		{name: "custom hard limit just over", s: suspect(), now: at(20*time.Minute + time.Second), probe: alive,
			policy: func(p *Policy) { p.StallHard = 20 * time.Minute }, state: sessions.Suspect, acts: []ActionKind{ActInterrupt}},
	})
}

func TestReconcileStallBoundedEscalation(t *testing.T) {
	p := specPolicy()
	g := p.InterruptGrace
	sent := at(p.StallHard)
	s1, _, acts := reconcile(t, suspect(), sent, p, alive)
	if !slices.Equal(actKinds(acts), []ActionKind{ActInterrupt}) {
		t.Fatalf("want interrupt, got %v", actKinds(acts))
	}
	step := func(s sessions.Session, now time.Time, want ...ActionKind) sessions.Session {
		t.Helper()
		out, _, acts := reconcile(t, s, now, p, alive)
		if !slices.Equal(actKinds(acts), want) {
			t.Fatalf("at interrupt+%v: actions %v, want %v", now.Sub(sent), actKinds(acts), want)
		}
		if len(want) == 0 && !reflect.DeepEqual(out, s) {
			t.Fatalf("at interrupt+%v: session changed with no action", now.Sub(sent))
		}
		if out.State != sessions.Suspect || !out.InTurn {
			t.Fatalf("state %v in turn %v: the chain must not invent the abort", out.State, out.InTurn)
		}
		return out
	}
	step(s1, sent.Add(15*time.Second)) // the interrupt is never re-sent
	step(s1, sent.Add(g-time.Second))
	s2 := step(s1, sent.Add(g), ActTerminate)
	step(s2, sent.Add(g)) // same tick again: not twice
	step(s2, sent.Add(2*g-time.Second))
	s3 := step(s2, sent.Add(2*g), ActKill)
	step(s3, sent.Add(3*g-time.Second))
	s4 := step(s3, sent.Add(3*g), ActEscalate)
	if !s4.NeedsAttention || s4.Supervision.EscalatedGeneration != 3 {
		t.Fatalf("escalation not recorded: %+v", s4)
	}
	step(s4, sent.Add(time.Hour))
	acked := s4
	acked.NeedsAttention = false
	step(acked, sent.Add(time.Hour)) // the chain's last step is kept: no second escalation

	// A tick that arrives late never skips SIGTERM.
	late := step(s1, sent.Add(5*g), ActTerminate)
	step(late, sent.Add(5*g+time.Second), ActKill)
}

func TestReconcileStallChainEndsWithTheTurn(t *testing.T) {
	p := specPolicy()
	sent := at(p.StallHard)
	s1, _, _ := reconcile(t, suspect(), sent, p, alive)
	cleared := func(t *testing.T, out sessions.Session) {
		t.Helper()
		if out.Supervision != (sessions.Supervision{}) {
			t.Errorf("stall bookkeeping kept: %+v", out.Supervision)
		}
	}

	t.Run("the supervisor's abort lands: interrupted, then nudged", func(t *testing.T) {
		s := apply(s1, sent.Add(time.Second),
			sessions.Event{Kind: sessions.EvInterruptRequested, By: sessions.BySupervisor},
			sessions.Event{Kind: sessions.EvTurnAborted})
		if s.State != sessions.Interrupted || !strings.Contains(s.Evidence, "interrupted by the supervisor") {
			t.Fatalf("Apply: %v %q", s.State, s.Evidence)
		}
		out, _, acts := reconcile(t, s, sent.Add(15*time.Second), p, alive)
		if !slices.Equal(actKinds(acts), []ActionKind{ActNudge}) {
			t.Fatalf("actions %v", actKinds(acts))
		}
		cleared(t, out)
	})
	t.Run("the stream speaks again: no SIGTERM", func(t *testing.T) {
		s := apply(s1, sent.Add(time.Second), sessions.Event{Kind: sessions.EvActivity})
		out, _, acts := reconcile(t, s, sent.Add(p.InterruptGrace), p, alive)
		if len(acts) != 0 || out.State != sessions.Working {
			t.Fatalf("%v %v", out.State, actKinds(acts))
		}
		cleared(t, out)
	})
	t.Run("the process dies: interrupted at once", func(t *testing.T) {
		out, obs, acts := reconcile(t, s1, sent.Add(p.InterruptGrace), p, dead)
		if out.State != sessions.Interrupted || !slices.Equal(obsKinds(obs), []string{TimelineMarkedInterrupted}) ||
			!slices.Equal(actKinds(acts), []ActionKind{ActNudge}) {
			t.Fatalf("%v %v %v", out.State, obsKinds(obs), actKinds(acts))
		}
		cleared(t, out)
	})
	t.Run("a new turn starts: old interrupt forgotten", func(t *testing.T) {
		s := apply(s1, sent.Add(time.Second), sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.ByUser})
		out, _, acts := reconcile(t, s, sent.Add(time.Minute), p, alive)
		if len(acts) != 0 {
			t.Fatalf("actions %v", actKinds(acts))
		}
		cleared(t, out)
	})
}

func TestReconcileCompactionTimeout(t *testing.T) {
	p := specPolicy()
	failed := func(t *testing.T, out sessions.Session, obs []Observation, _ []Action) {
		t.Helper()
		want := "compaction ran past 600 s and was failed"
		if out.Failure.Kind != sessions.ContextOverflow || out.Failure.Message != want || obs[0].Detail != want {
			t.Errorf("failure %+v, detail %q", out.Failure, obs[0].Detail)
		}
		if out.InTurn || !out.CompactionStarted.IsZero() {
			t.Errorf("turn not ended: in turn %v, compaction started %v", out.InTurn, out.CompactionStarted)
		}
	}
	noRecover := func(p *Policy) { p.AutoRecover = false }
	noStart := compacting()
	noStart.CompactionStarted = time.Time{}
	noClock := noStart
	noClock.StateChangedAt = time.Time{}
	manual := compacting()
	manual.InTurn = false

	runCases(t, []rcase{
		{name: "just under", s: compacting(), now: at(p.CompactTimeout - time.Second), probe: alive, state: sessions.Compacting, same: true},
		// CHANGED(issue 10/10): the agent may still be compacting, so no
		// /compact and no retry is booked: failed and escalated at once.
		{name: "at the timeout: failed and escalated, nothing re-driven", s: compacting(), now: at(p.CompactTimeout), probe: alive,
			state: sessions.Errored, obs: []string{TimelineCompactionTimeout}, acts: []ActionKind{ActEscalate},
			check: all(failed, func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if !out.NeedsAttention || out.Supervision.Recovery != "" {
					t.Errorf("needs attention %v, recovery %q", out.NeedsAttention, out.Supervision.Recovery)
				}
			})},
		{name: "our own compaction times out: the round ends, no retry booked", s: func() sessions.Session {
			s := compacting()
			s.Supervision = sessions.Supervision{Recovery: RecoveryOverflow, RecoveryAttempts: 1, IncidentAttempts: 1, NextAttemptAt: at(p.CompactTimeout)}
			return s
		}(), now: at(p.CompactTimeout), probe: alive, state: sessions.Errored, obs: []string{TimelineCompactionTimeout}, acts: []ActionKind{ActEscalate},
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				// The late end of the compaction must not look like ours finishing.
				late := apply(out, at(p.CompactTimeout+time.Minute), sessions.Event{Kind: sessions.EvCompactionFinished, OK: true},
					sessions.Event{Kind: sessions.EvTurnCompleted})
				_, _, acts := reconcile(t, late, at(p.CompactTimeout+2*time.Minute), p, alive)
				if len(acts) != 0 {
					t.Errorf("after the late compaction end: %v", actKinds(acts))
				}
			}},
		{name: "at the timeout without auto-recovery: errored and escalated", s: compacting(), now: at(p.CompactTimeout + time.Second),
			policy: noRecover, probe: alive, state: sessions.Errored, obs: []string{TimelineCompactionTimeout}, acts: []ActionKind{ActEscalate},
			check: all(failed, func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if evidenceBase(out.Evidence) != "compaction ran past 600 s and was failed" || !out.NeedsAttention {
					t.Errorf("evidence %q needs attention %v", out.Evidence, out.NeedsAttention)
				}
			})},
		{name: "a compaction outside a turn times out too", s: manual, now: at(p.CompactTimeout), policy: noRecover, probe: alive,
			state: sessions.Errored, obs: []string{TimelineCompactionTimeout}, acts: []ActionKind{ActEscalate}},
		{name: "no start recorded: measured from the state change", s: noStart, now: at(p.CompactTimeout), policy: noRecover,
			probe: alive, state: sessions.Errored, obs: []string{TimelineCompactionTimeout}, acts: []ActionKind{ActEscalate}},
		{name: "no clock at all: the clock starts now", s: noClock, now: at(time.Hour), probe: alive, state: sessions.Compacting,
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if !out.CompactionStarted.Equal(at(time.Hour)) {
					t.Errorf("CompactionStarted = %v", out.CompactionStarted)
				}
				again, obs, _ := reconcile(t, out, at(time.Hour).Add(p.CompactTimeout), p, alive)
				if again.State != sessions.Errored || obsKinds(obs)[0] != TimelineCompactionTimeout {
					t.Errorf("then %v %v", again.State, obsKinds(obs))
				}
			}},
		{name: "custom timeout just over", s: compacting(), now: at(61 * time.Second), policy: func(p *Policy) { p.CompactTimeout = time.Minute },
			probe: alive, state: sessions.Errored, obs: []string{TimelineCompactionTimeout}, acts: []ActionKind{ActEscalate},
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if out.Failure.Message != "compaction ran past 60 s and was failed" {
					t.Errorf("message %q", out.Failure.Message)
				}
			}},
	})
}

func TestReconcileOverflowCompactAndRetry(t *testing.T) {
	p := specPolicy()
	overflow := sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.ContextOverflow, Message: "prompt is too long"}}
	byUs := sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.BySupervisor}
	now := t0
	tick := func(s sessions.Session, want ...ActionKind) (sessions.Session, []Action) {
		t.Helper()
		now = now.Add(15 * time.Second)
		out, _, acts := reconcile(t, s, now, p, alive)
		if !slices.Equal(actKinds(acts), want) {
			t.Fatalf("at %v in %v: actions %v, want %v", now.Sub(t0), s.State, actKinds(acts), want)
		}
		return out, acts
	}
	compactTurn := func(s sessions.Session) sessions.Session {
		return apply(s, now.Add(5*time.Second), byUs,
			sessions.Event{Kind: sessions.EvCompactionStarted},
			sessions.Event{Kind: sessions.EvCompactionFinished, OK: true},
			sessions.Event{Kind: sessions.EvTurnCompleted})
	}

	t.Run("compact, retry, complete: incident closed", func(t *testing.T) {
		s := apply(working(), now, overflow)
		s, acts := tick(s, ActCompact)
		if s.State != sessions.Recovering || s.Supervision.Recovery != RecoveryOverflow || s.Supervision.RecoveryAttempts != 1 ||
			acts[0].TimelineKind != TimelineOverflowRedrive || acts[0].TurnGeneration != 3 {
			t.Fatalf("after compact: %v %+v %+v", s.State, s.Supervision, acts[0])
		}
		s = apply(s, now.Add(time.Second), byUs)
		s, _ = tick(s) // the compaction turn runs: nothing to do
		s = compactTurn(s)
		if s.State != sessions.WaitingOnUser || s.WaitReason != sessions.WaitReview {
			t.Fatalf("Apply after compaction: %v %v", s.State, s.WaitReason)
		}
		s, acts = tick(s, ActRetryTurn)
		if s.State != sessions.Recovering || s.Supervision.Recovery != RecoveryOverflowRetry || acts[0].TimelineKind != TimelineOverflowRedrive {
			t.Fatalf("after retry: %v %+v", s.State, s.Supervision)
		}
		s, _ = tick(s) // waiting for the retried turn to start: nothing twice
		s = apply(s, now.Add(time.Second), byUs, sessions.Event{Kind: sessions.EvActivity}, sessions.Event{Kind: sessions.EvTurnCompleted})
		s, _ = tick(s)
		if s.Supervision != (sessions.Supervision{}) || s.State != sessions.WaitingOnUser {
			t.Fatalf("incident not closed: %v %+v", s.State, s.Supervision)
		}
	})

	t.Run("keeps overflowing: budget spent, escalated once", func(t *testing.T) {
		s := apply(working(), now, overflow)
		for round := 1; round <= p.OverflowMaxAttempts; round++ {
			s, _ = tick(s, ActCompact)
			if s.Supervision.RecoveryAttempts != round {
				t.Fatalf("round %d: attempts %d", round, s.Supervision.RecoveryAttempts)
			}
			s = compactTurn(s)
			s, _ = tick(s, ActRetryTurn)
			s = apply(s, now.Add(time.Second), byUs, overflow)
		}
		s, acts := tick(s, ActEscalate)
		if s.State != sessions.Errored || !s.NeedsAttention || !strings.Contains(acts[0].Detail, "2 of 2 compact-and-retry attempts spent") {
			t.Fatalf("%v %v %q", s.State, s.NeedsAttention, acts[0].Detail)
		}
		s, _ = tick(s)
		// Acknowledged: Idle, and the old overflow marker must not retry anything.
		s = apply(s, now, sessions.Event{Kind: sessions.EvAcknowledged})
		tick(s)
	})

	t.Run("compaction outside a turn ends idle: retried", func(t *testing.T) {
		s := apply(working(), now, overflow)
		s, _ = tick(s, ActCompact)
		s = apply(s, now.Add(time.Second), sessions.Event{Kind: sessions.EvCompactionStarted}, sessions.Event{Kind: sessions.EvCompactionFinished, OK: true})
		if s.State != sessions.Idle {
			t.Fatalf("Apply: %v", s.State)
		}
		tick(s, ActRetryTurn)
	})

	t.Run("compaction fails: next round", func(t *testing.T) {
		s := apply(working(), now, overflow)
		s, _ = tick(s, ActCompact)
		s = apply(s, now.Add(time.Second), sessions.Event{Kind: sessions.EvCompactionStarted},
			sessions.Event{Kind: sessions.EvCompactionFinished, Detail: "not enough messages"})
		s, _ = tick(s, ActCompact)
		if s.Supervision.RecoveryAttempts != 2 {
			t.Fatalf("attempts %d", s.Supervision.RecoveryAttempts)
		}
	})

	t.Run("auto-recovery off when the compaction finishes: nothing sent", func(t *testing.T) {
		s := apply(working(), now, overflow)
		s, _ = tick(s, ActCompact)
		s = compactTurn(s)
		out, _, acts := reconcile(t, s, now.Add(time.Minute), Policy{Enabled: true}, alive)
		if len(acts) != 0 || out.Supervision.Recovery != "" {
			t.Fatalf("%v %+v", actKinds(acts), out.Supervision)
		}
	})
}

func TestReconcileOverflowHoldIsBounded(t *testing.T) {
	p := specPolicy()
	due := at(p.CompactTimeout)
	runCases(t, []rcase{
		{name: "compaction not started: just under", s: hold(sessions.ContextOverflow, RecoveryOverflow, 1, due), now: due.Add(-time.Second),
			probe: alive, state: sessions.Recovering, same: true},
		{name: "compaction not started: at the deadline, next round", s: hold(sessions.ContextOverflow, RecoveryOverflow, 1, due), now: due,
			probe: alive, state: sessions.Recovering, obs: []string{TimelineStateChanged, TimelineStateChanged}, acts: []ActionKind{ActCompact},
			check: func(t *testing.T, out sessions.Session, obs []Observation, _ []Action) {
				if out.Supervision.RecoveryAttempts != 2 || !strings.Contains(obs[0].Detail, "Recovering → Errored: context overflow; the overflow recovery made no progress in 10 min") {
					t.Errorf("%+v %q", out.Supervision, obs[0].Detail)
				}
			}},
		{name: "retried turn not started: budget spent, escalated", s: hold(sessions.ContextOverflow, RecoveryOverflowRetry, 2, due), now: due,
			probe: alive, state: sessions.Errored, obs: []string{TimelineStateChanged}, acts: []ActionKind{ActEscalate}},
		{name: "auto-recovery switched off mid-hold", s: hold(sessions.ContextOverflow, RecoveryOverflow, 1, due), now: at(time.Minute),
			policy: func(p *Policy) { p.AutoRecover = false }, probe: alive, state: sessions.Errored,
			obs: []string{TimelineStateChanged}, acts: []ActionKind{ActEscalate}},
	})
}

func TestReconcileRateLimitDrain(t *testing.T) {
	withReset := func(kind sessions.FailureKind, reset time.Time) sessions.Session {
		s := errored(kind)
		s.Failure.RetryAt = reset
		return s
	}
	midIncident := func(attempts int) sessions.Session {
		s := errored(sessions.RateLimit)
		s.Supervision = sessions.Supervision{Recovery: RecoveryRateLimit, RecoveryAttempts: attempts}
		return s
	}
	nextAt := func(want time.Time) func(*testing.T, sessions.Session, []Observation, []Action) {
		return func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
			t.Helper()
			if !out.Supervision.NextAttemptAt.Equal(want) {
				t.Errorf("NextAttemptAt = +%v, want +%v", out.Supervision.NextAttemptAt.Sub(t0), want.Sub(t0))
			}
		}
	}
	bigBudget := func(p *Policy) { p.RateLimitMaxAttempts = 20 }
	drain := []string{TimelineRateLimitDrain}
	agentRetry := working()
	agentRetry.State = sessions.Recovering
	agentRetry.Failure = sessions.Failure{Kind: sessions.RateLimit, RetryAt: at(time.Minute)}
	agentRetry.Evidence = "agent retry 2/10 after 429"

	runCases(t, []rcase{
		{name: "reset from the stream, 2 h away", s: withReset(sessions.RateLimit, at(2*time.Hour)), now: t0, probe: alive,
			state: sessions.Recovering, obs: drain, check: all(nextAt(at(2*time.Hour)),
				wantEvidence("rate limited; continuing at 11:00:00 (attempt 1/5)"),
				func(t *testing.T, out sessions.Session, obs []Observation, _ []Action) {
					if obs[0].Detail != "scheduled: rate limited; continuing at 11:00:00 (attempt 1/5)" || out.Supervision.Recovery != RecoveryRateLimit {
						t.Errorf("%q %+v", obs[0].Detail, out.Supervision)
					}
				})},
		{name: "reset on another day shows the date", s: withReset(sessions.RateLimit, at(26*time.Hour)), now: t0, probe: alive,
			state: sessions.Recovering, obs: drain, check: wantEvidence("rate limited; continuing at 2026-03-15 11:00:00 (attempt 1/5)")},
		{name: "no reset: base backoff", s: errored(sessions.RateLimit), now: t0, probe: alive, state: sessions.Recovering, obs: drain,
			check: nextAt(at(time.Minute))},
		{name: "reset already past: backoff", s: withReset(sessions.RateLimit, at(-time.Second)), now: t0, probe: alive,
			state: sessions.Recovering, obs: drain, check: nextAt(at(time.Minute))},
		{name: "reset exactly now is not in the future: backoff", s: withReset(sessions.RateLimit, t0), now: t0, probe: alive,
			state: sessions.Recovering, obs: drain, check: nextAt(at(time.Minute))},
		{name: "reset just in the future wins", s: withReset(sessions.RateLimit, at(time.Second)), now: t0, probe: alive,
			state: sessions.Recovering, obs: drain, check: nextAt(at(time.Second))},
		{name: "second round doubles", s: midIncident(1), now: t0, probe: alive, state: sessions.Recovering, obs: drain,
			check: all(nextAt(at(2*time.Minute)), wantEvidence("rate limited; continuing at 09:02:00 (attempt 2/5)"))},
		{name: "third round doubles again", s: midIncident(2), now: t0, probe: alive, state: sessions.Recovering, obs: drain,
			check: nextAt(at(4 * time.Minute))},
		{name: "just under the cap", s: midIncident(4), now: t0, policy: bigBudget, probe: alive, state: sessions.Recovering, obs: drain,
			check: nextAt(at(16 * time.Minute))},
		{name: "capped", s: midIncident(5), now: t0, policy: bigBudget, probe: alive, state: sessions.Recovering, obs: drain,
			check: nextAt(at(30 * time.Minute))},
		{name: "last attempt left", s: midIncident(4), now: t0, probe: alive, state: sessions.Recovering, obs: drain},
		{name: "budget spent: escalated", s: midIncident(5), now: t0, probe: alive, state: sessions.Errored, acts: []ActionKind{ActEscalate},
			check: wantDetail(0, "5 of 5 attempts to continue spent")},
		{name: "another recovery's attempts do not count", s: func() sessions.Session {
			s := midIncident(3)
			s.Supervision.Recovery = RecoveryAuth
			return s
		}(), now: t0, probe: alive, state: sessions.Recovering, obs: drain, check: wantEvidence("rate limited; continuing at 09:01:00 (attempt 1/5)")},

		{name: "hold: just under", s: hold(sessions.RateLimit, RecoveryRateLimit, 0, at(2*time.Hour)), now: at(2*time.Hour - time.Second),
			probe: alive, state: sessions.Recovering, same: true},
		{name: "hold: at the reset, continue", s: hold(sessions.RateLimit, RecoveryRateLimit, 0, at(2*time.Hour)), now: at(2 * time.Hour),
			probe: alive, state: sessions.Recovering, acts: []ActionKind{ActContinue},
			check: all(nextAt(at(2*time.Hour+2*time.Minute)), wantDetail(0, "rate limited on turn 3; continuing the session (attempt 1/5)"),
				func(t *testing.T, out sessions.Session, _ []Observation, acts []Action) {
					if out.Supervision.RecoveryAttempts != 1 || acts[0].TimelineKind != TimelineRateLimitDrain {
						t.Errorf("%+v %q", out.Supervision, acts[0].TimelineKind)
					}
				})},
		{name: "hold: continue works with the process gone (resume)", s: hold(sessions.RateLimit, RecoveryRateLimit, 1, t0), now: t0,
			probe: dead, state: sessions.Recovering, acts: []ActionKind{ActContinue}},
		{name: "hold: last continue did not take, escalated", s: hold(sessions.RateLimit, RecoveryRateLimit, 5, t0), now: t0,
			probe: alive, state: sessions.Errored, obs: []string{TimelineStateChanged}, acts: []ActionKind{ActEscalate},
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if !out.NeedsAttention || out.Supervision.Recovery != "" || out.Failure.Kind != sessions.RateLimit {
					t.Errorf("%+v %+v", out.Supervision, out.Failure)
				}
			}},
		{name: "agent retrying on its own is left alone", s: agentRetry, now: at(5 * time.Minute), probe: alive,
			state: sessions.Recovering, same: true},
		{name: "agent retrying, auto-recovery off: still left alone", s: agentRetry, now: at(5 * time.Minute), probe: alive,
			policy: func(p *Policy) { p.AutoRecover = false }, state: sessions.Recovering, same: true},
	})
}

func TestReconcileRateLimitResetTwoHoursAway(t *testing.T) {
	p := specPolicy()
	reset := at(2 * time.Hour)
	s := apply(working(), t0, sessions.Event{Kind: sessions.EvTurnFailed,
		Failure: sessions.Failure{Kind: sessions.RateLimit, RetryAt: reset, Message: "429 Too Many Requests"}})
	var continued []time.Time
	for now := t0; now.Before(at(3 * time.Hour)); now = now.Add(15 * time.Second) {
		out, _, acts := reconcile(t, s, now, p, alive)
		for _, a := range acts {
			if a.Kind != ActContinue {
				t.Fatalf("unexpected %v at +%v", a.Kind, now.Sub(t0))
			}
			continued = append(continued, now)
			// The continue takes: a new turn that completes.
			out = apply(out, now.Add(time.Second), sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.BySupervisor},
				sessions.Event{Kind: sessions.EvActivity}, sessions.Event{Kind: sessions.EvTurnCompleted})
		}
		s = out
	}
	if len(continued) != 1 || !continued[0].Equal(reset) {
		t.Fatalf("continued at %v, want exactly once at the reset", continued)
	}
	if s.Supervision != (sessions.Supervision{}) || s.State != sessions.WaitingOnUser {
		t.Fatalf("incident not closed: %v %+v", s.State, s.Supervision)
	}
}

// A rate limit the failure gives no reset for is held until the reset of
// the spent plan window the agent reported before (its rate-limit event
// of an earlier line, the account's windows), not a guessed backoff; a
// window that is not spent, or whose reset has passed, leaves the backoff.
func TestReconcileDrainUsesReportedWindow(t *testing.T) {
	p := specPolicy()
	cases := []struct {
		name    string
		windows []sessions.RateWindow
		want    time.Time
	}{
		{"a spent window's reset", []sessions.RateWindow{{Kind: "five_hour", Status: "rejected", Used: -1, ResetsAt: at(90 * time.Minute)}}, at(90 * time.Minute)},
		{"the latest of two spent windows", []sessions.RateWindow{
			{Kind: "primary", Used: 100, ResetsAt: at(time.Hour)}, {Kind: "secondary", Used: 100, ResetsAt: at(5 * time.Hour)}}, at(5 * time.Hour)},
		{"a window not spent: the backoff", []sessions.RateWindow{{Kind: "primary", Used: 60, ResetsAt: at(time.Hour)}}, t0.Add(p.rateLimitDelay(0))},
		{"a reset already past: the backoff", []sessions.RateWindow{{Kind: "primary", Used: 100, ResetsAt: t0.Add(-time.Minute)}}, t0.Add(p.rateLimitDelay(0))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := working()
			s.RateWindows = c.windows
			s = apply(s, t0, sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.RateLimit, Message: "usage limit"}})
			out, _, _ := reconcile(t, s, t0, p, alive)
			if out.State != sessions.Recovering || !out.Supervision.NextAttemptAt.Equal(c.want) {
				t.Fatalf("%v next attempt %v, want %v", out.State, out.Supervision.NextAttemptAt, c.want)
			}
		})
	}
}

func TestReconcileAgentRetryOverdue(t *testing.T) {
	p := specPolicy()
	retry := working()
	retry.State = sessions.Recovering
	retry.Failure = sessions.Failure{Kind: sessions.RateLimit, RetryAt: at(30 * time.Minute)}
	noReset := retry
	noReset.Failure.RetryAt = time.Time{}
	runCases(t, []rcase{
		{name: "countdown running", s: retry, now: at(29 * time.Minute), probe: alive, state: sessions.Recovering, same: true},
		{name: "overdue, just under the suspect threshold", s: retry, now: at(30*time.Minute + p.StallSuspect - time.Second), probe: alive,
			state: sessions.Recovering, same: true},
		{name: "overdue and silent: suspect", s: retry, now: at(30*time.Minute + p.StallSuspect), probe: alive,
			state: sessions.Suspect, obs: []string{TimelineMarkedSuspect},
			check: wantEvidence("10 min silent since the agent's retry was due at 09:30:00, pid 4242 alive")},
		{name: "no retry time: measured from the last event", s: noReset, now: at(p.StallSuspect), probe: alive,
			state: sessions.Suspect, obs: []string{TimelineMarkedSuspect}},
	})
}

func TestReconcileAuthResume(t *testing.T) {
	p := specPolicy()
	spent := errored(sessions.Auth)
	spent.Supervision = sessions.Supervision{Recovery: RecoveryAuth, RecoveryAttempts: 3}
	due := at(p.AuthRetryInterval)
	runCases(t, []rcase{
		{name: "auth failure: wait for credentials", s: errored(sessions.Auth), now: t0, probe: alive, state: sessions.Recovering,
			obs: []string{TimelineAuthResume},
			check: all(wantEvidence("authentication failed; waiting for refreshed credentials, resuming at 09:05:00 (attempt 1/3)"),
				func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
					if out.Supervision.Recovery != RecoveryAuth || !out.Supervision.NextAttemptAt.Equal(due) {
						t.Errorf("%+v", out.Supervision)
					}
				})},
		{name: "hold: just under", s: hold(sessions.Auth, RecoveryAuth, 0, due), now: due.Add(-time.Second), probe: alive,
			state: sessions.Recovering, same: true},
		{name: "hold: at the interval, resume", s: hold(sessions.Auth, RecoveryAuth, 0, due), now: due, probe: alive,
			state: sessions.Recovering, acts: []ActionKind{ActContinue},
			check: func(t *testing.T, out sessions.Session, _ []Observation, acts []Action) {
				if acts[0].TimelineKind != TimelineAuthResume || out.Supervision.RecoveryAttempts != 1 ||
					!out.Supervision.NextAttemptAt.Equal(due.Add(p.AuthRetryInterval)) {
					t.Errorf("%q %+v", acts[0].TimelineKind, out.Supervision)
				}
			}},
		{name: "failed again with budget left", s: func() sessions.Session {
			s := errored(sessions.Auth)
			s.Supervision = sessions.Supervision{Recovery: RecoveryAuth, RecoveryAttempts: 2}
			return s
		}(), now: t0, probe: alive, state: sessions.Recovering, obs: []string{TimelineAuthResume}},
		{name: "budget spent: escalated", s: spent, now: t0, probe: alive, state: sessions.Errored, acts: []ActionKind{ActEscalate},
			check: wantDetail(0, "3 of 3 resumes after refreshed credentials spent")},
		{name: "hold: last resume did not take, escalated", s: hold(sessions.Auth, RecoveryAuth, 3, due), now: due, probe: alive,
			state: sessions.Errored, obs: []string{TimelineStateChanged}, acts: []ActionKind{ActEscalate}},
	})
}

func TestReconcileEscalatesWhenNothingAutomatic(t *testing.T) {
	var cases []rcase
	for _, k := range []sessions.FailureKind{sessions.Billing, sessions.OtherFailure, sessions.NoFailure} {
		cases = append(cases, rcase{name: k.Label(), s: errored(k), now: t0, probe: alive, state: sessions.Errored,
			acts: []ActionKind{ActEscalate},
			check: func(t *testing.T, out sessions.Session, _ []Observation, acts []Action) {
				if !out.NeedsAttention || out.Supervision.EscalatedGeneration != 3 || acts[0].TimelineKind != TimelineEscalated ||
					!strings.HasPrefix(acts[0].Detail, "Errored: turn 3 failed: ") {
					t.Errorf("%+v %+v", out, acts[0])
				}
				if !strings.HasSuffix(out.Evidence, "; needs your attention") {
					t.Errorf("evidence %q", out.Evidence)
				}
			}})
	}
	runCases(t, cases)
}

func TestReconcileEscalatesOncePerIncident(t *testing.T) {
	p := specPolicy()
	billing := sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.Billing, Message: "credit balance too low"}}
	s := apply(working(), t0, billing)
	s, _, acts := reconcile(t, s, at(time.Minute), p, alive)
	if !slices.Equal(actKinds(acts), []ActionKind{ActEscalate}) {
		t.Fatalf("first: %v", actKinds(acts))
	}
	for _, d := range []time.Duration{time.Minute, time.Hour, 48 * time.Hour} {
		if _, _, acts := reconcile(t, s, at(d), p, alive); len(acts) != 0 {
			t.Fatalf("again at +%v: %v", d, actKinds(acts))
		}
	}
	// Acknowledged: Idle, nothing more.
	acked := apply(s, at(2*time.Hour), sessions.Event{Kind: sessions.EvAcknowledged})
	if out, _, acts := reconcile(t, acked, at(2*time.Hour), p, alive); len(acts) != 0 || out.State != sessions.Idle || out.NeedsAttention {
		t.Fatalf("after ack: %v %v", out.State, actKinds(acts))
	}
	// A new incident (a new turn that fails the same way) escalates again.
	again := apply(s, at(3*time.Hour), sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.ByUser}, billing)
	out, _, acts := reconcile(t, again, at(3*time.Hour), p, alive)
	if !slices.Equal(actKinds(acts), []ActionKind{ActEscalate}) || acts[0].TurnGeneration != 4 || out.Supervision.EscalatedGeneration != 4 {
		t.Fatalf("new incident: %v %+v", actKinds(acts), out.Supervision)
	}
	// A needs-attention flag left from an older generation does not suppress it.
	stale := errored(sessions.Billing)
	stale.NeedsAttention = true
	stale.Supervision.EscalatedGeneration = 2
	if _, _, acts := reconcile(t, stale, t0, p, alive); !slices.Equal(actKinds(acts), []ActionKind{ActEscalate}) {
		t.Fatalf("stale flag: %v", actKinds(acts))
	}
}

func TestReconcileNudge(t *testing.T) {
	p := specPolicy()
	nudged := func(attempts int, last time.Time) sessions.Session {
		s := interrupted()
		s.Nudge = sessions.NudgeBudget{Attempts: attempts, LastNudge: last}
		return s
	}
	budget := func(attempts int, last time.Time) func(*testing.T, sessions.Session, []Observation, []Action) {
		return func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
			t.Helper()
			if out.Nudge.Attempts != attempts || !out.Nudge.LastNudge.Equal(last) {
				t.Errorf("nudge budget %+v, want %d at %v", out.Nudge, attempts, last)
			}
		}
	}
	pending := interrupted()
	pending.Failure = sessions.Failure{Kind: sessions.RateLimit, RetryAt: at(time.Hour)}
	leftover := interrupted()
	leftover.Supervision = sessions.Supervision{Recovery: RecoveryRateLimit, RecoveryAttempts: 2, NextAttemptAt: t0}
	done := interrupted()
	done.NeedsAttention = true
	done.Supervision.EscalatedGeneration = 3
	nudge, escalate := []ActionKind{ActNudge}, []ActionKind{ActEscalate}

	runCases(t, []rcase{
		{name: "never nudged: nudge at once", s: interrupted(), now: t0, probe: dead, state: sessions.Interrupted, acts: nudge,
			check: all(budget(1, t0),
				wantEvidence("process exited by signal SIGKILL during turn 3 — nudge 1/2 sent at 09:00:00; next nudge not before 09:10:00"),
				func(t *testing.T, _ sessions.Session, _ []Observation, acts []Action) {
					if acts[0].TimelineKind != TimelineNudgeSent || acts[0].Detail !=
						"turn 3 was interrupted (process exited by signal SIGKILL during turn 3); sending the continuation nudge (1/2)" {
						t.Errorf("%+v", acts[0])
					}
				})},
		{name: "live process: nudge too (executor picks live vs resume)", s: interrupted(), now: t0, probe: alive,
			state: sessions.Interrupted, acts: nudge},
		{name: "cooldown: just under", s: nudged(1, t0), now: at(p.NudgeCooldown - time.Second), probe: dead, state: sessions.Interrupted, same: true},
		{name: "cooldown: elapsed", s: nudged(1, t0), now: at(p.NudgeCooldown), probe: dead, state: sessions.Interrupted, acts: nudge,
			check: all(budget(2, at(p.NudgeCooldown)), wantDetail(0, "(2/2)"))},
		{name: "cap reached: the last nudge gets its cooldown", s: nudged(2, t0), now: at(p.NudgeCooldown - time.Second), probe: dead,
			state: sessions.Interrupted, same: true},
		{name: "cap reached: escalated", s: nudged(2, t0), now: at(p.NudgeCooldown), probe: dead, state: sessions.Interrupted, acts: escalate,
			check: all(budget(2, t0), wantDetail(0, "2 of 2 continuation nudges spent"), func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if !out.NeedsAttention {
					t.Error("needs-attention not raised")
				}
			})},
		{name: "zero budget: escalated", s: interrupted(), now: t0, probe: dead, policy: func(p *Policy) { p.NudgeMaxAttempts = 0 },
			state: sessions.Interrupted, acts: escalate, check: wantDetail(0, "the nudge budget is zero")},
		{name: "nudge disabled: escalated", s: interrupted(), now: t0, probe: dead, policy: func(p *Policy) { p.NudgeEnabled = false },
			state: sessions.Interrupted, acts: escalate, check: wantDetail(0, "the continuation nudge is off")},
		{name: "auto-recovery off: escalated", s: interrupted(), now: t0, probe: dead, policy: func(p *Policy) { p.AutoRecover = false },
			state: sessions.Interrupted, acts: escalate, check: wantDetail(0, "automatic recovery is off")},
		{name: "provider reset pending: wait", s: pending, now: at(time.Hour - time.Second), probe: dead, state: sessions.Interrupted, same: true},
		{name: "provider reset reached: nudge", s: pending, now: at(time.Hour), probe: dead, state: sessions.Interrupted, acts: nudge},
		{name: "a leftover recovery is superseded", s: leftover, now: t0, probe: dead, state: sessions.Interrupted, acts: nudge,
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if out.Supervision != (sessions.Supervision{}) {
					t.Errorf("%+v", out.Supervision)
				}
			}},
		{name: "already escalated: nothing", s: done, now: at(time.Hour), probe: dead, state: sessions.Interrupted, same: true},
	})
}

func TestReconcileNudgeCapCooldownRefill(t *testing.T) {
	p := specPolicy()
	died := func(s sessions.Session, now time.Time) sessions.Session {
		return apply(s, now, sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.BySupervisor},
			sessions.Event{Kind: sessions.EvActivity},
			sessions.Event{Kind: sessions.EvProcessExited, Signal: "SIGKILL"})
	}
	expect := func(s sessions.Session, now time.Time, want ...ActionKind) sessions.Session {
		t.Helper()
		out, _, acts := reconcile(t, s, now, p, dead)
		if !slices.Equal(actKinds(acts), want) {
			t.Fatalf("at +%v (nudges %d): %v, want %v", now.Sub(t0), s.Nudge.Attempts, actKinds(acts), want)
		}
		return out
	}

	s := expect(interrupted(), t0, ActNudge)
	s = died(s, at(time.Minute)) // the nudged turn dies too (generation 4)
	s = expect(s, at(2*time.Minute))
	s = expect(s, at(p.NudgeCooldown-time.Second))
	s = expect(s, at(p.NudgeCooldown), ActNudge)
	s = died(s, at(p.NudgeCooldown+time.Minute))
	s = expect(s, at(p.NudgeCooldown+2*time.Minute)) // cap reached; the last nudge's cooldown runs
	s = expect(s, at(2*p.NudgeCooldown), ActEscalate)
	if s.State != sessions.Interrupted || !s.NeedsAttention || s.TurnGeneration != 5 {
		t.Fatalf("%v %v gen %d", s.State, s.NeedsAttention, s.TurnGeneration)
	}
	expect(s, at(3*p.NudgeCooldown))

	// Refill: a nudged turn that completes refills the budget, so a later
	// incident is nudged again from 1, without waiting for a cooldown.
	r := expect(interrupted(), t0, ActNudge)
	r = apply(r, at(time.Minute), sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.BySupervisor},
		sessions.Event{Kind: sessions.EvTurnCompleted})
	if r.Nudge != (sessions.NudgeBudget{}) {
		t.Fatalf("Apply did not refill: %+v", r.Nudge)
	}
	r = expect(r, at(2*time.Minute))
	r = died(r, at(3*time.Minute))
	r = expect(r, at(4*time.Minute), ActNudge)
	if r.Nudge.Attempts != 1 {
		t.Fatalf("attempts after refill %d", r.Nudge.Attempts)
	}
}

func TestReconcileWaitingOnUserIsNeverActedOn(t *testing.T) {
	var cases []rcase
	for _, reason := range []sessions.WaitReason{sessions.WaitQuestion, sessions.WaitPlan, sessions.WaitPermission, sessions.WaitReview} {
		base := waiting(reason)
		failed := base
		failed.Failure = sessions.Failure{Kind: sessions.RateLimit, Message: "429"}
		budgetSpent := base
		budgetSpent.Nudge = sessions.NudgeBudget{Attempts: 9, LastNudge: t0}
		holdLeft := failed
		holdLeft.Supervision = sessions.Supervision{Recovery: RecoveryRateLimit, RecoveryAttempts: 5, NextAttemptAt: t0}
		for name, s := range map[string]sessions.Session{"plain": base, "with a failure": failed, "nudges spent": budgetSpent, "hold left over": holdLeft} {
			for _, probe := range []Probe{alive, unknown} {
				cases = append(cases, rcase{
					name: fmt.Sprintf("%s/%s/known=%v", reason, name, probe.Known), s: s, now: at(48 * time.Hour), probe: probe,
					state: sessions.WaitingOnUser, same: true,
				})
			}
		}
	}
	// The review of a finished turn, with no turn in flight, is not touched by
	// a dead process either.
	cases = append(cases, rcase{name: "review/dead process", s: waiting(sessions.WaitReview), now: at(48 * time.Hour), probe: dead, state: sessions.WaitingOnUser})
	runCases(t, cases)
}

func TestReconcileGenerationGuard(t *testing.T) {
	p := specPolicy()
	out, _, acts := reconcile(t, interrupted(), t0, p, dead)
	nudge := acts[0]
	if Stale(nudge, out) {
		t.Fatal("fresh nudge is stale")
	}
	if !Stale(nudge, apply(out, at(time.Second), sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.ByUser})) {
		t.Error("a nudge decided for turn 3 survives turn 4")
	}
	other := out
	other.ID = "s2"
	if !Stale(nudge, other) {
		t.Error("an action for another session is not stale")
	}
	older := out
	older.TurnGeneration = 2
	if !Stale(nudge, older) {
		t.Error("an action from a newer generation than the session's is not stale")
	}

	susp, _, acts := reconcile(t, suspect(), at(p.StallHard), p, alive)
	interrupt := acts[0]
	if Stale(interrupt, susp) {
		t.Fatal("fresh interrupt is stale")
	}
	aborted := apply(susp, at(p.StallHard+time.Second), sessions.Event{Kind: sessions.EvTurnAborted})
	if aborted.TurnGeneration != interrupt.TurnGeneration || !Stale(interrupt, aborted) {
		t.Error("an interrupt for a turn no longer in flight is not stale")
	}
	for _, k := range []ActionKind{ActTerminate, ActKill} {
		a := interrupt
		a.Kind = k
		if !Stale(a, aborted) {
			t.Errorf("%v for a turn no longer in flight is not stale", k)
		}
	}
	esc := Action{Kind: ActEscalate, SessionID: "s1", TurnGeneration: 3}
	if Stale(esc, aborted) {
		t.Error("escalation for the same generation is stale")
	}
}

func TestReconcileSwitches(t *testing.T) {
	p := specPolicy()
	type want struct {
		state sessions.State
		acts  []ActionKind
	}
	scenarios := []struct {
		name  string
		s     sessions.Session
		now   time.Time
		probe Probe
	}{
		{"stalled working", working(), at(p.StallSuspect), alive},
		{"hard-stalled suspect", suspect(), at(p.StallHard), alive},
		{"dead mid-turn", working(), at(time.Minute), dead},
		{"compaction past limit", compacting(), at(p.CompactTimeout), alive},
		{"rate limited", errored(sessions.RateLimit), t0, alive},
		{"interrupted", interrupted(), t0, dead},
	}
	policies := []struct {
		name  string
		tweak func(*Policy)
		want  []want
	}{
		{"defaults", func(*Policy) {}, []want{
			{sessions.Suspect, nil}, {sessions.Suspect, []ActionKind{ActInterrupt}}, {sessions.Interrupted, []ActionKind{ActNudge}},
			// CHANGED(issue 10/10): a timed-out compaction is escalated, not re-driven.
			{sessions.Errored, []ActionKind{ActEscalate}}, {sessions.Recovering, nil}, {sessions.Interrupted, []ActionKind{ActNudge}},
		}},
		{"disabled", func(p *Policy) { p.Enabled = false }, []want{
			{sessions.Working, nil}, {sessions.Suspect, nil}, {sessions.Working, nil},
			{sessions.Compacting, nil}, {sessions.Errored, nil}, {sessions.Interrupted, nil},
		}},
		// Status reconciliation stays on; every recovery becomes an escalation.
		{"auto-recover off", func(p *Policy) { p.AutoRecover = false }, []want{
			{sessions.Suspect, nil}, {sessions.Suspect, []ActionKind{ActInterrupt}}, {sessions.Interrupted, []ActionKind{ActEscalate}},
			{sessions.Errored, []ActionKind{ActEscalate}}, {sessions.Errored, []ActionKind{ActEscalate}}, {sessions.Interrupted, []ActionKind{ActEscalate}},
		}},
		// Only the nudge is off: the recoveries that send no continuation
		// text still run (a managed stall's interrupt).
		// CHANGED(issue 20 item 2): a rate-limit continue sends the
		// continuation text, so it is a nudge and escalates with it off.
		{"nudge off", func(p *Policy) { p.NudgeEnabled = false }, []want{
			{sessions.Suspect, nil}, {sessions.Suspect, []ActionKind{ActInterrupt}}, {sessions.Interrupted, []ActionKind{ActEscalate}},
			{sessions.Errored, []ActionKind{ActEscalate}}, {sessions.Errored, []ActionKind{ActEscalate}}, {sessions.Interrupted, []ActionKind{ActEscalate}},
		}},
	}
	for _, pol := range policies {
		for i, sc := range scenarios {
			t.Run(pol.name+"/"+sc.name, func(t *testing.T) {
				q := specPolicy()
				pol.tweak(&q)
				out, _, acts := reconcile(t, sc.s, sc.now, q, sc.probe)
				w := pol.want[i]
				if out.State != w.state || !slices.Equal(actKinds(acts), w.acts) {
					t.Errorf("got %v %v, want %v %v", out.State, actKinds(acts), w.state, w.acts)
				}
			})
		}
	}
}

func TestReconcileIncoherentInput(t *testing.T) {
	lostHold := errored(sessions.RateLimit)
	lostHold.State = sessions.Recovering
	bareHold := errored(sessions.NoFailure)
	bareHold.State, bareHold.Failure = sessions.Recovering, sessions.Failure{}
	spinner := working()
	spinner.InTurn = false
	noEvidence := interrupted()
	noEvidence.Evidence = ""
	noEvidence.NeedsAttention, noEvidence.Supervision.EscalatedGeneration = true, 3
	unknownState := working()
	unknownState.State = 42

	runCases(t, []rcase{
		{name: "unknown state: errored and escalated", s: unknownState, now: t0, probe: alive, state: sessions.Errored,
			obs: []string{TimelineStateChanged}, acts: []ActionKind{ActEscalate},
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if out.InTurn || out.Failure.Kind != sessions.OtherFailure {
					t.Errorf("%+v", out)
				}
			}},
		{name: "working with no turn in flight: idle", s: spinner, now: t0, probe: alive, state: sessions.Idle,
			obs: []string{TimelineStateChanged}, check: wantEvidence("no turn is in flight; the working state was stale")},
		{name: "recovering with its bookkeeping lost: re-driven", s: lostHold, now: t0, probe: alive, state: sessions.Recovering,
			obs: []string{TimelineStateChanged, TimelineRateLimitDrain}},
		{name: "recovering with nothing behind it: escalated", s: bareHold, now: t0, probe: alive, state: sessions.Errored,
			obs: []string{TimelineStateChanged}, acts: []ActionKind{ActEscalate}},
		{name: "missing evidence is filled", s: noEvidence, now: t0, probe: dead, state: sessions.Interrupted,
			check: wantEvidence("Interrupted (no evidence was recorded)")},
	})
}

// TestReconcileDoesNotMutateInput: whatever Reconcile decides, the session
// it was given is unchanged, through every map and pointer.
func TestReconcileDoesNotMutateInput(t *testing.T) {
	code := 137
	by := sessions.BySupervisor
	rich := withTask(withTool(working(), "t1", "Bash", t0), "k1", "indexer", t0)
	rich.Permission = &sessions.Permission{RequestID: "r", Tool: "Bash"}
	rich.InterruptBy = &by
	rich.LastExitCode = &code
	rich.Supervision = sessions.Supervision{Recovery: RecoveryStall, RecoveryAttempts: 1, InterruptSentAt: at(150 * time.Minute)}
	rich.Nudge = sessions.NudgeBudget{Attempts: 1, LastNudge: t0}
	rich.Failure = sessions.Failure{Kind: sessions.RateLimit, RetryAt: at(time.Hour), Message: "429"}

	for _, st := range sessions.AllStates {
		for _, probe := range []Probe{alive, dead, unknown} {
			for _, d := range []time.Duration{0, 11 * time.Minute, 151 * time.Minute, 10 * time.Hour} {
				s := rich
				s.State = st
				// Snapshot through JSON too: a shared map or pointer would show up here.
				before, _ := json.Marshal(s)
				// The output may share the input's maps and pointers (sessions
				// are values nobody writes through: Apply clones before it
				// changes anything); Reconcile itself must never write
				// through them.
				reconcile(t, s, at(d), specPolicy(), probe)
				after, _ := json.Marshal(s)
				if string(before) != string(after) {
					t.Fatalf("%v/%v/+%v: input shares memory with the output", st, probe, d)
				}
			}
		}
	}
}

func TestReconcileSteadySessionIsUntouched(t *testing.T) {
	// Nothing due: the session comes back deeply equal (UpdatedAt included)
	// with no observations or actions, so the loop can skip writing it.
	for name, s := range map[string]sessions.Session{
		"quiet working":   working(),
		"idle":            func() sessions.Session { s := working(); s.State, s.InTurn = sessions.Idle, false; return s }(),
		"review":          waiting(sessions.WaitReview),
		"hold before due": hold(sessions.RateLimit, RecoveryRateLimit, 1, at(time.Hour)),
		"escalated errored": func() sessions.Session {
			s := errored(sessions.Billing)
			s.NeedsAttention = true
			s.Supervision.EscalatedGeneration = 3
			return s
		}(),
		"compacting in time": compacting(),
	} {
		out, obs, acts := reconcile(t, s, at(5*time.Minute), specPolicy(), alive)
		if !reflect.DeepEqual(out, s) || obs != nil || acts != nil {
			t.Errorf("%s: changed: %+v %v %v", name, out, obs, acts)
		}
	}
}

// TestReconcileSteadyTickAllocatesNothing: the tick reconciles every
// session every few seconds, and for a session nothing is due for it must
// not allocate (a closure over the reconciler once moved it to the heap on
// every call).
func TestReconcileSteadyTickAllocatesNothing(t *testing.T) {
	now := at(3 * time.Hour)
	p := specPolicy()
	for k := quietTurn; k <= coolingDown; k++ {
		s := steadySession(k, 1, now)
		if n := testing.AllocsPerRun(100, func() { Reconcile(s, now, p, alive) }); n != 0 {
			t.Errorf("steady session kind %d: %v allocations per Reconcile, want 0", k, n)
		}
	}
}

// TestReconcileProperty drives Reconcile with random sessions, times,
// probes and policies: it must never panic, always return a valid state with
// evidence (the invariants in invalid), and never decide the same action
// twice when called again at the same instant.
func TestReconcileProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := range n {
		s, now, p, probe := randomCase(rng)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("case %d panicked: %v\n%+v", i, r, s)
				}
			}()
			seen := map[ActionKind]bool{}
			cur := s
			for call := range 3 {
				out, _, acts := reconcile(t, cur, now, p, probe)
				for _, a := range acts {
					if seen[a.Kind] {
						t.Fatalf("case %d call %d: %v decided twice at the same instant\nin %+v", i, call, a.Kind, s)
					}
					seen[a.Kind] = true
				}
				cur = out
			}
		}()
	}
}

func randomCase(r *rand.Rand) (sessions.Session, time.Time, Policy, Probe) {
	span := func(max time.Duration) time.Duration { return time.Duration(r.Int64N(int64(max))) + time.Second }
	when := func() time.Time {
		if r.IntN(5) == 0 {
			return time.Time{}
		}
		return t0.Add(time.Duration(r.Int64N(int64(12*time.Hour))) - 6*time.Hour)
	}
	states := append(slices.Clone(sessions.AllStates), sessions.State(42))
	kinds := []sessions.FailureKind{sessions.NoFailure, sessions.RateLimit, sessions.Overloaded, sessions.Network, sessions.ContextOverflow,
		sessions.Auth, sessions.Billing, sessions.OtherFailure}
	recoveries := []string{"", RecoveryOverflow, RecoveryOverflowRetry, RecoveryRateLimit, RecoveryAuth, RecoveryStall, RecoveryTransient, RecoveryUserStop, "bogus"}
	evidence := []string{"", "stream active", "x — old note"}

	s := sessions.Session{
		ID: "p", PID: r.IntN(2) * 4242, ProcessAlive: r.IntN(2) == 0,
		State: states[r.IntN(len(states))], Evidence: evidence[r.IntN(len(evidence))],
		WaitReason: sessions.WaitReason(r.IntN(5)), NeedsAttention: r.IntN(4) == 0,
		TurnGeneration: r.Int64N(5), InTurn: r.IntN(2) == 0, TurnStarted: when(), LastEventAt: when(),
		CompactionStarted: when(), StateChangedAt: when(), UpdatedAt: when(),
		Failure: sessions.Failure{Kind: kinds[r.IntN(len(kinds))], RetryAt: when()},
		Nudge:   sessions.NudgeBudget{Attempts: r.IntN(4), LastNudge: when()},
		Supervision: sessions.Supervision{
			Recovery: recoveries[r.IntN(len(recoveries))], RecoveryAttempts: r.IntN(7),
			NextAttemptAt: when(), InterruptSentAt: when(), EscalatedGeneration: r.Int64N(5),
			IncidentStarted: when(), OfflineSince: when(), OfflineFor: time.Duration(r.Int64N(int64(time.Hour))),
		},
	}
	if r.IntN(3) == 0 {
		s = withTool(s, "t", []string{"", "Bash"}[r.IntN(2)], when())
	}
	if r.IntN(3) == 0 {
		by := sessions.Actor(r.IntN(2))
		s.InterruptBy, s.InterruptAt = &by, when()
	}
	if r.IntN(4) == 0 {
		s = withTask(s, "k", "indexer", when())
	}
	p := Policy{
		Enabled: r.IntN(10) != 0, AutoRecover: r.IntN(4) != 0, NudgeEnabled: r.IntN(4) != 0,
		StallSuspect: span(time.Hour), StallToolSuspect: span(2 * time.Hour), StallHard: span(4 * time.Hour),
		NudgeCooldown: span(time.Hour), CompactTimeout: span(time.Hour), NudgeMaxAttempts: r.IntN(4),
		InterruptGrace: span(time.Minute), OverflowMaxAttempts: r.IntN(4), RateLimitMaxAttempts: r.IntN(7),
		AuthMaxAttempts: r.IntN(4), RateLimitBaseBackoff: span(time.Minute), RateLimitMaxBackoff: span(time.Hour),
		AuthRetryInterval: span(10 * time.Minute), TransientWindow: span(3 * time.Hour),
	}
	probe := Probe{Known: r.IntN(3) != 0, Alive: r.IntN(2) == 0, Offline: r.IntN(4) == 0}
	if r.IntN(3) == 0 {
		s.AgentSessionID, probe.TurnEndedAt, p.LostResultAfter = "a", when(), span(10*time.Minute)
	}
	return s, t0.Add(time.Duration(r.Int64N(int64(8 * time.Hour)))), p, probe
}

func TestReconcileActionKindNames(t *testing.T) {
	want := map[ActionKind]string{
		ActInterrupt: "interrupt", ActTerminate: "terminate", ActKill: "kill", ActCompact: "compact",
		ActRetryTurn: "retry_turn", ActContinue: "continue", ActNudge: "nudge", ActEscalate: "escalate", ActResume: "resume",
	}
	for k, name := range want {
		if k.String() != name || !k.Valid() {
			t.Errorf("%d: %q", int(k), k.String())
		}
		b, err := k.MarshalText()
		var back ActionKind
		if err != nil || back.UnmarshalText(b) != nil || back != k {
			t.Errorf("%v does not round-trip: %v", k, err)
		}
	}
	for _, bad := range []ActionKind{0, ActResume + 1, -1} {
		if bad.Valid() || !strings.HasPrefix(bad.String(), "action_kind(") {
			t.Errorf("%d: valid %v, %q", int(bad), bad.Valid(), bad.String())
		}
		if _, err := bad.MarshalText(); err == nil {
			t.Errorf("%d marshals", int(bad))
		}
	}
	var k ActionKind
	if k.UnmarshalText([]byte("reboot")) == nil {
		t.Error("unknown name parsed")
	}
}

func TestReconcileHumanPhrases(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0 s", 45 * time.Second: "45 s", time.Minute: "1 min", 150 * time.Minute: "150 min",
		3 * time.Hour: "3 h", 3*time.Hour + 5*time.Minute: "3 h 5 min",
	} {
		if got := humanSpan(d); got != want {
			t.Errorf("humanSpan(%v) = %q, want %q", d, got, want)
		}
	}
	if got := clockPhrase(at(time.Hour), t0); got != "10:00:00" {
		t.Errorf("same day: %q", got)
	}
	if got := clockPhrase(at(15*time.Hour), t0); got != "2026-03-15 00:00:00" {
		t.Errorf("next day: %q", got)
	}
}

func TestPolicyDefaults(t *testing.T) {
	p := specPolicy()
	want := Policy{
		Enabled: true, AutoRecover: true, NudgeEnabled: true,
		StallSuspect: 10 * time.Minute, StallToolSuspect: 30 * time.Minute, StallHard: 150 * time.Minute,
		NudgeCooldown: 10 * time.Minute, CompactTimeout: 600 * time.Second, NudgeMaxAttempts: 2,
		InterruptGrace: 30 * time.Second, LostResultAfter: time.Minute, OverflowMaxAttempts: 2, RateLimitMaxAttempts: 5, AuthMaxAttempts: 3,
		RateLimitBaseBackoff: time.Minute, RateLimitMaxBackoff: 30 * time.Minute, AuthRetryInterval: 5 * time.Minute,
		TransientWindow: 90 * time.Minute,
	}
	if p != want {
		t.Fatalf("specPolicy() = %+v", p)
	}
}

func TestPolicyRateLimitBackoff(t *testing.T) {
	p := specPolicy()
	for attempts, want := range map[int]time.Duration{
		0: time.Minute, 1: 2 * time.Minute, 2: 4 * time.Minute, 4: 16 * time.Minute, 5: 30 * time.Minute, 1 << 40: 30 * time.Minute,
	} {
		if got := p.rateLimitDelay(attempts); got != want {
			t.Errorf("attempts %d: %v, want %v", attempts, got, want)
		}
	}
	uncapped := p
	uncapped.RateLimitMaxBackoff = 0
	if got := uncapped.rateLimitDelay(1 << 40); got <= 0 {
		t.Errorf("uncapped backoff wrapped: %v", got)
	}
	zero := p
	zero.RateLimitBaseBackoff = 0
	if got := zero.rateLimitDelay(3); got != 0 {
		t.Errorf("zero base: %v", got)
	}
}

// BenchmarkReconcile10kSteady is the realistic tick: 10,000 sessions of
// which none is due for anything (quiet turns, open tools, idle, reviews,
// holds counting down, nudges cooling down).
func BenchmarkReconcile10kSteady(b *testing.B) {
	const n = 10000
	now := at(3 * time.Hour)
	list := make([]sessions.Session, n)
	for i := range list {
		list[i] = steadySession([]steadyKind{quietTurn, quietTurn, quietTurn, longTool, idleSession, review, rateLimitHold, coolingDown}[i%8], i, now)
	}
	benchTick(b, list, nil, now, specPolicy())
}

// BenchmarkReconcile10k reconciles 10,000 varied sessions per op — the shape
// of one tick over a large install — and reports the cost per session.
func BenchmarkReconcile10k(b *testing.B) {
	const n = 10000
	now := at(3 * time.Hour)
	list := make([]sessions.Session, n)
	probes := make([]Probe, n)
	for i := range list {
		probe := alive
		switch k := i % 20; {
		case k < 8: // the common case: a live, quiet turn
			list[i] = steadySession(quietTurn, i, now)
		case k < 10:
			list[i] = steadySession(longTool, i, now)
		case k < 12:
			list[i] = steadySession(idleSession, i, now)
		case k == 12:
			list[i] = steadySession(review, i, now)
		case k == 13:
			list[i] = waiting(sessions.WaitPermission)
		case k == 14: // stalls: becomes Suspect
			list[i] = working()
		case k == 15: // hard stall: interrupt
			list[i] = suspect()
		case k == 16: // process gone mid-turn: Interrupted + nudge
			list[i], probe = working(), dead
		case k == 17:
			list[i] = errored(sessions.RateLimit)
		case k == 18:
			list[i] = steadySession(rateLimitHold, i, now)
		default:
			list[i] = steadySession(coolingDown, i, now)
		}
		list[i].ID = fmt.Sprintf("s%05d", i)
		probes[i] = probe
	}
	benchTick(b, list, probes, now, specPolicy())
}

// steadyKind is a session nothing is due for at the benchmarks' now.
type steadyKind int

const (
	quietTurn steadyKind = iota
	longTool
	idleSession
	review
	rateLimitHold
	coolingDown
)

// steadySession is session i of kind k at now.
func steadySession(k steadyKind, i int, now time.Time) sessions.Session {
	var s sessions.Session
	switch k {
	case quietTurn:
		s = working()
		s.LastEventAt = now.Add(-time.Duration(i%600) * time.Second)
	case longTool:
		s = withTool(working(), "t", "Bash", now.Add(-20*time.Minute))
		s.LastEventAt = now.Add(-20 * time.Minute)
	case idleSession:
		s = working()
		s.State, s.InTurn, s.Evidence = sessions.Idle, false, "agent idle"
	case review:
		s = waiting(sessions.WaitReview)
	case rateLimitHold:
		s = hold(sessions.RateLimit, RecoveryRateLimit, 1, now.Add(time.Minute))
	case coolingDown:
		s = interrupted()
		s.Nudge = sessions.NudgeBudget{Attempts: 1, LastNudge: now.Add(-time.Minute)}
	}
	s.ID = fmt.Sprintf("s%05d", i)
	return s
}

// benchTick runs Reconcile over list once per op and reports ns and
// allocations per session, and the actions one tick decides.
func benchTick(b *testing.B, list []sessions.Session, probes []Probe, now time.Time, p Policy) {
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ReportAllocs()
	b.ResetTimer()
	acted := 0
	for b.Loop() {
		acted = 0
		for i := range list {
			probe := alive
			if probes != nil {
				probe = probes[i]
			}
			_, _, acts, _ := Reconcile(list[i], now, p, probe)
			acted += len(acts)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	per := float64(b.N) * float64(len(list))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/session")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/per, "allocs/session")
	b.ReportMetric(float64(acted), "actions/tick")
}

// --- issue 10 ---

// Item 2: the liveness rule ends a turn the user asked to stop as their stop.
func TestReconcileUserStopOnADeadProcess(t *testing.T) {
	stopped := func(s sessions.Session) sessions.Session {
		return apply(s, t0, sessions.Event{Kind: sessions.EvInterruptRequested, By: sessions.ByUser})
	}
	review := func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
		t.Helper()
		if out.InTurn || out.InterruptBy != nil || !strings.Contains(out.Evidence, "turn 3 stopped at your request (agent process 4242 is gone)") {
			t.Errorf("in turn %v, interrupt by %v, evidence %q", out.InTurn, out.InterruptBy, out.Evidence)
		}
	}
	runCases(t, []rcase{
		{name: "working", s: stopped(working()), now: at(time.Minute), probe: dead, state: sessions.WaitingOnUser,
			obs: []string{TimelineStateChanged}, check: review},
		{name: "suspect, mid stall chain", s: func() sessions.Session {
			s := stopped(suspect())
			s.Supervision = sessions.Supervision{Recovery: RecoveryStall, RecoveryAttempts: stallTerminated, InterruptSentAt: at(150 * time.Minute)}
			return s
		}(), now: at(151 * time.Minute), probe: dead, state: sessions.WaitingOnUser, obs: []string{TimelineStateChanged},
			check: all(review, func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if out.Supervision.Recovery != "" {
					t.Errorf("the stall chain outlived the turn: %+v", out.Supervision)
				}
			})},
		// A supervisor's own interrupt is still a nudgeable interruption.
		{name: "stopped by the supervisor", s: apply(working(), t0, sessions.Event{Kind: sessions.EvInterruptRequested, By: sessions.BySupervisor}),
			now: at(time.Minute), probe: dead, state: sessions.Interrupted, obs: []string{TimelineMarkedInterrupted}, acts: []ActionKind{ActNudge}},
	})
	// And once in review it stays there, however long the app runs.
	out, _, _ := reconcile(t, stopped(working()), at(time.Minute), specPolicy(), dead)
	for _, d := range []time.Duration{time.Hour, 24 * time.Hour} {
		if again, _, acts := reconcile(t, out, at(d), specPolicy(), dead); again.State != sessions.WaitingOnUser || len(acts) != 0 {
			t.Errorf("at +%v: %v %v", d, again.State, actKinds(acts))
		}
	}
}

// Item 3: a launch failure is escalated at once and never nudged.
func TestReconcileLaunchFailureEscalatesAtOnce(t *testing.T) {
	launch := errored(sessions.Launch)
	launch.Failure.Message = "process exited with code 1: fatal: cannot start (bad install)"
	runCases(t, []rcase{
		{name: "at the first tick", s: launch, now: t0, probe: dead, state: sessions.Errored, acts: []ActionKind{ActEscalate},
			check: wantDetail(0, "failed to start")},
	})
	out, _, _ := reconcile(t, launch, t0, specPolicy(), dead)
	if again, _, acts := reconcile(t, out, at(time.Hour), specPolicy(), dead); len(acts) != 0 || again.State != sessions.Errored {
		t.Errorf("later: %v %v", again.State, actKinds(acts))
	}
}

// Item 9: one incident, one budget. A turn that fails alternately with a
// rate limit and a context overflow — each recovery "works", and the next
// turn fails the other way — escalates once the incident's attempts are
// spent, though neither kind's own budget ever is.
func TestReconcileAlternatingFailuresShareOneBudget(t *testing.T) {
	p := specPolicy()
	rateLimit := sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.RateLimit, Message: "429"}}
	overflow := sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.ContextOverflow, Message: "prompt is too long"}}
	byUs := sessions.Event{Kind: sessions.EvTurnStarted, By: sessions.BySupervisor}
	now := t0
	s := apply(working(), now, rateLimit)
	escalatedAt := 0
	for step := 1; step <= 20 && escalatedAt == 0; step++ {
		now = now.Add(time.Hour) // every countdown is over
		out, _, acts := reconcile(t, s, now, p, alive)
		if len(acts) == 0 {
			out, _, acts = reconcile(t, out, now.Add(time.Hour), p, alive)
			now = now.Add(time.Hour)
		}
		if len(acts) != 1 {
			t.Fatalf("step %d: %v %v %+v", step, out.State, actKinds(acts), out.Supervision)
		}
		switch acts[0].Kind {
		case ActEscalate:
			escalatedAt = step
		case ActContinue:
			// The continue takes; the turn then overflows.
			s = apply(out, now, byUs, sessions.Event{Kind: sessions.EvActivity}, overflow)
		case ActCompact:
			// The compaction runs and finishes; the retried turn is rate limited.
			s = apply(out, now, byUs, sessions.Event{Kind: sessions.EvCompactionStarted},
				sessions.Event{Kind: sessions.EvCompactionFinished, OK: true}, sessions.Event{Kind: sessions.EvTurnCompleted})
			out, _, acts = reconcile(t, s, now.Add(time.Second), p, alive)
			if len(acts) != 1 || acts[0].Kind != ActRetryTurn {
				t.Fatalf("step %d: after the compaction %v", step, actKinds(acts))
			}
			s = apply(out, now.Add(2*time.Second), byUs, sessions.Event{Kind: sessions.EvActivity}, rateLimit)
		default:
			t.Fatalf("step %d: unexpected %v", step, acts[0].Kind)
		}
		if escalatedAt != 0 {
			if !out.NeedsAttention || !strings.Contains(acts[0].Detail, "automatic attempts for this incident spent") {
				t.Errorf("escalation: needs attention %v, %q", out.NeedsAttention, acts[0].Detail)
			}
		}
	}
	if want := p.incidentMaxAttempts() + 1; escalatedAt != want {
		t.Fatalf("escalated at step %d, want %d (after %d attempts)", escalatedAt, want, p.incidentMaxAttempts())
	}

	// A clean completion ends the incident and refills the shared budget.
	spent := working()
	spent.Supervision.IncidentAttempts = p.incidentMaxAttempts()
	done := apply(spent, t0, sessions.Event{Kind: sessions.EvTurnCompleted})
	out, _, _ := reconcile(t, done, at(time.Second), p, alive)
	if out.Supervision != (sessions.Supervision{}) {
		t.Errorf("after a clean completion: %+v", out.Supervision)
	}
}

// Item 14: a session escalated while Suspect has a way out.
func TestReconcileEscalatedSuspectRecovers(t *testing.T) {
	p := specPolicy()
	s := suspect()
	s.NeedsAttention = true
	s.Supervision = sessions.Supervision{Recovery: RecoveryStall, RecoveryAttempts: stallEscalated, InterruptSentAt: at(150 * time.Minute), EscalatedGeneration: 3}

	// The turn speaks again: Working, the escalation and the chain are over.
	back := apply(s, at(160*time.Minute), sessions.Event{Kind: sessions.EvActivity})
	out, _, _ := reconcile(t, back, at(160*time.Minute+time.Second), p, alive)
	if out.State != sessions.Working || out.NeedsAttention || out.Supervision.Recovery != "" {
		t.Errorf("after activity: %v needs attention %v %+v", out.State, out.NeedsAttention, out.Supervision)
	}
	// A later stall of the same turn is supervised again from the start.
	again, _, _ := reconcile(t, out, at(160*time.Minute+p.StallSuspect), p, alive)
	if again.State != sessions.Suspect {
		t.Errorf("the healed turn is not supervised: %v", again.State)
	}

	// Or the user acknowledges it: the stalled turn is given up.
	acked := apply(s, at(160*time.Minute), sessions.Event{Kind: sessions.EvAcknowledged})
	out, _, acts := reconcile(t, acked, at(160*time.Minute+time.Second), p, alive)
	if out.State != sessions.Idle || out.InTurn || out.NeedsAttention || len(acts) != 0 || out.Supervision.Recovery != "" {
		t.Errorf("after ack: %v in turn %v needs attention %v %v %+v", out.State, out.InTurn, out.NeedsAttention, actKinds(acts), out.Supervision)
	}
}

// TestAckStopsTheRecovery: once the user acknowledged a session held for a
// recovery (Apply: Idle, no failure), Reconcile ends the incident before it
// could act: no continue is sent, and the hold is gone (issue 20, item 12).
func TestAckStopsTheRecovery(t *testing.T) {
	s := working()
	s.InTurn, s.State, s.Evidence = false, sessions.Recovering, "rate limited; holding"
	s.Failure = sessions.Failure{Kind: sessions.RateLimit, RetryAt: at(time.Minute)}
	s.Supervision = sessions.Supervision{Recovery: RecoveryRateLimit, RecoveryAttempts: 1, NextAttemptAt: at(time.Minute), IncidentAttempts: 1}
	acked := sessions.Apply(s, sessions.Event{Kind: sessions.EvAcknowledged}, at(30*time.Second))
	out, _, acts, _ := Reconcile(acked, at(2*time.Minute), specPolicy(), Probe{Known: true, Alive: true})
	if len(acts) != 0 {
		t.Errorf("acknowledged, yet the recovery acted: %+v", acts)
	}
	if out.State != sessions.Idle || out.Supervision.Recovery != "" || !out.Supervision.NextAttemptAt.IsZero() || out.Supervision.IncidentAttempts != 0 {
		t.Errorf("after ack and a tick: %s %+v", out.State, out.Supervision)
	}
}

// The one rule for the continues (rate limit, auth, network, overload):
// they send the continuation text, so they need the nudge switch as well
// as automatic recovery, for managed and terminal sessions alike; one
// switched off during a hold's countdown abandons it.
func TestReconcileContinuesAreNudges(t *testing.T) {
	p := specPolicy()
	p.NudgeEnabled = false
	hold := errored(sessions.RateLimit)
	hold.State = sessions.Recovering
	hold.Supervision = sessions.Supervision{Recovery: RecoveryRateLimit, NextAttemptAt: t0.Add(time.Hour), IncidentStarted: t0}
	for _, tc := range []struct {
		name string
		s    sessions.Session
		says string
	}{
		{"rate limit", errored(sessions.RateLimit), "continuing after"},
		{"network", errored(sessions.Network), "continuing after"},
		{"overloaded", errored(sessions.Overloaded), "continuing after"},
		{"auth", errored(sessions.Auth), "continuing after"},
		{"a hold counting down", hold, "the continuation nudge was switched off"},
	} {
		for _, src := range []sessions.Source{sessions.Managed, sessions.Observed} {
			t.Run(tc.name+"/"+src.String(), func(t *testing.T) {
				s := tc.s
				s.Source = src
				out, _, acts := reconcile(t, s, t0, p, alive)
				if out.State != sessions.Errored || !slices.Equal(actKinds(acts), []ActionKind{ActEscalate}) || !strings.Contains(out.Evidence, tc.says) {
					t.Errorf("got %v %v (%s), want an escalated Errored saying %q", out.State, actKinds(acts), out.Evidence, tc.says)
				}
			})
		}
	}
}

// A managed turn whose process printed nothing by stall_suspect_minutes
// (a trust dialog, a stuck MCP server) is a launch failure: Errored and
// escalated at once with the agent's last stderr line, never nudged, and
// never left to the hard limit. A process that spoke, a terminal session,
// or a silence under the threshold keeps the ordinary rules.
func TestReconcileLaunchThatHangsSilently(t *testing.T) {
	p := specPolicy()
	silentLaunch := func(edit func(*sessions.Session)) sessions.Session {
		s := working()
		s.ProcessSpoke = false
		if edit != nil {
			edit(&s)
		}
		return s
	}
	alive := Probe{Known: true, Alive: true, Stderr: "MCP server \"db\" is still starting (token=abc123)"}
	tests := []struct {
		name    string
		s       sessions.Session
		after   time.Duration
		state   sessions.State
		actions []ActionKind
	}{
		{"silent launch at the suspect threshold", silentLaunch(nil), p.StallSuspect, sessions.Errored, []ActionKind{ActEscalate}},
		{"silent launch long past the hard limit", silentLaunch(nil), 3 * p.StallHard, sessions.Errored, []ActionKind{ActEscalate}},
		{"under the threshold", silentLaunch(nil), p.StallSuspect - time.Second, sessions.Working, nil},
		{"a process that spoke is only suspect", working(), p.StallSuspect, sessions.Suspect, nil},
		{"a terminal session keeps the terminal rules", silentLaunch(func(s *sessions.Session) { s.Source = sessions.Observed }), p.StallSuspect, sessions.Suspect, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, _, acts := reconcile(t, tt.s, at(tt.after), p, alive)
			if n.State != tt.state || !slices.Equal(actKinds(acts), tt.actions) {
				t.Fatalf("got %v %v, want %v %v (evidence %q)", n.State, actKinds(acts), tt.state, tt.actions, n.Evidence)
			}
			if tt.state != sessions.Errored {
				return
			}
			if n.InTurn || n.Failure.Kind != sessions.Launch || !n.NeedsAttention ||
				!strings.Contains(n.Failure.Message, "MCP server") || strings.Contains(n.Failure.Message, "abc123") {
				t.Errorf("after a silent launch: in turn %v, failure %+v, needs attention %v", n.InTurn, n.Failure, n.NeedsAttention)
			}
			// The next ticks leave it for the user: no nudge, no retry.
			for i := 1; i <= 3; i++ {
				var acts []Action
				n, _, acts = reconcile(t, n, at(tt.after+time.Duration(i)*p.NudgeCooldown), p, Probe{Known: true, Alive: true})
				if len(acts) != 0 {
					t.Fatalf("tick %d after the escalation: actions %v", i, actKinds(acts))
				}
			}
		})
	}
}
