package supervisor

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// Transient incidents through the real loop (issue 15), in fake time: the
// agent's turns fail with a network error until the outage ends.

var netFailure = sessions.Failure{Kind: sessions.Network, Message: "API Error: Unable to connect to API (ECONNRESET)"}

// failNetworkAt steps the clock to d and fails p's turn with a network
// error: the start of every outage.
func (h *loopHarness) failNetworkAt(p *fakeProc, d time.Duration) {
	h.t.Helper()
	h.until(d)
	h.emit(p, sessions.Event{Kind: sessions.EvTurnFailed, Failure: netFailure})
}

// outage plays the agent through an outage: every prompt the supervisor
// sends starts a turn that fails with a network error 5 s later, until the
// fake time reaches up (never, if up is 0); a prompt sent from then on is
// answered and its turn completes. It steps the clock to `until` in 5 s
// steps off the tick grid (…:02, …:07), and returns when each prompt
// arrived, counted from the harness start.
func (h *loopHarness) outage(until, up time.Duration) []time.Duration {
	h.t.Helper()
	seen := len(callsOf(h.agent.calls(), "prompt"))
	type pending struct {
		p  *fakeProc
		at time.Duration
		ok bool
	}
	var todo []pending
	var prompts []time.Duration
	step := h.elapsed().Truncate(5*time.Second) + 2*time.Second
	for ; step <= until; step += 5 * time.Second {
		if step <= h.elapsed() {
			continue
		}
		h.until(step)
		for len(todo) > 0 && todo[0].at <= step {
			d := todo[0]
			todo = todo[1:]
			if d.ok {
				h.emit(d.p, sessions.Event{Kind: sessions.EvActivity}, sessions.Event{Kind: sessions.EvTurnCompleted})
			} else {
				h.emit(d.p, sessions.Event{Kind: sessions.EvTurnFailed, Failure: netFailure})
			}
		}
		calls := callsOf(h.agent.calls(), "prompt")
		for _, c := range calls[seen:] {
			at := c.At.Sub(h.start)
			prompts = append(prompts, at)
			todo = append(todo, pending{p: h.agent.proc(-1), at: at + 5*time.Second, ok: up != 0 && at >= up})
		}
		seen = len(calls)
	}
	return prompts
}

// restart quits the app gracefully (the loop stops, the agents' input is
// closed and they exit) and starts a new one on the same store, as a user
// restarting the app would: Boot, then the loop.
func (h *loopHarness) restart() {
	h.t.Helper()
	h.cancel()
	<-h.done
	h.cancel = nil
	done := make(chan error, 1)
	go func() { done <- h.rt.Shutdown(context.Background()) }()
	synctest.Wait()
	for i := 0; ; i++ {
		p := h.agent.proc(i)
		if p == nil {
			break
		}
		p.exit(0, "")
	}
	if err := <-done; err != nil {
		h.t.Fatalf("Shutdown: %v", err)
	}
	synctest.Wait()
	h.stopRecording()

	h.agent = &fakeAgent{j: h.j}
	h.rt = New(Options{Store: h.store, Agents: map[string]Agent{"claude": h.agent}, DefaultAgent: "claude", Connectivity: unknownConnectivity, Settings: h.store.currentSettings})
	h.record()
	if err := h.rt.Boot(context.Background()); err != nil {
		h.t.Fatalf("Boot: %v", err)
	}
	h.run()
}

func durations(ds ...time.Duration) []time.Duration { return ds }

