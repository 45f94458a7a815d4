package observe

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestInferFirstMatchWins(t *testing.T) {
	working := func(int) (sessions.ObservedState, bool) { return Working("busy"), true }
	never := func(int) (sessions.ObservedState, bool) { return sessions.ObservedState{}, false }
	negative := func(n int) (sessions.ObservedState, bool) {
		return sessions.ObservedState{State: sessions.Errored, Evidence: "negative"}, n < 0
	}
	cases := []struct {
		name     string
		rules    []Rule[int]
		ev       int
		want     sessions.State
		wantRule string
	}{
		{"the first that matches", []Rule[int]{{"neg", negative}, {"work", working}}, -1, sessions.Errored, "neg"},
		{"a later one when the first does not", []Rule[int]{{"neg", negative}, {"work", working}}, 1, sessions.Working, "work"},
		{"none matches: idle, nothing observed", []Rule[int]{{"never", never}}, 1, sessions.Idle, "idle"},
		{"an empty stack", nil, 0, sessions.Idle, "idle"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, rule := Infer(tc.rules, tc.ev)
			if st.State != tc.want || rule != tc.wantRule {
				t.Errorf("Infer = %v by %q, want %v by %q", st.State, rule, tc.want, tc.wantRule)
			}
		})
	}
}

func TestGenericRules(t *testing.T) {
	resets := time.Date(2026, 12, 1, 15, 4, 0, 0, time.UTC)
	gone := func(alive, known, inTurn bool) sessions.ObservedState {
		st, ok := ProcessGone(42, alive, known, inTurn, "its file shows no end of the turn")
		if !ok {
			return sessions.ObservedState{Evidence: "(no match)"}
		}
		return st
	}
	cases := []struct {
		name     string
		got      sessions.ObservedState
		state    sessions.State
		inTurn   bool
		wait     sessions.WaitReason
		tool     string
		evidence string
	}{
		{"alive: no match", gone(true, true, true), 0, false, 0, "", "(no match)"},
		{"cannot tell: no match", gone(false, false, true), 0, false, 0, "", "(no match)"},
		{"gone mid-turn", gone(false, true, true), sessions.Interrupted, false, 0, "",
			"process 42 is gone mid-turn (its file shows no end of the turn)"},
		{"gone between turns", gone(false, true, false), sessions.Idle, false, 0, "", "process 42 is gone"},
		{"failed", TurnFailed(sessions.Failure{Kind: sessions.Auth}, "retry after", "15:04 MST"), sessions.Errored, false, 0, "",
			"the turn failed (" + sessions.Auth.Label() + ")"},
		{"failed with a reset time", TurnFailed(sessions.Failure{Kind: sessions.RateLimit, RetryAt: resets}, "the limit resets at", "15:04 MST"),
			sessions.Errored, false, 0, "", "the turn failed (" + sessions.RateLimit.Label() + "); the limit resets at 15:04 UTC"},
		{"waiting", Waiting(sessions.WaitPermission, "Bash", "approve it"), sessions.WaitingOnUser, true, sessions.WaitPermission, "Bash", "approve it"},
		{"a named tool", RunningTool("Bash"), sessions.Working, true, 0, "Bash", "running Bash"},
		{"an unnamed tool", RunningTool(""), sessions.Working, true, 0, "", "running a tool"},
		{"working", Working("the file shows a turn in flight"), sessions.Working, true, 0, "", "the file shows a turn in flight"},
		{"turn ended", TurnEnded("the turn ended; waiting for review"), sessions.WaitingOnUser, false, sessions.WaitReview, "",
			"the turn ended; waiting for review"},
		{"idle before any prompt", Idle(false), sessions.Idle, false, 0, "", "no prompt yet in the terminal"},
		{"idle after turns", Idle(true), sessions.Idle, false, 0, "", "nothing in flight"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.got
			if g.State != tc.state || g.InTurn != tc.inTurn || g.Wait != tc.wait || g.Tool != tc.tool || g.Evidence != tc.evidence {
				t.Errorf("got %+v, want state %v in turn %v wait %v tool %q evidence %q", g, tc.state, tc.inTurn, tc.wait, tc.tool, tc.evidence)
			}
		})
	}
}

func TestOrDefault(t *testing.T) {
	for _, tc := range []struct{ s, def, want string }{{"a", "b", "a"}, {"", "b", "b"}, {"", "", ""}} {
		if got := OrDefault(tc.s, tc.def); got != tc.want {
			t.Errorf("OrDefault(%q, %q) = %q, want %q", tc.s, tc.def, got, tc.want)
		}
	}
}

// A Stack lists its filled slots in the generic order under their generic
// names, the process first, leaving the empty ones out; its Infer walks
// them (a gone process mid-turn is Interrupted, with the witness).
func TestStackOrderAndNames(t *testing.T) {
	type ev struct {
		Liveness
		inTurn bool
	}
	match := func(ev) (sessions.ObservedState, bool) { return sessions.ObservedState{}, false }
	idle := func(ev) (sessions.ObservedState, bool) { return Idle(true), true }
	full := Stack[ev]{InTurn: func(e ev) bool { return e.inTurn }, Witness: "its file says so",
		Failed: match, Waiting: match, Compacting: match, OpenTool: match, Working: match, Ended: match, Idle: idle}
	var names []string
	for _, r := range full.Rules() {
		names = append(names, r.Name)
	}
	want := "process gone, turn failed, waiting on the user, compacting, open tool, turn in flight, turn ended, idle"
	if got := strings.Join(names, ", "); got != want {
		t.Fatalf("rules %s\nwant  %s", got, want)
	}
	if st, rule := full.Infer(ev{Liveness{PID: 7, Known: true}, true}); st.State != sessions.Interrupted || rule != "process gone" ||
		st.Evidence != "process 7 is gone mid-turn (its file says so)" {
		t.Fatalf("gone mid-turn: %+v by %q", st, rule)
	}
	if st, rule := full.Infer(ev{Liveness{PID: 7, Alive: true, Known: true}, true}); st.State != sessions.Idle || rule != "idle" {
		t.Fatalf("alive: %+v by %q", st, rule)
	}
	full.Compacting, full.Failed = nil, nil
	if got := len(full.Rules()); got != 6 {
		t.Fatalf("%d rules with two slots empty", got)
	}
}

// Opened keeps at most max entries, dropping the oldest; Closed removes
// the first entry that closes without touching the array an earlier copy
// holds.
func TestOpenedAndClosed(t *testing.T) {
	var open []int
	for i := range 5 {
		open = Opened(open, 3, i)
	}
	if !slices.Equal(open, []int{2, 3, 4}) {
		t.Fatalf("opened %v", open)
	}
	before := slices.Clone(open)
	kept := open
	open = Closed(open, func(v int) bool { return v == 3 })
	if !slices.Equal(open, []int{2, 4}) || !slices.Equal(kept, before) {
		t.Fatalf("closed %v, the earlier copy %v", open, kept)
	}
	if got := Closed(open, func(v int) bool { return v == 9 }); !slices.Equal(got, open) {
		t.Fatalf("closing nothing: %v", got)
	}
}
