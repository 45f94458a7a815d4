// Package eta estimates how long a session's current turn has left, as a
// band and never as a single number, from three signals a session already
// carries:
//
//   - todos: the agent's own task list (Claude's todo list, Codex's plan).
//     At the pace the list's items were done since it began, the items left
//     take that long again per item.
//   - past turns: the durations of the session's own finished turns. Of
//     those that lasted longer than this turn has so far, what they had
//     left at this point.
//   - pace: the rate of progress in the transcript, tool calls per minute
//     in this turn, against the number of tool calls the session's finished
//     turns needed (those that needed more than this turn made so far).
//
// Each signal gives a log-normal guess (a centre and a spread in log time:
// a turn's length errs by a factor, not by minutes). The guesses combine by
// their precisions, as independent measurements do, so adding a signal never
// widens the band; fewer items, fewer past turns or fewer tool calls widen
// each signal's own spread. With no usable signal the answer is "not enough
// signal". Pure: it takes the inputs and now, and does no I/O.
package eta

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Signal is one kind of evidence the estimate uses.
type Signal int

const (
	Todos Signal = iota
	PastTurns
	Pace
)

var signalNames = []string{"todos", "past turns", "pace"}

func (s Signal) String() string {
	if s < 0 || int(s) >= len(signalNames) {
		return fmt.Sprintf("signal(%d)", int(s))
	}
	return signalNames[s]
}

// MarshalText writes the signal's name, for the --json output.
func (s Signal) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (s *Signal) UnmarshalText(b []byte) error {
	i := slices.Index(signalNames, string(b))
	if i < 0 {
		return fmt.Errorf("eta: unknown signal %q", b)
	}
	*s = Signal(i)
	return nil
}

// Part is one signal's band on its own.
type Part struct {
	Signal Signal        `json:"signal"`
	Low    time.Duration `json:"low_ns"`
	High   time.Duration `json:"high_ns"`
}

// Band is the estimate: Low < High, the signals it combined (each also
// alone in Parts), and the counts of the task list it read. No signal
// (Signals empty) means not enough signal, and Reason says why.
type Band struct {
	Low     time.Duration         `json:"low_ns,omitempty"`
	High    time.Duration         `json:"high_ns,omitempty"`
	Signals []Signal              `json:"signals"`
	Parts   []Part                `json:"parts,omitempty"`
	Todos   sessions.TodoProgress `json:"todos,omitzero"`
	Reason  string                `json:"reason,omitempty"`
}

// OK reports whether there was signal enough for a band.
func (b Band) OK() bool { return len(b.Signals) > 0 }

// Inputs is what the estimate reads, taken from a session by FromSession.
type Inputs struct {
	// InTurn: a turn is in flight; without one there is nothing left.
	InTurn bool
	// Elapsed is how long the turn in flight has run.
	Elapsed time.Duration
	// Todos and TodoElapsed: the task list and how long since it began.
	Todos       sessions.TodoProgress
	TodoElapsed time.Duration
	// Tools is the tool calls this turn made so far.
	Tools int
	// Past are the session's finished turns.
	Past []sessions.TurnRecord
}

// FromSession reads s's inputs at now.
func FromSession(s sessions.Session, now time.Time) Inputs {
	in := Inputs{InTurn: s.InTurn, Todos: s.Todos, Tools: s.TurnTools, Past: s.PastTurns}
	if s.InTurn && !s.TurnStarted.IsZero() {
		in.Elapsed = max(now.Sub(s.TurnStarted), 0)
	}
	if !s.TodosSince.IsZero() {
		in.TodoElapsed = max(now.Sub(s.TodosSince), 0)
	}
	return in
}

// The estimate's constants. The spreads are in natural-log units: a spread
// of 0.5 is a band from 0.6 to 1.65 times its centre.
const (
	// minSpread keeps every band a band: high is at least e^0.3 ≈ 1.35
	// times low, however much signal there is.
	minSpread = 0.15
	// minTodoElapsed and minPaceElapsed: a pace measured over less is noise.
	minTodoElapsed = 10 * time.Second
	minPaceElapsed = 30 * time.Second
	// minPaceTools is the tool calls a pace needs.
	minPaceTools = 3
	// maxCentre bounds a centre, so a pathological input cannot overflow
	// a duration.
	maxCentre = 7 * 24 * time.Hour
)

// guess is one signal's estimate in log seconds: its centre and spread.
type guess struct {
	signal Signal
	mean   float64
	spread float64
}

// Estimate is the band for in. It never returns a single number: Low <
// High whenever OK.
func Estimate(in Inputs) Band {
	b := Band{Todos: in.Todos}
	if !in.InTurn {
		b.Reason = "no turn in flight"
		return b
	}
	var gs []guess
	for _, g := range []func(Inputs) (guess, bool){todoGuess, pastGuess, paceGuess} {
		if x, ok := g(in); ok {
			gs = append(gs, x)
		}
	}
	if len(gs) == 0 {
		b.Reason = "not enough signal"
		return b
	}
	var wsum, msum float64
	for _, g := range gs {
		b.Signals = append(b.Signals, g.signal)
		lo, hi := bounds(g.mean, g.spread)
		b.Parts = append(b.Parts, Part{Signal: g.signal, Low: lo, High: hi})
		w := 1 / (g.spread * g.spread)
		wsum += w
		msum += w * g.mean
	}
	b.Low, b.High = bounds(msum/wsum, max(1/math.Sqrt(wsum), minSpread))
	return b
}

