package supervisor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/claudeterm"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// answeringSource is a terminal source whose session answers a nudge the
// way the real CLI does (its session file goes busy: a new observed turn)
// after answerAfter, or never (answerAfter < 0), or whose delivery fails.
type answeringSource struct {
	claudeterm.Source
	rt          *Runtime
	id          string
	canNudge    bool
	answerAfter time.Duration
	deliverErr  error

	mu     sync.Mutex
	nudges int
}

func (f *answeringSource) Alive(sessions.ExternalSession) (bool, bool) { return true, true }
func (f *answeringSource) CanNudge(sessions.ExternalSession) bool      { return f.canNudge }
func (f *answeringSource) Nudge(_ context.Context, _ sessions.ExternalSession, _ string, _ bool) error {
	f.mu.Lock()
	f.nudges++
	f.mu.Unlock()
	if f.deliverErr != nil {
		return f.deliverErr
	}
	if f.answerAfter >= 0 {
		go func() {
			time.Sleep(f.answerAfter)
			f.rt.mu.Lock()
			defer f.rt.mu.Unlock()
			e := f.rt.sess[f.id]
			e.s.ProcessAlive = true
			f.rt.applyLocked(e, sessions.Event{Kind: sessions.EvObserved, Observed: &sessions.ObservedState{
				State: sessions.Working, InTurn: true, NewTurns: 1, Evidence: "the session file says busy"}})
		}()
	}
	return nil
}

func (f *answeringSource) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nudges
}

// A nudge into a terminal session is recorded nudge_sent only once the
// session shows it arrived (within the bound); otherwise nudge_failed, with
// the reason, and the attempt spent: the budget runs out and the session is
// escalated by the ordinary rules. A session with no inbox is escalated at
// once, never nudged.
func TestExternalNudgeVerification(t *testing.T) {
	cases := []struct {
		name        string
		canNudge    bool
		answerAfter time.Duration
		deliverErr  error
		// after the ticks: the kinds recorded (state changes left out),
		// the nudges sent, and whether the session was escalated.
		kinds     []string
		nudges    int
		escalated bool
		evidence  string
	}{
		{name: "answers after 3 s: sent", canNudge: true, answerAfter: 3 * time.Second,
			kinds: []string{TimelineNudgeAttempt, core.TimelineNudgeSent}, nudges: 1},
		{name: "never answers: failed twice, then escalated", canNudge: true, answerAfter: -1,
			kinds:  []string{TimelineNudgeAttempt, core.TimelineNudgeFailed, TimelineNudgeAttempt, core.TimelineNudgeFailed, core.TimelineEscalated},
			nudges: 2, escalated: true, evidence: "2 of 2 continuation nudges spent"},
		{name: "answers too late: failed", canNudge: true, answerAfter: 20 * time.Second,
			kinds: []string{TimelineNudgeAttempt, core.TimelineNudgeFailed}, nudges: 1},
		{name: "delivery error: failed", canNudge: true, answerAfter: -1, deliverErr: errors.New("connecting to the inbox socket: refused"),
			kinds:  []string{TimelineNudgeAttempt, core.TimelineNudgeFailed, TimelineNudgeAttempt, core.TimelineNudgeFailed, core.TimelineEscalated},
			nudges: 2, escalated: true},
		{name: "no inbox: escalated at once", canNudge: false,
			kinds: []string{core.TimelineEscalated}, escalated: true, evidence: "no way in for a nudge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := newMemStore(&journal{})
				st.setSettings(func(s *settings.Settings) { s.NudgeCooldown = time.Minute })
				rt := New(Options{Store: st, Connectivity: unknownConnectivity, Settings: st.currentSettings})
				src := &answeringSource{rt: rt, id: "obs", canNudge: tc.canNudge, answerAfter: tc.answerAfter, deliverErr: tc.deliverErr}
				e := rt.newEntry(sessions.Session{ID: "obs", Agent: "claude", Source: sessions.Observed, State: sessions.Interrupted,
					TurnGeneration: 1, ProcessAlive: true, Evidence: "the turn died on an API error"})
				e.ext = &extHandle{src: src, live: true}
				rt.mu.Lock()
				rt.sess["obs"] = e
				rt.mu.Unlock()
				set := st.currentSettings()
				// Three rounds, a cooldown apart: enough to spend a budget of 2.
				for range 3 {
					rt.Tick(context.Background(), set)
					rt.Settle()
					time.Sleep(time.Minute)
				}
				rt.Settle()
				var got []string
				for _, k := range st.kinds("obs") {
					if k != core.TimelineStateChanged {
						got = append(got, k)
					}
				}
				if !slices.Equal(got, tc.kinds) || src.count() != tc.nudges {
					t.Fatalf("timeline %q, %d nudges; want %q, %d", got, src.count(), tc.kinds, tc.nudges)
				}
				s, _ := rt.Session("obs")
				if s.NeedsAttention != tc.escalated || !strings.Contains(s.Evidence, tc.evidence) {
					t.Fatalf("needs attention %v: %s", s.NeedsAttention, s.Evidence)
				}
				for _, r := range st.rowsOf("obs", core.TimelineNudgeFailed) {
					if msg := rowField(r, "message"); !strings.HasPrefix(msg, "the continuation nudge did not arrive: ") {
						t.Errorf("failure row %q", msg)
					}
				}
				for _, r := range st.rowsOf("obs", TimelineNudgeAttempt) {
					want := "ok"
					if len(st.rowsOf("obs", core.TimelineNudgeFailed)) > 0 {
						want = "failed: "
					}
					if o := rowField(r, "outcome"); !strings.HasPrefix(o, want) {
						t.Errorf("intent outcome %q, want %q", o, want)
					}
				}
			})
		})
	}
}