// TestLoopTransientOutageWaitedOut: a 9-minute outage that outlasts the
// agent's own retries is retried on the schedule (30 s, 1, 2, 5 min after
// each failure is seen) and the session continues to a completed turn,
// never escalated. The timeline tells the story. A later failure is a new
// incident with a full budget.
func TestLoopTransientOutageWaitedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil) // 15 s tick, 90 min window
		defer h.stop()
		id, p := h.launchRunning()

		h.failNetworkAt(p, 1*time.Minute+7*time.Second)
		h.wantState(id, sessions.Errored, sessions.NoWait)
		// The 1:15 tick holds it, with the countdown in the evidence.
		h.until(1*time.Minute + 16*time.Second)
		rec := h.wantState(id, sessions.Recovering, sessions.NoWait)
		if want := "network or server error; retrying at " + core.ClockPhrase(h.at(105*time.Second), h.at(75*time.Second)) +
			" (retry 1, 90 min of the 90 min window left)"; rec.Evidence != want {
			t.Fatalf("evidence %q, want %q", rec.Evidence, want)
		}
		if !rec.Supervision.IncidentStarted.Equal(h.at(75*time.Second)) || rec.NeedsAttention {
			t.Fatalf("supervision %+v, needs_attention %v", rec.Supervision, rec.NeedsAttention)
		}

		// Failures seen at the 2:00, 3:15 and 5:30 ticks; the outage ends at 10 min.
		got := h.outage(12*time.Minute, 10*time.Minute)
		want := durations(105*time.Second, 3*time.Minute, 5*time.Minute+15*time.Second, 10*time.Minute+30*time.Second)
		if !slices.Equal(got, want) {
			t.Fatalf("retries at %v, want %v", got, want)
		}
		for _, c := range callsOf(p.received(), "prompt")[1:] {
			if c.Text != core.NudgeText {
				t.Errorf("a retry sent %q, want the constant nudge text", c.Text)
			}
		}
		done := h.wantState(id, sessions.WaitingOnUser, sessions.WaitReview)
		if done.NeedsAttention || done.Supervision != (sessions.Supervision{}) || done.TurnGeneration != 5 {
			t.Fatalf("after the outage: turn %d, needs_attention %v, supervision %+v", done.TurnGeneration, done.NeedsAttention, done.Supervision)
		}
		h.wantEscalations(0)
		rows := h.store.rowsOf(id, core.TimelineTransientRetry)
		var msgs []string
		for _, r := range rows {
			msgs = append(msgs, rowField(r, "message"))
		}
		// 4 schedules, 4 retries, 1 account.
		if len(rows) != 9 || rowField(rows[1], "action") != "continue" || !strings.HasPrefix(msgs[0], "scheduled: ") {
			t.Fatalf("transient_retry rows:\n%s", strings.Join(msgs, "\n"))
		}
		if want := "recovered: API unreachable or failing for 9 min; retried 4 times; continued at " +
			core.ClockPhrase(h.at(630*time.Second), h.at(12*time.Minute)); msgs[8] != want {
			t.Errorf("the account %q, want %q", msgs[8], want)
		}
		h.wantOutcomes(id)

		// One incident, one budget: a failure half an hour later starts
		// afresh, 30 s after the tick that sees it.
		h.until(40*time.Minute + 2*time.Second)
		if _, err := h.rt.Send(context.Background(), id, "next step"); err != nil {
			t.Fatal(err)
		}
		h.failNetworkAt(p, 40*time.Minute+7*time.Second)
		got = h.outage(42*time.Minute, 0)
		if want := durations(40*time.Minute + 45*time.Second); !slices.Equal(got, want) {
			t.Fatalf("the next incident's first retry at %v, want %v", got, want)
		}
		if sv := h.session(id).Supervision; !sv.IncidentStarted.Equal(h.at(40*time.Minute+15*time.Second)) || sv.RecoveryAttempts != 1 {
			t.Fatalf("the next incident: %+v", sv)
		}
	})
}

// TestLoopTransientWindowSpentEscalatesOnce: an outage that outlasts a
// 3-minute window (every wait capped at 30 s) is retried until the window
// is spent, then escalated exactly once, with the evidence, and nothing is
// sent after.
func TestLoopTransientWindowSpentEscalatesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, func(s *settings.Settings) { s.TransientWindow = 3 * time.Minute })
		defer h.stop()
		id, p := h.launchRunning()
		h.failNetworkAt(p, 7*time.Second)

		// Incident at the 0:15 tick; each failure is seen 15 s after its
		// retry and rescheduled 30 s later; the failure seen at 3:15 finds
		// the window spent.
		got := h.outage(2*time.Hour, 0)
		want := durations(45*time.Second, 90*time.Second, 135*time.Second, 180*time.Second)
		if !slices.Equal(got, want) {
			t.Fatalf("retries at %v, want %v", got, want)
		}
		h.wantEscalations(1)
		s := h.wantState(id, sessions.Errored, sessions.NoWait)
		if !s.NeedsAttention || s.Failure != netFailure {
			t.Fatalf("escalated session: needs_attention %v, failure %+v", s.NeedsAttention, s.Failure)
		}
		rows := h.store.rowsOf(id, core.TimelineEscalated)
		if len(rows) != 1 || !rows[0].Time.Equal(h.at(195*time.Second)) {
			t.Fatalf("escalated rows %v", rows)
		}
		msg := rowField(rows[0], "message")
		for _, part := range []string{"Unable to connect to API (ECONNRESET)", "API unreachable or failing for 3 min; retried 4 times",
			"the 3 min window for transient failures is spent"} {
			if !strings.Contains(msg, part) {
				t.Errorf("escalation %q lacks %q", msg, part)
			}
		}
		h.wantOutcomes(id)
	})
}

