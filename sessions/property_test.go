package sessions

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// invariant names, reported once each with the first sequence that broke them.
const (
	invValid          = "state is one of the eight"
	invEvidence       = "evidence is never empty once an event changed the state"
	invInTurn         = "no turn in flight in Idle, Errored or Interrupted"
	invOpenTools      = "no open tool calls without a turn in flight"
	invGeneration     = "turn generation never decreases"
	invClockBack      = "LastEventAt never moves backwards"
	invClockMetrics   = "LastEventAt does not move on non-genuine events"
	invClockGenuine   = "LastEventAt is refreshed by genuine events"
	invUpdated        = "UpdatedAt is the time of the last event"
	invInputUntouched = "Apply does not mutate its input"
	invPermissions    = "open permission requests only while waiting on the user, mirrored by Permission"
)

// violation is the first break of one invariant, with the events that led to it.
type violation struct {
	msg   string
	steps int
}

// checker applies a sequence step by step and records the first violation of
// each invariant.
type checker struct {
	changed bool // some event has changed the state
	trail   []Event
	broken  map[string]violation
}

func newChecker() *checker { return &checker{broken: map[string]violation{}} }

func (c *checker) fail(inv, format string, args ...any) {
	if _, ok := c.broken[inv]; ok {
		return
	}
	c.broken[inv] = violation{
		msg:   fmt.Sprintf(format, args...) + "\n    events: " + c.trailString(),
		steps: len(c.trail),
	}
}

// step applies e at now to s and checks every invariant across the step.
func (c *checker) step(s Session, e Event, now time.Time) (next Session) {
	before := s.Clone()
	defer func() {
		if r := recover(); r != nil {
			panic(fmt.Sprintf("Apply panicked on %+v after %s: %v", e, c.trailString(), r))
		}
	}()
	next = Apply(s, e, now)
	c.trail = append(c.trail, e)

	if !reflect.DeepEqual(s, before) {
		c.fail(invInputUntouched, "%v mutated the input", e.Kind)
	}
	if !next.State.Valid() {
		c.fail(invValid, "state %d", int(next.State))
	}
	if next.State != s.State {
		c.changed = true
	}
	if c.changed && next.Evidence == "" {
		c.fail(invEvidence, "%v: state %v with no evidence", e.Kind, next.State)
	}
	switch next.State {
	case Idle, Errored, Interrupted:
		if next.InTurn {
			c.fail(invInTurn, "%v: %v with InTurn", e.Kind, next.State)
		}
	}
	if !next.InTurn && len(next.OpenTools) > 0 {
		c.fail(invOpenTools, "%v: %v, no turn, open tools %v", e.Kind, next.State, next.OpenTools)
	}
	if len(next.Permissions) > 0 && (next.State != WaitingOnUser || next.Permission == nil || *next.Permission != next.Permissions[0]) ||
		len(next.Permissions) == 0 && next.Permission != nil {
		c.fail(invPermissions, "%v: %v in turn %v, permissions %v, permission %v", e.Kind, next.State, next.InTurn, next.Permissions, next.Permission)
	}
	if next.TurnGeneration < s.TurnGeneration {
		c.fail(invGeneration, "%v: %d -> %d", e.Kind, s.TurnGeneration, next.TurnGeneration)
	}
	if next.LastEventAt.Before(s.LastEventAt) {
		c.fail(invClockBack, "%v: %v -> %v", e.Kind, s.LastEventAt, next.LastEventAt)
	}
	if e.Kind.Genuine() {
		if !next.LastEventAt.Equal(now) {
			c.fail(invClockGenuine, "%v: LastEventAt %v, want %v", e.Kind, next.LastEventAt, now)
		}
	} else if !next.LastEventAt.Equal(s.LastEventAt) {
		c.fail(invClockMetrics, "%v: LastEventAt %v -> %v", e.Kind, s.LastEventAt, next.LastEventAt)
	}
	if !next.UpdatedAt.Equal(now) {
		c.fail(invUpdated, "%v: UpdatedAt %v, want %v", e.Kind, next.UpdatedAt, now)
	}
	return next
}

func (c *checker) trailString() string {
	parts := make([]string, len(c.trail))
	for i, e := range c.trail {
		parts[i] = describeForTrail(e)
	}
	return strings.Join(parts, " → ")
}

// describeForTrail names an event with the fields that matter for its kind.
func describeForTrail(e Event) string {
	var arg string
	switch e.Kind {
	case EvToolStarted, EvToolFinished, EvTaskStarted, EvTaskFinished:
		arg = fmt.Sprintf("%q:%q", e.CallID, e.Name)
	case EvCompactionFinished:
		arg = fmt.Sprintf("ok=%v", e.OK)
	case EvWaitingOnUser:
		arg = fmt.Sprintf("%q", e.Reason.String())
	case EvRetryScheduled, EvTurnFailed:
		arg = fmt.Sprintf("%v,status=%d,delay=%v", e.Failure.Kind, e.Status, e.Delay)
	case EvInterruptRequested, EvTurnStarted:
		arg = e.By.String()
	case EvProcessExited:
		arg = fmt.Sprintf("code=%d,signal=%q", e.ExitCode, e.Signal)
	default:
		return e.Kind.String()
	}
	return e.Kind.String() + "(" + arg + ")"
}

