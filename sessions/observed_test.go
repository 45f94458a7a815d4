package sessions

import (
	"strings"
	"testing"
	"time"
)

// Apply takes an external source's observed state as-is and keeps the turn
// bookkeeping consistent with it.
func TestApplyObserved(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	obs := func(o ObservedState) Event { return Event{Kind: EvObserved, Observed: &o} }
	started := ObservedState{State: Working, InTurn: true, NewTurns: 1, Evidence: "the transcript shows a turn in flight", Name: "Fix it"}
	working := ObservedState{State: Working, InTurn: true, Evidence: "the transcript shows a turn in flight"}
	quick := ObservedState{State: WaitingOnUser, Wait: WaitReview, NewTurns: 2, Evidence: "the turn ended; waiting for review"}
	bash := ObservedState{State: Working, InTurn: true, Tool: "Bash", Evidence: "running Bash"}
	grep := ObservedState{State: Working, InTurn: true, Tool: "Grep", Evidence: "running Grep"}
	review := ObservedState{State: WaitingOnUser, Wait: WaitReview, Evidence: "the turn ended; waiting for review"}
	limited := ObservedState{State: Errored, Failure: Failure{Kind: RateLimit, Message: "limit"}, Evidence: "the turn died on an API error"}

	s := Session{ID: "x", Source: Observed, State: Idle, Evidence: "found", Nudge: NudgeBudget{Attempts: 1}}
	step := func(e Event, at time.Duration) {
		t.Helper()
		s = Apply(s, e, t0.Add(at))
	}
	step(obs(started), 0)
	if s.State != Working || !s.InTurn || s.TurnGeneration != 1 || !s.TurnAcked || s.Name != "Fix it" || !s.LastEventAt.Equal(t0) {
		t.Fatalf("a turn seen starting: %+v", s)
	}
	step(obs(working), time.Second)
	if s.TurnGeneration != 1 || !s.LastEventAt.Equal(t0.Add(time.Second)) || s.Name != "Fix it" {
		t.Fatalf("the same turn seen again: generation %d, last event %v, name %q", s.TurnGeneration, s.LastEventAt, s.Name)
	}
	step(obs(bash), 2*time.Second)
	step(obs(bash), 5*time.Second)
	if c, ok := s.OldestOpenCall(); !ok || c.Name != "Bash" || !c.Started.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("the open tool keeps its start: %+v", s.OpenTools)
	}
	step(obs(grep), 6*time.Second)
	if c, _ := s.OldestOpenCall(); c.Name != "Grep" || !c.Started.Equal(t0.Add(6*time.Second)) {
		t.Fatalf("another tool: %+v", s.OpenTools)
	}
	step(obs(review), 7*time.Second)
	if s.State != WaitingOnUser || s.WaitReason != WaitReview || s.InTurn || s.HasOpenWork() || s.Nudge.Attempts != 0 {
		t.Fatalf("the turn seen ending: %+v", s)
	}
	step(obs(started), 8*time.Second)
	if s.TurnGeneration != 2 {
		t.Fatalf("a second turn: generation %d", s.TurnGeneration)
	}
	// Seen in flight again without a new turn (the status flipped): the
	// same generation.
	step(obs(review), 8*time.Second)
	step(obs(working), 8*time.Second)
	if s.TurnGeneration != 2 || !s.InTurn || s.State != Working {
		t.Fatalf("the same turn again: generation %d in turn %v %v", s.TurnGeneration, s.InTurn, s.State)
	}
	// Two turns that both started (and ended) between two reads.
	step(obs(quick), 8*time.Second)
	if s.TurnGeneration != 4 || s.InTurn || s.WaitReason != WaitReview {
		t.Fatalf("quick turns: generation %d in turn %v", s.TurnGeneration, s.InTurn)
	}
	step(obs(limited), 9*time.Second)
	if s.State != Errored || s.InTurn || s.Failure.Kind != RateLimit {
		t.Fatalf("errored: %+v", s)
	}
	// The supervisor holds it (Reconcile's rate-limit drain); the source
	// repeating the same failure does not undo the hold.
	s.State = Recovering
	step(obs(limited), 10*time.Second)
	if s.State != Recovering {
		t.Fatalf("the hold was undone: %v", s.State)
	}
	// An event without a payload changes no state.
	before := s.State
	step(Event{Kind: EvObserved}, 11*time.Second)
	if s.State != before {
		t.Fatalf("a nil observation changed the state to %v", s.State)
	}
}

