package escalation

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func escalated(id string, gen int64) sessions.Session {
	return sessions.Session{ID: id, Name: id, Agent: "claude", State: sessions.Interrupted, NeedsAttention: true, TurnGeneration: gen,
		Evidence: "process exited with code 3 during turn 1 — the nudge budget is spent; needs your attention"}
}

func waiting(id string, why sessions.WaitReason) sessions.Session {
	return sessions.Session{ID: id, Name: id, Agent: "codex", State: sessions.WaitingOnUser, WaitReason: why, TurnGeneration: 1}
}

func summary(ps []Push) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Channel+":"+p.Shape.String()+":"+strings.Join(p.Keys(), ","))
	}
	return out
}

// step is one moment of a scenario: sessions observed, then what Due
// returns, then the outcome reported for every push returned.
type step struct {
	at      time.Duration // after t0
	observe []sessions.Session
	desktop bool
	want    []string
	outcome map[string]Outcome // per channel; Delivered when absent
}

func TestPlanner(t *testing.T) {
	minutes := func(n float64) time.Duration { return time.Duration(n * float64(time.Minute)) }
	quiet, err := settings.ParseQuietHours("22:00-07:00")
	if err != nil {
		t.Fatal(err)
	}
	acked := escalated("a", 1)
	acked.NeedsAttention = false
	next := escalated("a", 2)
	for _, tc := range []struct {
		name     string
		policy   Policy
		channels []string
		steps    []step
	}{
		{"pushed once after the delay while a desktop is there", Policy{PushAfter: 5 * time.Minute}, []string{"ntfy"}, []step{
			{at: 0, observe: []sessions.Session{escalated("a", 1)}, desktop: true},
			{at: minutes(4.9), desktop: true},
			{at: minutes(5), desktop: true, want: []string{"ntfy:single:escalated/a/1"}},
			{at: minutes(6), desktop: true},
			{at: minutes(60), observe: []sessions.Session{escalated("a", 1)}, desktop: true},
		}},
		{"at once when no desktop is there", Policy{PushAfter: 5 * time.Minute}, []string{"ntfy"}, []step{
			{at: 0, observe: []sessions.Session{escalated("a", 1)}, want: []string{"ntfy:single:escalated/a/1"}},
		}},
		{"a delay of 0 pushes at once", Policy{}, []string{"ntfy", "webhook"}, []step{
			{at: 0, observe: []sessions.Session{escalated("a", 1)}, desktop: true, want: []string{"ntfy:single:escalated/a/1", "webhook:single:escalated/a/1"}},
		}},
		{"acknowledged before the delay: never pushed", Policy{PushAfter: 5 * time.Minute}, []string{"ntfy"}, []step{
			{at: 0, observe: []sessions.Session{escalated("a", 1)}, desktop: true},
			{at: minutes(2), observe: []sessions.Session{acked}, desktop: true},
			{at: minutes(10), desktop: true},
		}},
		{"the next incident of the same session is pushed again", Policy{}, []string{"ntfy"}, []step{
			{at: 0, observe: []sessions.Session{escalated("a", 1)}, want: []string{"ntfy:single:escalated/a/1"}},
			{at: minutes(1), observe: []sessions.Session{acked}},
			{at: minutes(2), observe: []sessions.Session{next}, want: []string{"ntfy:single:escalated/a/2"}},
		}},
		{"a burst is one message", Policy{PushAfter: 5 * time.Minute, Gather: time.Minute}, []string{"ntfy"}, []step{
			{at: 0, observe: []sessions.Session{escalated("a", 1), escalated("b", 1)}, desktop: true},
			{at: minutes(0.5), observe: []sessions.Session{escalated("c", 1)}, desktop: true},
			{at: minutes(5), desktop: true, want: []string{"ntfy:burst:escalated/a/1,escalated/b/1,escalated/c/1"}},
			{at: minutes(6), desktop: true},
		}},
		{"a failing channel retries with backoff and does not hold the other", Policy{}, []string{"ntfy", "webhook"}, []step{
			{at: 0, observe: []sessions.Session{escalated("a", 1)}, want: []string{"ntfy:single:escalated/a/1", "webhook:single:escalated/a/1"},
				outcome: map[string]Outcome{"ntfy": Failed}},
			{at: minutes(0.4)},
			{at: minutes(0.5), want: []string{"ntfy:single:escalated/a/1"}, outcome: map[string]Outcome{"ntfy": Failed}},
			{at: minutes(1.4)},
			{at: minutes(1.5), want: []string{"ntfy:single:escalated/a/1"}},
			{at: minutes(30)},
		}},
		{"retries stop after the window", Policy{RetryFor: 2 * time.Minute}, []string{"ntfy"}, []step{
			{at: 0, observe: []sessions.Session{escalated("a", 1)}, want: []string{"ntfy:single:escalated/a/1"}, outcome: map[string]Outcome{"ntfy": Failed}},
			{at: minutes(0.5), want: []string{"ntfy:single:escalated/a/1"}, outcome: map[string]Outcome{"ntfy": Failed}},
			{at: minutes(1.5), want: []string{"ntfy:single:escalated/a/1"}, outcome: map[string]Outcome{"ntfy": Failed}},
			{at: minutes(10)},
		}},
		{"refused is given up at once", Policy{}, []string{"ntfy"}, []step{
			{at: 0, observe: []sessions.Session{escalated("a", 1)}, want: []string{"ntfy:single:escalated/a/1"}, outcome: map[string]Outcome{"ntfy": Refused}},
			{at: minutes(5)},
		}},
		{"waiting is pushed only when asked", Policy{}, []string{"ntfy"}, []step{
			{at: 0, observe: []sessions.Session{waiting("w", sessions.WaitQuestion)}},
			{at: minutes(1)},
		}},
		{"waiting pushed when asked", Policy{PushWaiting: true}, []string{"ntfy"}, []step{
			{at: 0, observe: []sessions.Session{waiting("w", sessions.WaitReview)}, want: []string{"ntfy:single:wait/w/1/review"}},
		}},
		{"quiet hours hold, then one summary", Policy{Quiet: quiet}, []string{"ntfy"}, []step{
			{at: 11 * time.Hour, observe: []sessions.Session{escalated("a", 1)}},                                 // 23:00
			{at: 12 * time.Hour, observe: []sessions.Session{escalated("b", 1), escalated("c", 1)}},              // 00:00
			{at: 18*time.Hour + minutes(59)},                                                                     // 06:59
			{at: 19 * time.Hour, want: []string{"ntfy:quiet_summary:escalated/a/1,escalated/b/1,escalated/c/1"}}, // 07:00
			{at: 20 * time.Hour},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPlanner(tc.policy, tc.channels...)
			for _, st := range tc.steps {
				now := t0.Add(st.at)
				for _, s := range st.observe {
					p.Observe(s, now)
				}
				got := p.Due(now, st.desktop)
				if !slices.Equal(summary(got), st.want) {
					t.Fatalf("at +%s: Due = %q, want %q", st.at, summary(got), st.want)
				}
				for _, push := range got {
					o, ok := st.outcome[push.Channel]
					if !ok {
						o = Delivered
					}
					p.Done(push, o, now)
				}
			}
		})
	}
}