func (c *checker) report(t *testing.T) {
	t.Helper()
	for inv, v := range c.broken {
		t.Errorf("invariant %q broken (shortest case, %d events): %s", inv, v.steps, v.msg)
	}
}

// merge keeps the shortest report of each invariant across sequences.
func (c *checker) merge(o *checker) {
	for inv, v := range o.broken {
		if old, ok := c.broken[inv]; !ok || v.steps < old.steps {
			c.broken[inv] = v
		}
	}
}

var (
	callIDs  = []string{"t1", "t2", "t3", "", "bg1"}
	names    = []string{"Bash", "Grep", "", "npm test"}
	details  = []string{"", "assistant text", "too few messages", "user hit escape"}
	messages = []string{"", "usage limit reached", "Overloaded", "key sk-ant-api03-ABCDEFGHIJKL\nleaked", "prompt is too long"}
	statuses = []int{0, 429, 529, 401, 500, 413}
	signals  = []string{"", "", "SIGKILL", "SIGTERM"}
)

func randomEvent(r *rand.Rand) Event {
	kinds := AllEventKinds()
	var e Event
	if r.IntN(40) == 0 {
		e.Kind = EvUnknown
	} else {
		e.Kind = kinds[r.IntN(len(kinds))]
	}
	e.CallID = callIDs[r.IntN(len(callIDs))]
	e.Name = names[r.IntN(len(names))]
	if r.IntN(8) == 0 {
		e.AgentSessionID = fmt.Sprintf("agent-%d", r.IntN(3))
	}
	e.PID = r.IntN(5000)
	e.OK = r.IntN(2) == 0
	e.Reason = WaitReason(r.IntN(5))
	if r.IntN(2) == 0 {
		e.Permission = &Permission{RequestID: fmt.Sprintf("req-%d", r.IntN(9)), Tool: names[r.IntN(len(names))]}
	}
	e.Attempt, e.MaxAttempts = r.IntN(10), r.IntN(11)
	if r.IntN(2) == 0 {
		e.Delay = time.Duration(r.IntN(600)-30) * time.Second
	}
	e.Status = statuses[r.IntN(len(statuses))]
	e.Failure = Failure{Kind: FailureKind(r.IntN(8)), Message: messages[r.IntN(len(messages))]}
	if r.IntN(4) == 0 {
		e.Failure.RetryAt = t0.Add(time.Duration(r.IntN(7200)) * time.Second)
	}
	e.ExitCode = r.IntN(3) - 1
	e.Signal = signals[r.IntN(len(signals))]
	e.By = Actor(r.IntN(2))
	e.Detail = details[r.IntN(len(details))]
	return e
}

// startSession is the zero session or one of the realistic bases.
func startSession(i int) Session {
	if i == len(baseNames) {
		return Session{ID: "fresh", CreatedAt: t0.Add(-time.Hour)}
	}
	return baseSession(baseNames[i])
}

func TestApplyRandomSequencesInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(20260301, 42))
	all := newChecker()
	const sequences = 3000
	for n := range sequences {
		c := newChecker()
		s := startSession(n % (len(baseNames) + 1))
		now := t0
		for range 1 + r.IntN(60) {
			// Time never runs backwards; several events may share an instant.
			if r.IntN(4) != 0 {
				now = now.Add(time.Duration(r.IntN(120_000)) * time.Millisecond)
			}
			s = c.step(s, randomEvent(r), now)
		}
		all.merge(c)
	}
	all.report(t)
}

// Random sequences of only non-genuine events never move the stall clock,
// whatever they do to the state.
func TestApplyNonGenuineSequencesKeepTheStallClock(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var nonGenuine []EventKind
	for _, k := range append(AllEventKinds(), EvUnknown) {
		if !k.Genuine() {
			nonGenuine = append(nonGenuine, k)
		}
	}
	for n := range 500 {
		s := startSession(n % (len(baseNames) + 1))
		last := s.LastEventAt
		now := t0
		for range 1 + r.IntN(30) {
			now = now.Add(time.Duration(r.IntN(600)) * time.Second)
			e := randomEvent(r)
			e.Kind = nonGenuine[r.IntN(len(nonGenuine))]
			s = Apply(s, e, now)
			if !s.LastEventAt.Equal(last) {
				t.Fatalf("non-genuine %v moved LastEventAt from %v to %v", e.Kind, last, s.LastEventAt)
			}
		}
	}
}

