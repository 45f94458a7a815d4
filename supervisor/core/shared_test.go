package core

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

func TestSharedConversations(t *testing.T) {
	p := func(id, asid string, live bool, created time.Duration) ConversationProcess {
		return ConversationProcess{ID: id, Agent: "claude", AgentSessionID: asid, Live: live, CreatedAt: at(created)}
	}
	tests := []struct {
		name string
		list []ConversationProcess
		want map[string]string
	}{
		{"one process per conversation", []ConversationProcess{p("m", "c1", true, 0), p("t", "c2", true, time.Minute)}, nil},
		{"a terminal resume beside the managed process: each names the other",
			[]ConversationProcess{p("m", "c1", true, 0), p("t", "c1", true, time.Minute)}, map[string]string{"m": "t", "t": "m"}},
		{"a dead session is named (resuming it would be the second process); the live one is not",
			[]ConversationProcess{p("m", "c1", false, 0), p("t", "c1", true, time.Minute)}, map[string]string{"m": "t"}},
		{"neither lives", []ConversationProcess{p("m", "c1", false, 0), p("t", "c1", false, time.Minute)}, nil},
		{"another agent's equal id is another conversation",
			[]ConversationProcess{p("m", "c1", true, 0), {ID: "x", Agent: "codex", AgentSessionID: "c1", Live: true}}, nil},
		{"no agent session id yet", []ConversationProcess{p("m", "", true, 0), p("t", "", true, 0)}, nil},
		{"the app's own background resume shares nothing with its source",
			[]ConversationProcess{p("t", "c1", false, 0), {ID: "r", Agent: "claude", AgentSessionID: "c1", Live: true, ResumedFrom: "t", CreatedAt: at(time.Minute)}}, nil},
		{"an archived session is neither subject nor runner",
			[]ConversationProcess{p("m", "c1", true, 0), {ID: "a", Agent: "claude", AgentSessionID: "c1", Live: true, Archived: true}}, nil},
		{"three processes: each names the oldest other",
			[]ConversationProcess{p("c", "c1", true, 2*time.Minute), p("a", "c1", true, 0), p("b", "c1", true, time.Minute)},
			map[string]string{"a": "b", "b": "a", "c": "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SharedConversations(tt.list); !maps.Equal(got, tt.want) {
				t.Fatalf("SharedConversations = %v, want %v", got, tt.want)
			}
		})
	}
}

// A session whose conversation another process runs is neither nudged nor
// resumed; it is escalated once per other session (not again after an
// acknowledgement while the share lasts), and recovery applies again when
// the other process is gone.
func TestReconcileSharedConversation(t *testing.T) {
	shared := func(s sessions.Session) sessions.Session {
		s.SharedWith, s.AgentSessionID = "t-0123456789", "c1"
		return s
	}
	escalatedOnce := func(t *testing.T, out sessions.Session, obs []Observation, acts []Action) {
		if !out.NeedsAttention || out.Supervision.SharedEscalated != "t-0123456789" {
			t.Fatalf("not escalated for the share: %+v", out)
		}
		if acts[0].Detail == "" || !strings.Contains(acts[0].Detail, "session t-012345 runs its conversation") {
			t.Fatalf("escalation says %q", acts[0].Detail)
		}
	}
	acked := shared(interrupted())
	acked.Supervision.SharedEscalated = acked.SharedWith // escalated, then acknowledged
	gone := interrupted()
	gone.AgentSessionID = "c1"
	gone.Supervision.SharedEscalated = "t-0123456789"
	// Escalated for the share while a stall chain ran; the chain is over
	// (the turn moves again), so its bookkeeping is dropped — not the
	// memory of the share's escalation.
	staleChain := shared(working())
	staleChain.Supervision.SharedEscalated = staleChain.SharedWith
	staleChain.Supervision.Recovery = RecoveryStall
	idleEnded := shared(interrupted())
	idleEnded.State, idleEnded.Evidence = sessions.Idle, "acknowledged"
	runCases(t, []rcase{
		{name: "interrupted, shared: escalated, not nudged", s: shared(interrupted()), now: at(time.Minute), probe: dead,
			state: sessions.Interrupted, obs: []string{TimelineSharedConversation}, acts: []ActionKind{ActEscalate}, check: escalatedOnce},
		{name: "working, shared: escalated once, the turn left alone", s: shared(working()), now: at(time.Minute), probe: alive,
			state: sessions.Working, obs: []string{TimelineSharedConversation}, acts: []ActionKind{ActEscalate}, check: escalatedOnce},
		{name: "acknowledged while still shared: held, not escalated again", s: acked, now: at(time.Minute), probe: dead,
			state: sessions.Interrupted, same: true},
		{name: "a stale recovery dropped while still shared: not escalated again", s: staleChain, now: at(time.Minute), probe: alive,
			state: sessions.Working,
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if out.Supervision.Recovery != "" || out.Supervision.SharedEscalated != out.SharedWith {
					t.Fatalf("supervision %+v: want the stall chain dropped and the share's escalation kept", out.Supervision)
				}
			}},
		{name: "an ended session only records it", s: idleEnded, now: at(time.Minute), probe: dead,
			state: sessions.Idle, obs: []string{TimelineSharedConversation},
			check: func(t *testing.T, out sessions.Session, _ []Observation, _ []Action) {
				if out.NeedsAttention {
					t.Fatal("an ended session was escalated")
				}
			}},
		{name: "the other process gone: recovery applies again", s: gone, now: at(time.Minute), probe: dead,
			state: sessions.Interrupted, obs: []string{TimelineSharedConversation}, acts: []ActionKind{ActNudge}},
	})
}