// Next names the moment Due has something new: the delay's end, a
// retry's time, the end of quiet hours; zero when nothing is pending.
func TestPlannerNext(t *testing.T) {
	quiet, _ := settings.ParseQuietHours("22:00-07:00")
	p := NewPlanner(Policy{PushAfter: 5 * time.Minute, Quiet: quiet}, "ntfy")
	if n := p.Next(t0, true); !n.IsZero() {
		t.Fatalf("nothing open: Next = %v", n)
	}
	p.Observe(escalated("a", 1), t0)
	if n := p.Next(t0, true); !n.Equal(t0.Add(5 * time.Minute)) {
		t.Fatalf("Next = %v, want the delay's end", n)
	}
	if n := p.Next(t0, false); !n.Equal(t0) {
		t.Fatalf("no desktop: Next = %v, want now", n)
	}
	pushes := p.Due(t0.Add(5*time.Minute), true)
	if gaveUp := p.Done(pushes[0], Failed, t0.Add(5*time.Minute)); gaveUp {
		t.Fatal("gave up on the first failure")
	}
	if n := p.Next(t0.Add(5*time.Minute), true); !n.Equal(t0.Add(5*time.Minute + Backoff(1))) {
		t.Fatalf("Next = %v, want the retry", n)
	}
	night := time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC)
	q := NewPlanner(Policy{Quiet: quiet}, "ntfy")
	q.Observe(escalated("b", 1), night)
	if got := q.Due(night, false); len(got) != 0 {
		t.Fatalf("pushed in quiet hours: %q", summary(got))
	}
	if n := q.Next(night, false); !n.Equal(time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)) {
		t.Fatalf("Next in quiet hours = %v, want their end", n)
	}
}

func TestSyncClosesAbsentSessions(t *testing.T) {
	p := NewPlanner(Policy{PushAfter: time.Minute}, "ntfy")
	p.Sync([]sessions.Session{escalated("a", 1), escalated("b", 1)}, t0)
	p.Sync([]sessions.Session{escalated("b", 1)}, t0.Add(time.Second))
	if got := summary(p.Due(t0.Add(time.Minute), true)); !slices.Equal(got, []string{"ntfy:single:escalated/b/1"}) {
		t.Fatalf("Due = %q, want b alone (a was forgotten)", got)
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 8 * time.Minute}
	for i, w := range want {
		if got := Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
}