// A terminal's permission dialog becomes the session's one open request,
// with no request id (it is answered in the terminal), and goes with the
// next observation that is not that dialog.
func TestApplyObservedPermissionDialog(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	s := Session{ID: "t", Source: Observed, State: Working, InTurn: true, TurnGeneration: 1}
	s = Apply(s, Event{Kind: EvObserved, Observed: &ObservedState{State: WaitingOnUser, Wait: WaitPermission, InTurn: true,
		Evidence: "asks", Permission: &Permission{Tool: "Bash", Input: "make build"}}}, now)
	if s.Permission == nil || s.Permission.Tool != "Bash" || s.Permission.Input != "make build" || s.Permission.RequestID != "" || len(s.Permissions) != 1 {
		t.Fatalf("after the dialog: %+v %+v", s.Permission, s.Permissions)
	}
	s = Apply(s, Event{Kind: EvObserved, Observed: &ObservedState{State: Working, InTurn: true, Tool: "Bash", Evidence: "running Bash"}}, now.Add(time.Second))
	if s.Permission != nil || len(s.Permissions) != 0 || s.State != Working || s.Evidence != "running Bash" {
		t.Fatalf("the answered dialog stayed: %v (%s) %+v", s.State, s.Evidence, s.Permissions)
	}
}

// A terminal turn that ends with an interrupt marker is the user's stop
// (a review) unless the supervisor had sent that interrupt (its hard-stall
// interrupt through the session's inbox, recorded as InterruptBy before it
// went): then the turn is Interrupted, said to be the supervisor's, and the
// nudge budget the interrupt spent stays spent. Seen again, it stays so;
// a new turn moves it on (issue 20, item 3).
func TestApplyObservedSupervisorInterrupt(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	stopped := ObservedState{State: WaitingOnUser, Wait: WaitReview, Aborted: true, Evidence: "you stopped the turn in the terminal; waiting for review"}
	sup, user := BySupervisor, ByUser
	for _, tc := range []struct {
		name      string
		by        *Actor
		state     State
		wait      WaitReason
		evidence  string
		nudges    int
		wantCause InterruptCause
	}{
		{"the supervisor's interrupt", &sup, Interrupted, NoWait, "interrupted by the supervisor", 1, CauseAbort},
		{"the user's stop", nil, WaitingOnUser, WaitReview, "you stopped the turn", 0, NoInterruptCause},
		{"the user's stop asked through the app", &user, WaitingOnUser, WaitReview, "you stopped the turn", 0, NoInterruptCause},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Session{ID: "x", Source: Observed, State: Suspect, InTurn: true, TurnAcked: true, TurnGeneration: 3,
				ProcessAlive: true, InterruptBy: tc.by, Nudge: NudgeBudget{Attempts: 1, LastNudge: t0}, Evidence: "silent"}
			e := Event{Kind: EvObserved, Observed: &stopped}
			n := Apply(s, e, t0.Add(time.Second))
			if n.State != tc.state || n.WaitReason != tc.wait || n.InTurn || !strings.Contains(n.Evidence, tc.evidence) || n.Nudge.Attempts != tc.nudges {
				t.Fatalf("got %v/%v in turn %v nudges %d (%s); want %v/%v, %q, nudges %d",
					n.State, n.WaitReason, n.InTurn, n.Nudge.Attempts, n.Evidence, tc.state, tc.wait, tc.evidence, tc.nudges)
			}
			if got := InterruptCauseOf(s, n, e); got != tc.wantCause {
				t.Errorf("cause %q, want %q", got, tc.wantCause)
			}
			// The same marker seen again (the transcript grew).
			again := Apply(n, e, t0.Add(2*time.Second))
			if again.State != n.State || again.Evidence != n.Evidence {
				t.Errorf("seen again: %v (%s), want %v (%s)", again.State, again.Evidence, n.State, n.Evidence)
			}
			// The nudge that rode with the interrupt starts a turn.
			next := Apply(again, Event{Kind: EvObserved, Observed: &ObservedState{State: Working, InTurn: true, NewTurns: 1, Evidence: "busy"}}, t0.Add(3*time.Second))
			if next.State != Working || next.TurnGeneration != 4 || next.InterruptBy != nil {
				t.Errorf("the next turn: %v generation %d interrupt by %v", next.State, next.TurnGeneration, next.InterruptBy)
			}
		})
	}
}
