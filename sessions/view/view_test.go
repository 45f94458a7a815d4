package view

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func mk(id string, st sessions.State, mod func(*sessions.Session)) sessions.Session {
	s := sessions.Session{ID: id, State: st, StateChangedAt: t0}
	if st == sessions.Working || st == sessions.Suspect || st == sessions.Compacting {
		s.InTurn = true
	}
	if mod != nil {
		mod(&s)
	}
	return s
}

func escalated(s *sessions.Session) { s.NeedsAttention = true }

func TestUrgencyOf(t *testing.T) {
	cases := []struct {
		name string
		s    sessions.Session
		want Urgency
	}{
		{"escalated beats any state", mk("a", sessions.Working, escalated), NeedsAttention},
		{"escalated idle", mk("a", sessions.Idle, escalated), NeedsAttention},
		{"waiting on user", mk("a", sessions.WaitingOnUser, nil), Waiting},
		{"recovering", mk("a", sessions.Recovering, nil), Recovering},
		{"suspect", mk("a", sessions.Suspect, nil), Recovering},
		{"errored not yet escalated", mk("a", sessions.Errored, nil), Recovering},
		{"interrupted not yet escalated", mk("a", sessions.Interrupted, nil), Recovering},
		{"working", mk("a", sessions.Working, nil), Working},
		{"compacting", mk("a", sessions.Compacting, nil), Working},
		{"idle", mk("a", sessions.Idle, nil), Quiet},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := UrgencyOf(tc.s); got != tc.want {
				t.Errorf("UrgencyOf = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestMost(t *testing.T) {
	cases := []struct {
		name string
		list []sessions.Session
		want Urgency
	}{
		{"none", nil, Quiet},
		{"working over idle", []sessions.Session{mk("a", sessions.Idle, nil), mk("b", sessions.Working, nil)}, Working},
		{"waiting over suspect", []sessions.Session{mk("a", sessions.Suspect, nil), mk("b", sessions.WaitingOnUser, nil)}, Waiting},
		{"attention over all", []sessions.Session{mk("a", sessions.WaitingOnUser, nil), mk("b", sessions.Idle, escalated)}, NeedsAttention},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Most(tc.list); got != tc.want {
				t.Errorf("Most = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestSortIsTheOneOrder pins the order every view lists: urgency, then the
// newest state change, then id — not creation time (what `ls` used).
func TestSortIsTheOneOrder(t *testing.T) {
	at := func(ago time.Duration) func(*sessions.Session) {
		return func(s *sessions.Session) { s.StateChangedAt = t0.Add(-ago) }
	}
	list := []sessions.Session{
		mk("idle", sessions.Idle, at(time.Minute)),
		mk("work-old", sessions.Working, at(time.Hour)),
		mk("work-new", sessions.Working, func(s *sessions.Session) {
			s.StateChangedAt = t0.Add(-time.Minute)
			s.CreatedAt = t0.Add(-48 * time.Hour) // created first, changed last
		}),
		mk("suspect", sessions.Suspect, at(time.Hour)),
		mk("wait", sessions.WaitingOnUser, at(time.Hour)),
		mk("esc", sessions.Interrupted, func(s *sessions.Session) { s.NeedsAttention = true; s.StateChangedAt = t0.Add(-10 * time.Hour) }),
		mk("tie-b", sessions.Idle, at(time.Hour)),
		mk("tie-a", sessions.Idle, at(time.Hour)),
	}
	Sort(list)
	var got []string
	for _, s := range list {
		got = append(got, s.ID)
	}
	want := "esc wait suspect work-new work-old idle tie-a tie-b"
	if strings.Join(got, " ") != want {
		t.Fatalf("order %q, want %q", strings.Join(got, " "), want)
	}
}

func TestStateTextAndBadge(t *testing.T) {
	cases := []struct {
		name      string
		s         sessions.Session
		badge     string
		stateText string
	}{
		{"working", mk("a", sessions.Working, nil), "Working", "Working"},
		{"escalated", mk("a", sessions.Interrupted, escalated), "Needs attention", "Needs attention (Interrupted)"},
		{"permission", mk("a", sessions.WaitingOnUser, func(s *sessions.Session) { s.WaitReason = sessions.WaitPermission }), "Waiting on user", "Waiting on user (permission)"},
		{"review", mk("a", sessions.WaitingOnUser, func(s *sessions.Session) { s.WaitReason = sessions.WaitReview }), "Waiting on user", "Waiting on user (review)"},
		{"waiting, no reason", mk("a", sessions.WaitingOnUser, nil), "Waiting on user", "Waiting on user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Badge(tc.s); got != tc.badge {
				t.Errorf("Badge = %q, want %q", got, tc.badge)
			}
			if got := StateText(tc.s); got != tc.stateText {
				t.Errorf("StateText = %q, want %q", got, tc.stateText)
			}
		})
	}
}

func TestFailureText(t *testing.T) {
	reset := time.Date(2026, 11, 29, 15, 4, 5, 0, time.UTC)
	cases := []struct {
		name  string
		f     sessions.Failure
		text  string
		retry string
	}{
		{"none", sessions.Failure{}, "", ""},
		{"kind only", sessions.Failure{Kind: sessions.Auth}, "authentication failed", ""},
		{"kind and message", sessions.Failure{Kind: sessions.RateLimit, Message: "429: slow down", RetryAt: reset}, "rate limited — 429: slow down", "retry at 2026-11-29 15:04:05"},
		{"message without kind", sessions.Failure{Message: "bad install"}, "error — bad install", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := FailureText(tc.f); got != tc.text {
				t.Errorf("FailureText = %q, want %q", got, tc.text)
			}
			if got := RetryText(tc.f, time.UTC); got != tc.retry {
				t.Errorf("RetryText = %q, want %q", got, tc.retry)
			}
		})
	}
}

// TestAcknowledgeAgreesWithApply checks the Acknowledge rule against the
// reducer itself: over every state, wait reason, turn and escalation, the
// action is offered exactly when applying EvAcknowledged changes the
// session.
func TestAcknowledgeAgreesWithApply(t *testing.T) {
	reasons := []sessions.WaitReason{sessions.NoWait, sessions.WaitQuestion, sessions.WaitPlan, sessions.WaitPermission, sessions.WaitReview}
	n := 0
	for _, st := range sessions.AllStates {
		for _, reason := range reasons {
			if reason != sessions.NoWait && st != sessions.WaitingOnUser {
				continue
			}
			for _, inTurn := range []bool{false, true} {
				for _, attention := range []bool{false, true} {
					s := sessions.Session{ID: "x", State: st, WaitReason: reason, InTurn: inTurn, NeedsAttention: attention,
						Failure: sessions.Failure{Kind: sessions.OtherFailure, Message: "m"}, StateChangedAt: t0, UpdatedAt: t0}
					after := sessions.Apply(s, sessions.Event{Kind: sessions.EvAcknowledged}, t0.Add(time.Second))
					changes := after.State != s.State || after.NeedsAttention != s.NeedsAttention
					if got := Allows(s, Acknowledge); got != changes {
						t.Errorf("%s/%s in_turn=%t attention=%t: Allows(Acknowledge) = %t, but Apply changes it: %t",
							st, reason, inTurn, attention, got, changes)
					}
					n++
				}
			}
		}
	}
	if n < 40 {
		t.Fatalf("only %d combinations checked", n)
	}
}

// deadTerminal makes a session one the app did not launch whose process is
// gone, with the agent's session id to resume.
func deadTerminal(s *sessions.Session) {
	s.Source, s.AgentSessionID, s.ProcessAlive, s.InTurn = sessions.Observed, "sid", false, false
}

func TestAllows(t *testing.T) {
	perm := func(s *sessions.Session) {
		s.WaitReason = sessions.WaitPermission
		s.InTurn = true
		s.Permission = &sessions.Permission{RequestID: "r", Tool: "Bash"}
	}
	cases := []struct {
		name string
		s    sessions.Session
		want map[Action]bool
	}{
		{"working", mk("a", sessions.Working, nil), map[Action]bool{Interrupt: true}},
		{"idle", mk("a", sessions.Idle, nil), map[Action]bool{Nudge: true, Forget: true}},
		{"errored", mk("a", sessions.Errored, nil), map[Action]bool{Nudge: true, Acknowledge: true, Forget: true}},
		{"review", mk("a", sessions.WaitingOnUser, func(s *sessions.Session) { s.WaitReason = sessions.WaitReview }), map[Action]bool{Nudge: true, Acknowledge: true, Forget: true}},
		{"permission", mk("a", sessions.WaitingOnUser, perm), map[Action]bool{Interrupt: true, Approve: true, Deny: true}},
		{"question out of turn", mk("a", sessions.WaitingOnUser, func(s *sessions.Session) { s.WaitReason = sessions.WaitQuestion }), map[Action]bool{Nudge: true, Forget: true}},
		{"recovery held by the supervisor", mk("a", sessions.Recovering, nil), map[Action]bool{Nudge: true, Acknowledge: true, Forget: true}},
		{"the agent's own retry in turn", mk("a", sessions.Recovering, func(s *sessions.Session) { s.InTurn = true }), map[Action]bool{Interrupt: true}},
		{"escalated in turn", mk("a", sessions.Suspect, escalated), map[Action]bool{Interrupt: true, Acknowledge: true}},
		{"terminal, process gone mid-turn", mk("a", sessions.Interrupted, deadTerminal), map[Action]bool{Nudge: true, Acknowledge: true, Resume: true, Forget: true}},
		{"terminal, process gone after a failure", mk("a", sessions.Errored, deadTerminal), map[Action]bool{Nudge: true, Acknowledge: true, Resume: true, Forget: true}},
		{"terminal, alive", mk("a", sessions.Interrupted, func(s *sessions.Session) { deadTerminal(s); s.ProcessAlive, s.PID = true, 4242 }),
			map[Action]bool{Nudge: true, Acknowledge: true, GoToTerminal: true}},
		{"terminal, no agent session id", mk("a", sessions.Interrupted, func(s *sessions.Session) { deadTerminal(s); s.AgentSessionID = "" }),
			map[Action]bool{Nudge: true, Acknowledge: true, Forget: true}},
		{"terminal, resumed (idle)", mk("a", sessions.Idle, deadTerminal), map[Action]bool{Nudge: true, Forget: true}},
		{"managed, running", mk("a", sessions.Idle, func(s *sessions.Session) { s.ProcessAlive, s.PID = true, 4242 }), map[Action]bool{Nudge: true}},
		{"managed, interrupted", mk("a", sessions.Interrupted, func(s *sessions.Session) { s.AgentSessionID = "sid" }),
			map[Action]bool{Nudge: true, Acknowledge: true, Forget: true, ContinueInTerminal: true}},
		{"managed, working, its agent session known", mk("a", sessions.Working, func(s *sessions.Session) {
			s.AgentSessionID, s.InTurn, s.ProcessAlive, s.PID = "sid", true, true, 4242
		}), map[Action]bool{Interrupt: true, ContinueInTerminal: true}},
		{"managed, its conversation run by a terminal too", mk("a", sessions.Idle, func(s *sessions.Session) {
			s.AgentSessionID, s.ProcessAlive, s.PID, s.SharedWith = "sid", true, 4242, "b"
		}), map[Action]bool{Nudge: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, a := range []Action{Acknowledge, Interrupt, Nudge, Approve, Deny, Resume, GoToTerminal, Forget, ContinueInTerminal} {
				if got := Allows(tc.s, a); got != tc.want[a] {
					t.Errorf("Allows(%s) = %t, want %t", a, got, tc.want[a])
				}
			}
		})
	}
}

func TestTimelineDetail(t *testing.T) {
	cases := []struct {
		name, detail, want string
	}{
		{"message", `{"message":"12 min silent"}`, "12 min silent"},
		{"state change", `{"from":"working","to":"suspect","message":"12 min silent"}`, "Working → Suspect: 12 min silent"},
		{"state change alone", `{"from":"idle","to":"working"}`, "Idle → Working"},
		{"unknown state name", `{"from":"working","to":"dreaming"}`, "Working → dreaming"},
		{"other fields follow", `{"message":"nudge 1","outcome":"ok","action":"nudge","attempt":2}`, "nudge 1 · action=nudge · attempt=2 · outcome=ok"},
		{"no message", `{"pid":4242,"alive":true}`, "alive=true · pid=4242"},
		{"big number", `{"bytes":12345678}`, "bytes=12345678"},
		{"empty object", `{}`, ""},
		{"empty", ``, ""},
		{"not an object", `"just text"`, `"just text"`},
		{"not JSON", `oops`, "oops"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TimelineDetail(json.RawMessage(tc.detail)); got != tc.want {
				t.Errorf("TimelineDetail(%s) = %q, want %q", tc.detail, got, tc.want)
			}
		})
	}
}

func TestKindLabelAndTurnTitle(t *testing.T) {
	if got := KindLabel("stall_interrupt"); got != "stall interrupt" {
		t.Errorf("KindLabel = %q", got)
	}
	for gen, want := range map[int64]string{0: "Before the first turn", 3: "Turn 3"} {
		if got := TurnTitle(gen); got != want {
			t.Errorf("TurnTitle(%d) = %q, want %q", gen, got, want)
		}
	}
}

func TestEnumStrings(t *testing.T) {
	if NeedsAttention.String() != "needs_attention" || Quiet.String() != "idle" || Urgency(9).String() != "urgency(9)" {
		t.Error("Urgency.String")
	}
	if Acknowledge.String() != "acknowledge" || Deny.String() != "deny" || Resume.String() != "resume" || Action(9).String() != "action(9)" {
		t.Error("Action.String")
	}
	seen := map[string]bool{}
	for u := NeedsAttention; u <= Quiet; u++ {
		if m := u.Marker(); m == "" || seen[m] {
			t.Errorf("%s: marker %q empty or shared", u, m)
		} else {
			seen[m] = true
		}
	}
}

// A session the app did not launch is marked "(terminal)" wherever it is
// listed; a managed one is not.
func TestTitleMarksTerminalSessions(t *testing.T) {
	cases := []struct {
		src  sessions.Source
		want string
	}{
		{sessions.Managed, "api"},
		{sessions.Observed, "api (terminal)"},
		{sessions.Hooked, "api (terminal)"},
	}
	for _, tc := range cases {
		if got := Title(sessions.Session{ID: "0123456789", Name: "api", Source: tc.src}); got != tc.want {
			t.Errorf("Title(%v) = %q, want %q", tc.src, got, tc.want)
		}
	}
}

// A terminal's dialog (a request without an id) is answered in the
// terminal: the app offers neither Approve nor Deny for it.
func TestAllowsNoAnswerToATerminalDialog(t *testing.T) {
	s := sessions.Session{Source: sessions.Observed, State: sessions.WaitingOnUser, WaitReason: sessions.WaitPermission,
		Permission: &sessions.Permission{Tool: "Bash"}}
	if Allows(s, Approve) || Allows(s, Deny) {
		t.Fatal("offered to answer a terminal's dialog")
	}
	s.Source, s.Permission.RequestID = sessions.Managed, "r1"
	if !Allows(s, Approve) || !Allows(s, Deny) {
		t.Fatal("a managed request is not offered")
	}
}

func TestRecoveryText(t *testing.T) {
	budget := sessions.Session{RecoveryOff: true}
	budget.Supervision.Budget = "session token budget 10 reached (11 tokens)"
	tests := []struct {
		name string
		s    sessions.Session
		want string
	}{
		{"recovered as the settings say", sessions.Session{}, ""},
		{"the user's switch", sessions.Session{RecoveryOff: true}, "switched off for this session: not nudged, continued or resumed"},
		{"a budget is named before the switch", budget, "stopped: session token budget 10 reached (11 tokens); not nudged, continued or resumed while it lasts"},
	}
	for _, tt := range tests {
		if got := RecoveryText(tt.s); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
