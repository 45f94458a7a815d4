package eta

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"testing/quick"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func turns(ds ...time.Duration) []sessions.TurnRecord {
	out := make([]sessions.TurnRecord, len(ds))
	for i, d := range ds {
		out[i] = sessions.TurnRecord{Duration: d, Tools: int(d / (20 * time.Second))}
	}
	return out
}

func TestEstimateTable(t *testing.T) {
	min := time.Minute
	cases := []struct {
		name    string
		in      Inputs
		signals []Signal
		// lo and hi bound the band from outside: the band lies within.
		within [2]time.Duration
		reason string
	}{
		{name: "no turn", in: Inputs{Todos: sessions.TodoProgress{Total: 4, Completed: 2}, TodoElapsed: 10 * min}, reason: "no turn in flight"},
		{name: "nothing known", in: Inputs{InTurn: true, Elapsed: min}, reason: "not enough signal"},
		{name: "todos before the first item is done", in: Inputs{InTurn: true, Elapsed: 5 * min, Todos: sessions.TodoProgress{Total: 5, InProgress: 1}, TodoElapsed: 5 * min}, reason: "not enough signal"},
		{name: "a finished list says nothing", in: Inputs{InTurn: true, Elapsed: 5 * min, Todos: sessions.TodoProgress{Total: 3, Completed: 3}, TodoElapsed: 5 * min}, reason: "not enough signal"},
		{name: "one past turn is no spread", in: Inputs{InTurn: true, Elapsed: min, Past: turns(10 * min)}, reason: "not enough signal"},
		{name: "this turn outlasted every past one", in: Inputs{InTurn: true, Elapsed: 30 * min, Past: turns(5*min, 8*min, 12*min)}, reason: "not enough signal"},
		{
			// 3 of 7 done in 12 min: 4 min an item, 4 left ≈ 16 min.
			name:    "todos alone",
			in:      Inputs{InTurn: true, Elapsed: 12 * min, Todos: sessions.TodoProgress{Total: 7, Completed: 3}, TodoElapsed: 12 * min},
			signals: []Signal{Todos}, within: [2]time.Duration{4 * min, 60 * min},
		},
		{
			// Past turns of 10–14 min, 2 min in: 8–12 min left.
			name:    "past turns alone",
			in:      Inputs{InTurn: true, Elapsed: 2 * min, Past: turns(10*min, 12*min, 14*min, 11*min)},
			signals: []Signal{PastTurns}, within: [2]time.Duration{2 * min, 40 * min},
		},
		{
			// 6 calls in 3 min (30 s a call); past turns made 30–42 calls.
			name:    "pace and past turns",
			in:      Inputs{InTurn: true, Elapsed: 3 * min, Tools: 6, Past: turns(10*min, 12*min, 14*min)},
			signals: []Signal{PastTurns, Pace}, within: [2]time.Duration{2 * min, 40 * min},
		},
		{
			name: "all three",
			in: Inputs{InTurn: true, Elapsed: 3 * min, Tools: 6, Past: turns(10*min, 12*min, 14*min),
				Todos: sessions.TodoProgress{Total: 4, Completed: 1, InProgress: 1}, TodoElapsed: 3 * min},
			signals: []Signal{Todos, PastTurns, Pace}, within: [2]time.Duration{min, 40 * min},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := Estimate(c.in)
			if !slices.Equal(b.Signals, c.signals) {
				t.Fatalf("signals = %v, want %v (%+v)", b.Signals, c.signals, b)
			}
			if c.signals == nil {
				if b.OK() || b.Reason != c.reason || b.String() != c.reason {
					t.Fatalf("band = %+v, want none: %q", b, c.reason)
				}
				return
			}
			if !(c.within[0] <= b.Low && b.Low < b.High && b.High <= c.within[1]) {
				t.Fatalf("band %v–%v not within %v–%v", b.Low, b.High, c.within[0], c.within[1])
			}
			if len(b.Parts) != len(c.signals) {
				t.Fatalf("parts = %+v, want one per signal", b.Parts)
			}
		})
	}
}

func TestTodosPaceCentre(t *testing.T) {
	// 2 of 6 done in 10 min: 5 min an item, 4 items left: centred on 20 min.
	b := Estimate(Inputs{InTurn: true, Elapsed: 10 * time.Minute, Todos: sessions.TodoProgress{Total: 6, Completed: 2}, TodoElapsed: 10 * time.Minute})
	mid := math.Sqrt(b.Low.Seconds() * b.High.Seconds())
	if math.Abs(mid-1200) > 1 {
		t.Fatalf("geometric centre %v s, want 1200 (band %v–%v)", mid, b.Low, b.High)
	}
}