// decodeEvents turns fuzz bytes into a start session and an event sequence:
// byte 0 picks the start session, then 4 bytes per event (kind, fields,
// value, time step).
func decodeEvents(data []byte) (Session, []Event, []time.Duration) {
	if len(data) == 0 {
		return startSession(len(baseNames)), nil, nil
	}
	s := startSession(int(data[0]) % (len(baseNames) + 1))
	data = data[1:]
	var events []Event
	var steps []time.Duration
	for len(data) >= 4 && len(events) < 200 {
		k, f, v, dt := data[0], data[1], data[2], data[3]
		data = data[4:]
		e := Event{Kind: EventKind(int(k) % (int(EvSessionEnded) + 1))}
		e.CallID = callIDs[int(v)%len(callIDs)]
		e.Name = names[int(v>>3)%len(names)]
		e.OK = f&1 != 0
		e.Reason = WaitReason(int(f>>1) % 5)
		if f&0x10 != 0 {
			e.Permission = &Permission{RequestID: "r", Tool: e.Name}
		}
		e.By = Actor(f >> 5 & 1)
		if f&0x40 != 0 {
			e.Delay = time.Duration(int(v)-16) * time.Second
		}
		e.Status = statuses[int(v)%len(statuses)]
		e.Failure = Failure{Kind: FailureKind(int(v>>4) % 7), Message: messages[int(f)%len(messages)]}
		e.ExitCode = int(v) - 128
		e.Signal = signals[int(f>>6)%len(signals)]
		e.Detail = details[int(v>>2)%len(details)]
		e.Attempt, e.MaxAttempts = int(v%5), int(v%7)
		e.PID = int(v) + 1
		if f&0x80 != 0 {
			e.AgentSessionID = "agent-f"
		}
		events = append(events, e)
		steps = append(steps, time.Duration(dt)*time.Second)
	}
	return s, events, steps
}

// encode is the inverse used to build a readable seed corpus: each step is
// (kind, field bits, value, seconds since the previous event).
func encode(start byte, steps ...[4]byte) []byte {
	out := []byte{start}
	for _, s := range steps {
		out = append(out, s[:]...)
	}
	return out
}

func FuzzApply(f *testing.F) {
	k := func(kind EventKind) byte { return byte(kind) }
	idle := byte(len(baseNames)) // the zero session
	// A plain turn: start, think, tool, result, ack.
	f.Add(encode(idle,
		[4]byte{k(EvProcessStarted), 0, 10, 0}, [4]byte{k(EvTurnStarted), 0, 0, 1},
		[4]byte{k(EvActivity), 0, 4, 2}, [4]byte{k(EvToolStarted), 0, 0, 1},
		[4]byte{k(EvMetrics), 0, 0, 30}, [4]byte{k(EvToolFinished), 0, 0, 5},
		[4]byte{k(EvTurnCompleted), 0, 0, 1}, [4]byte{k(EvAcknowledged), 0, 0, 60}))
	// The agent's own retries, then success.
	f.Add(encode(0,
		[4]byte{k(EvRetryScheduled), 0, 1, 0}, [4]byte{k(EvMetrics), 0, 0, 10},
		[4]byte{k(EvRetryScheduled), 0x40, 40, 20}, [4]byte{k(EvActivity), 0, 0, 30},
		[4]byte{k(EvTurnCompleted), 0, 0, 1}))
	// Compaction twice, finishing in and out of a turn.
	f.Add(encode(1,
		[4]byte{k(EvCompactionStarted), 0, 0, 0}, [4]byte{k(EvCompactionStarted), 0, 0, 30},
		[4]byte{k(EvCompactionFinished), 1, 0, 30}, [4]byte{k(EvTurnCompleted), 0, 0, 1},
		[4]byte{k(EvCompactionStarted), 0, 0, 5}, [4]byte{k(EvCompactionFinished), 0, 0, 9}))
	// Interrupts by the user and by the supervisor.
	f.Add(encode(0,
		[4]byte{k(EvInterruptRequested), 0, 0, 0}, [4]byte{k(EvTurnAborted), 0, 0, 1},
		[4]byte{k(EvTurnStarted), 0x20, 0, 5}, [4]byte{k(EvInterruptRequested), 0x20, 0, 250},
		[4]byte{k(EvTurnAborted), 0, 0, 1}))
	// Permission asked, answered; then the process dies mid-turn.
	f.Add(encode(2,
		[4]byte{k(EvWaitingOnUser), 0x16, 0, 0}, [4]byte{k(EvUserAnswered), 0, 0, 20},
		[4]byte{k(EvProcessExited), 0x80, 129, 3}, [4]byte{k(EvProcessStarted), 0, 7, 2}))
	// Terminal failure followed by late signals.
	f.Add(encode(0,
		[4]byte{k(EvTurnFailed), 0, 16, 0}, [4]byte{k(EvIdle), 0, 0, 1},
		[4]byte{k(EvTurnCompleted), 0, 0, 1}, [4]byte{k(EvProcessExited), 0, 128, 1},
		[4]byte{k(EvSessionEnded), 0, 0, 1}))
	f.Add([]byte{})
	f.Add([]byte{255, 255, 255, 255, 255, 0, 0, 0, 0})

	f.Fuzz(func(t *testing.T, data []byte) {
		s, events, steps := decodeEvents(data)
		c := newChecker()
		now := t0
		for i, e := range events {
			now = now.Add(steps[i])
			s = c.step(s, e, now)
		}
		c.report(t)
	})
}