// TestLoopTransientSurvivesRestart: the app restarts in the middle of an
// incident. The hold, its retry count and its window come back from the
// store: the next retry is the one that was due (resuming the agent's
// session on a new process), and the window still ends 20 min after the
// incident began, not 20 min after the restart.
func TestLoopTransientSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, func(s *settings.Settings) { s.TransientWindow = 20 * time.Minute })
		defer h.stop()
		id, p := h.launchRunning()
		h.failNetworkAt(p, 7*time.Second)
		got := h.outage(3*time.Minute+2*time.Second, 0)
		if want := durations(45*time.Second, 2*time.Minute); !slices.Equal(got, want) {
			t.Fatalf("retries before the restart at %v, want %v", got, want)
		}
		before := h.wantState(id, sessions.Recovering, sessions.NoWait)
		if before.Supervision.RecoveryAttempts != 2 || !before.Supervision.NextAttemptAt.Equal(h.at(4*time.Minute+15*time.Second)) {
			t.Fatalf("before the restart: %+v", before.Supervision)
		}

		h.until(3*time.Minute + 4*time.Second)
		h.restart() // at 3:04: the new loop ticks at 3:19, 3:34, …
		after := h.wantState(id, sessions.Recovering, sessions.NoWait)
		if after.Supervision != before.Supervision {
			t.Fatalf("the restart changed the incident:\n got %+v\nwant %+v", after.Supervision, before.Supervision)
		}

		got = h.outage(30*time.Minute, 0)
		// 4:19 is the first tick at or after the 4:15 that was due; then
		// waits of 3 min 20 s (a sixth of the window) after each failure is
		// seen; the last retry is due at the window's end, 20:15.
		want := durations(4*time.Minute+19*time.Second, 8*time.Minute+4*time.Second, 11*time.Minute+49*time.Second,
			15*time.Minute+34*time.Second, 19*time.Minute+19*time.Second, 20*time.Minute+19*time.Second)
		if !slices.Equal(got, want) {
			t.Fatalf("retries after the restart at %v, want %v", got, want)
		}
		starts := h.agent.startOptions()
		if len(starts) != 1 || starts[0].ResumeID != agentSessionID {
			t.Fatalf("starts after the restart %+v, want one resume of %s", starts, agentSessionID)
		}
		rows := h.store.rowsOf(id, core.TimelineEscalated)
		if len(rows) != 1 || !rows[0].Time.Equal(h.at(20*time.Minute+34*time.Second)) {
			t.Fatalf("escalated %v, want once at 20:34", rows)
		}
		if !strings.Contains(rowField(rows[0], "message"), "API unreachable or failing for 20 min; retried 8 times") {
			t.Errorf("escalation: %s", rowField(rows[0], "message"))
		}
		h.wantEscalations(1)
	})
}

// TestLoopOfflineHoldsTheIncident: the tick asks the machine's
// connectivity once; while it says offline a network failure is held with
// no retry sent and no countdown, and the first tick back online retries.
func TestLoopOfflineHoldsTheIncident(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newLoopHarness(t, nil)
		defer h.stop()
		var mu sync.Mutex
		conn := ConnOffline
		h.rt.connectivity = func() Connectivity { mu.Lock(); defer mu.Unlock(); return conn }
		s, p := h.launch()
		h.run()
		h.failNetworkAt(p, 7*time.Second)
		h.until(30*time.Minute + 7*time.Second)
		if n := len(callsOf(h.agent.calls(), "prompt")); n != 1 {
			t.Fatalf("%d prompts while offline, want only the first one", n)
		}
		got := h.wantState(s.ID, sessions.Recovering, sessions.NoWait)
		if !strings.Contains(got.Evidence, "offline") {
			t.Errorf("evidence while offline %q does not say so", got.Evidence)
		}
		mu.Lock()
		conn = ConnOnline
		mu.Unlock()
		h.until(30*time.Minute + 16*time.Second) // the next tick
		if n := len(callsOf(h.agent.calls(), "prompt")); n != 2 {
			t.Fatalf("%d prompts after the network came back, want the retry", n)
		}
	})
}

func TestAPIIsLocal(t *testing.T) {
	for base, want := range map[string]bool{
		"": false, "https://api.anthropic.com": false, "http://127.0.0.1:8080": true,
		"http://localhost:1234/v1": true, "http://10.0.0.2": true, "http://[::1]:9": true, "::bad::": false,
	} {
		if got := apiIsLocal(base); got != want {
			t.Errorf("apiIsLocal(%q) = %v, want %v", base, got, want)
		}
	}
}