func TestFewerItemsWiden(t *testing.T) {
	// The same pace (one item a minute, half the list left) from fewer
	// items done is less sure: a wider band.
	prev := math.Inf(1)
	for _, done := range []int{1, 2, 4, 8, 16} {
		b := Estimate(Inputs{InTurn: true, Todos: sessions.TodoProgress{Total: 2 * done, Completed: done}, TodoElapsed: time.Duration(done) * time.Minute})
		r := ratio(b.Low, b.High)
		if r >= prev {
			t.Fatalf("%d done: ratio %v not narrower than %v", done, r, prev)
		}
		prev = r
	}
}

func TestRange(t *testing.T) {
	cases := []struct {
		lo, hi time.Duration
		want   string
	}{
		{20 * time.Minute, 45 * time.Minute, "20–45 min"},
		{20*time.Minute + 10*time.Second, 20*time.Minute + 20*time.Second, "20–21 min"},
		{40 * time.Second, 90 * time.Second, "40–90 s"},
		{4 * time.Hour, 9*time.Hour + time.Minute, "4–10 h"},
	}
	for _, c := range cases {
		b := Band{Low: c.lo, High: c.hi, Signals: []Signal{PastTurns}}
		if got := b.Range(); got != c.want {
			t.Errorf("Range(%v, %v) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
	b := Band{Low: 20 * time.Minute, High: 45 * time.Minute, Signals: []Signal{Todos, PastTurns}, Todos: sessions.TodoProgress{Total: 7, Completed: 3}}
	if got, want := b.String(), "20–45 min (todos 3/7, past turns)"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
}

// randomInputs is a seeded generator of inputs across the whole range:
// sometimes without a turn, lists of every shape, 0–8 past turns.
type randomInputs Inputs

func (randomInputs) Generate(r *rand.Rand, _ int) reflect.Value {
	dur := func(max time.Duration) time.Duration { return time.Duration(r.Int63n(int64(max))) }
	in := Inputs{InTurn: r.Intn(10) > 0, Elapsed: dur(2 * time.Hour), Tools: r.Intn(60), TodoElapsed: dur(2 * time.Hour)}
	if r.Intn(3) > 0 {
		total := r.Intn(12)
		done := r.Intn(total + 1)
		in.Todos = sessions.TodoProgress{Total: total, Completed: done, InProgress: r.Intn(total - done + 1)}
	}
	for range r.Intn(sessions.MaxPastTurns + 1) {
		in.Past = append(in.Past, sessions.TurnRecord{Duration: dur(3 * time.Hour), Tools: r.Intn(100)})
	}
	return reflect.ValueOf(randomInputs(in))
}

func ratio(lo, hi time.Duration) float64 { return hi.Seconds() / lo.Seconds() }

// The properties: never a single number (Low < High, and the words never
// meet); each part a band too; the combination no wider (as a ratio, the
// band's own measure) than any signal alone; and taking a signal away never
// narrows the band.
func TestEstimateProperties(t *testing.T) {
	cfg := &quick.Config{MaxCount: 5000, Rand: rand.New(rand.NewSource(25))}
	bySignals := map[int]int{} // how many bands combined 0, 1, 2, 3 signals
	prop := func(ri randomInputs) bool {
		in := Inputs(ri)
		b := Estimate(in)
		bySignals[len(b.Signals)]++
		if !b.OK() {
			return b.Reason != "" && b.Low == 0 && b.High == 0 && b.Range() == ""
		}
		if !(0 < b.Low && b.Low < b.High) {
			t.Logf("not a band: %+v", b)
			return false
		}
		if r := b.Range(); r == "" || sameEnds(r) {
			t.Logf("range %q", r)
			return false
		}
		for _, p := range b.Parts {
			if !(0 < p.Low && p.Low < p.High) || ratio(b.Low, b.High) > ratio(p.Low, p.High)*(1+1e-9) {
				t.Logf("part %+v vs band %v–%v", p, b.Low, b.High)
				return false
			}
		}
		for _, fewer := range withoutEachSignal(in) {
			f := Estimate(fewer)
			if f.OK() && len(f.Signals) < len(b.Signals) && ratio(f.Low, f.High) < ratio(b.Low, b.High)*(1-1e-9) {
				t.Logf("fewer signals %v narrower than %v", f.Signals, b.Signals)
				return false
			}
		}
		return true
	}
	if err := quick.Check(prop, cfg); err != nil {
		t.Fatal(err)
	}
	// The generator must reach every case, or the properties hold vacuously.
	for n := range 4 {
		if bySignals[n] < 50 {
			t.Fatalf("only %d of the inputs gave %d signals (%v)", bySignals[n], n, bySignals)
		}
	}
}

// withoutEachSignal is in with one signal's input taken away at a time.
func withoutEachSignal(in Inputs) []Inputs {
	noTodos := in
	noTodos.Todos = sessions.TodoProgress{}
	noPace := in
	noPace.Tools = 0
	noPast := in
	noPast.Past = nil
	return []Inputs{noTodos, noPace, noPast}
}

func sameEnds(r string) bool {
	var lo, hi int
	var unit string
	n, _ := fmt.Sscanf(r, "%d–%d %s", &lo, &hi, &unit)
	return n == 3 && lo >= hi
}