// bounds turns a centre and spread in log seconds into durations, Low <
// High (the spread is at least minSpread, so they differ by a third).
func bounds(mean, spread float64) (time.Duration, time.Duration) {
	mean = min(mean, math.Log(maxCentre.Seconds()))
	lo := time.Duration(math.Exp(mean-spread) * float64(time.Second))
	hi := time.Duration(math.Exp(mean+spread) * float64(time.Second))
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

// centre is a positive duration's log seconds, clamped to a sane range.
func centre(d time.Duration) float64 {
	return math.Log(min(max(d.Seconds(), 1), maxCentre.Seconds()))
}

// todoGuess: the items left at the pace the done ones took. It needs one
// item done (no pace before that) and one left (a finished list says
// nothing of what the turn still does). An item in progress counts half.
func todoGuess(in Inputs) (guess, bool) {
	t := in.Todos.Clamped()
	if t.Total < 2 || t.Completed < 1 || t.Done() || in.TodoElapsed < minTodoElapsed {
		return guess{}, false
	}
	done := float64(t.Completed) + 0.5*float64(t.InProgress)
	left := float64(t.Total) - done
	perItem := in.TodoElapsed.Seconds() / done
	// One item done is one observation of the pace: wide. Each more narrows.
	spread := 0.25 + 0.75/math.Sqrt(float64(t.Completed))
	return guess{Todos, centre(time.Duration(perItem * left * float64(time.Second))), spread}, true
}

// pastGuess: what the session's finished turns that outlasted this one so
// far still had to go at this point. Two are needed for a spread; the
// fewer of them there are, and the more of the past turns this one already
// outlasted (it is unusual), the wider.
func pastGuess(in Inputs) (guess, bool) {
	var left []float64
	for _, p := range in.Past {
		if p.Duration > in.Elapsed {
			left = append(left, centre(p.Duration-in.Elapsed))
		}
	}
	if len(left) < 2 {
		return guess{}, false
	}
	mean, sd := meanSD(left)
	k := float64(len(left))
	outlasted := 1 - k/float64(len(in.Past))
	spread := max(sd, 0.2) + 0.8/math.Sqrt(k) + 0.5*outlasted
	return guess{PastTurns, mean, spread}, true
}

// paceGuess: the tool calls the finished turns needed beyond this turn's
// so far, at this turn's rate of tool calls. It needs a few calls over
// half a minute for a rate, and two finished turns that needed more calls.
func paceGuess(in Inputs) (guess, bool) {
	if in.Tools < minPaceTools || in.Elapsed < minPaceElapsed {
		return guess{}, false
	}
	perCall := in.Elapsed.Seconds() / float64(in.Tools)
	var left []float64
	for _, p := range in.Past {
		if p.Tools > in.Tools {
			left = append(left, centre(time.Duration(float64(p.Tools-in.Tools)*perCall*float64(time.Second))))
		}
	}
	if len(left) < 2 {
		return guess{}, false
	}
	mean, sd := meanSD(left)
	k := float64(len(left))
	outlasted := 1 - k/float64(len(in.Past))
	spread := max(sd, 0.2) + 0.6/math.Sqrt(k) + 0.6/math.Sqrt(float64(in.Tools)) + 0.5*outlasted
	return guess{Pace, mean, spread}, true
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}

// Range is the band in words: "20–45 min", "40–90 s", "2–3 h"; the ends
// are rounded outwards so they never meet.
func (b Band) Range() string {
	if !b.OK() {
		return ""
	}
	unit, name := time.Minute, "min"
	switch {
	case b.High < 2*time.Minute:
		unit, name = time.Second, "s"
	case b.Low >= 3*time.Hour:
		unit, name = time.Hour, "h"
	}
	lo := int64(b.Low / unit)
	hi := int64((b.High + unit - 1) / unit)
	if hi <= lo {
		hi = lo + 1
	}
	return fmt.Sprintf("%d–%d %s", lo, hi, name)
}

// Sources names the signals the band used: "todos 3/7, past turns".
func (b Band) Sources() string {
	names := make([]string, 0, len(b.Signals))
	for _, s := range b.Signals {
		if s == Todos {
			names = append(names, fmt.Sprintf("todos %d/%d", b.Todos.Completed, b.Todos.Total))
			continue
		}
		names = append(names, s.String())
	}
	return strings.Join(names, ", ")
}

// String is the band with its sources, "20–45 min (todos 3/7, past
// turns)", or why there is none.
func (b Band) String() string {
	if !b.OK() {
		return b.Reason
	}
	return fmt.Sprintf("%s (%s)", b.Range(), b.Sources())
}

// PartsText is each signal's band alone: "todos 15–60 min, past turns
// 25–50 min"; empty with fewer than two (the band is then that one).
func (b Band) PartsText() string {
	if len(b.Parts) < 2 {
		return ""
	}
	out := make([]string, 0, len(b.Parts))
	for _, p := range b.Parts {
		out = append(out, p.Signal.String()+" "+Band{Low: p.Low, High: p.High, Signals: []Signal{p.Signal}}.Range())
	}
	return strings.Join(out, ", ")
}
