//go:build linux

package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude/claudeterm"
	"github.com/session-supervisor/session-supervisor/sessions/claude/fakeapi"
	"github.com/session-supervisor/session-supervisor/supervisor"
	"github.com/session-supervisor/session-supervisor/supervisor/core"
)

// The recovery of a terminal session, end to end: the real interactive CLI
// (2.1.328) in a pseudo-terminal against the fake API, the app headless
// beside it, and nothing typed into the terminal after the first prompt.
// Every nudge goes through the CLI's inbox socket and is the supervisor's
// own, decided by Reconcile on its tick.

// ptyTick is the app's tick in these tests: the fastest the settings allow.
const ptyTick = 5 * time.Second

// timeline is the session's timeline, oldest first (`timeline ID --json`
// lists the newest first).
func (w *ptyWorld) timeline(id string) []ce2eRow {
	w.t.Helper()
	var rows []ce2eRow
	if err := json.Unmarshal([]byte(w.h.mustCLI("timeline", id, "--json")), &rows); err != nil {
		w.t.Fatal(err)
	}
	slices.Reverse(rows)
	return rows
}

// recovered reads the session's timeline and returns the first rows of
// kinds found one after the other, in that order. It fails the test when
// one is missing, or when any nudge failed or the session was escalated:
// a recovery that took needs neither.
func (w *ptyWorld) recovered(id string, kinds ...string) []ce2eRow {
	w.t.Helper()
	rows := w.timeline(id)
	var found []ce2eRow
	i := 0
	for _, kind := range kinds {
		for i < len(rows) && rows[i].Kind != kind {
			i++
		}
		if i == len(rows) {
			w.fail("the timeline lacks %v in that order (found %d):\n%s", kinds, len(found), dumpTimeline(rows))
		}
		found = append(found, rows[i])
		i++
	}
	for _, r := range rows {
		if r.Kind == core.TimelineNudgeFailed || r.Kind == core.TimelineEscalated {
			w.fail("%s:\n%s", r.Kind, dumpTimeline(rows))
		}
	}
	return found
}

func dumpTimeline(rows []ce2eRow) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(r.Time.Format("15:04:05.000") + " " + r.label() + ": " + r.message() + "\n")
	}
	return b.String()
}

// nudgedRequest is the first successful messages request after since whose
// last user message carries the supervisor's nudge (the CLI wraps an inbox
// message as "Another Claude session sent a message: …").
func (w *ptyWorld) nudgedRequest(since time.Time) (fakeapi.Entry, bool) {
	for _, e := range w.api.Log() {
		if e.Request != nil && e.Status == 200 && !e.At.Before(since) && strings.Contains(e.Request.LastUserText(), core.NudgeText) {
			return e, true
		}
	}
	return fakeapi.Entry{}, false
}

// A rate limit that outlasts the CLI's own handling: the session is Errored
// (rate limit), held in Recovering until the limit resets, and then the
// supervisor continues it through the inbox socket; that turn completes and
// the timeline records the continue and the verified nudge_sent.
//
//   - A plan's usage limit (a subscription login, the unified rate-limit
//     headers with status rejected): 2.1.328 does not retry, writes the
//     error with the exact reset (apiErrorParams.rate_limit_info.resetsAt)
//     and announces its own automatic continue 30–90 s after the reset. The
//     supervisor holds past that window (claudeterm.AutoContinueWindow) so
//     the session gets one prompt, not two: the CLI's own continue runs
//     the turn, and the supervisor sends nothing.
//   - An API key's per-minute 429 (retry-after 1 s) past the CLI's retries
//     (CLAUDE_CODE_MAX_RETRIES=2 in the hermetic environment: three
//     attempts, about 2.5 s): the CLI writes no reset, so the supervisor
//     backs off its base delay (one minute) before continuing.
func TestTerminalRealCLIRateLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		scenario string
		cliEnv   []string
		// statuses are what the fake API answers the CLI, in order.
		statuses []int
		// reset is when the supervisor may continue, from the first request.
		reset func(first time.Time) time.Time
		// exact: the reset is the API's and shown as the failure's retry time.
		exact bool
		// cliContinues: the CLI continues by itself after the reset, and
		// the supervisor's continue waits past its window.
		cliContinues bool
	}{
		{
			name:     "a plan's usage limit, continued by the CLI itself after its reset",
			scenario: "429unified",
			// The CLI reads the unified rate-limit headers only for a
			// subscription login.
			cliEnv:   []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-fake"},
			statuses: []int{429, 200},
			reset: func(first time.Time) time.Time {
				return time.Unix(first.Add(fakeapi.UnifiedRateLimitWindow).Unix(), 0)
			},
			exact:        true,
			cliContinues: true,
		},
		{
			name:     "an API key's 429 past the CLI's retries, continued after the backoff",
			scenario: "429x3then_ok",
			statuses: []int{429, 429, 429, 200},
			reset: func(first time.Time) time.Time {
				return first.Add(core.BasePolicy().RateLimitBaseBackoff)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := startPTYWorldWith(t, ptyOptions{settings: []string{"supervisor.tick_seconds", "5"}, cliEnv: tc.cliEnv})
			w.observed(time.Second, "listed", func(sessions.Session) bool { return true })
			time.Sleep(time.Second) // the prompt box is drawn
			typed := time.Now()
			w.typeLine("say hello [[scenario:" + tc.scenario + "]]")

			errored := w.observed(60*time.Second, "errored on the rate limit", func(s sessions.Session) bool {
				return s.Failure.Kind == sessions.RateLimit && (s.State == sessions.Errored || s.State == sessions.Recovering)
			})
			t.Logf("%s after the prompt: %s (%s)", time.Since(typed).Round(time.Millisecond), errored.State, errored.Evidence)
			held := w.observed(2*ptyTick+5*time.Second, "held in Recovering until the reset", func(s sessions.Session) bool {
				return s.State == sessions.Recovering && !s.InTurn && s.Supervision.Recovery == core.RecoveryRateLimit
			})
			log := w.api.Log()
			if len(log) == 0 {
				w.fail("no request reached the fake API")
			}
			reset := tc.reset(log[0].At)
			if tc.cliContinues {
				reset = reset.Add(claudeterm.AutoContinueWindow)
			}
			if tc.exact {
				if !held.Failure.RetryAt.Equal(reset) || !held.Supervision.NextAttemptAt.Equal(reset) {
					w.fail("held with retry at %v, next attempt %v; want the API's reset %v", held.Failure.RetryAt, held.Supervision.NextAttemptAt, reset)
				}
				// The transcript's error record names the plan window: the
				// session shows it spent until the API's reset.
				at := tc.reset(log[0].At)
				if i := slices.IndexFunc(held.RateWindows, func(rw sessions.RateWindow) bool { return rw.Kind == "five_hour" }); i < 0 ||
					!held.RateWindows[i].Rejected() || !held.RateWindows[i].ResetsAt.Equal(at) {
					w.fail("plan windows %+v, want five_hour spent until %v", held.RateWindows, at)
				}
			} else if d := held.Supervision.NextAttemptAt.Sub(reset); d < 0 || d > 2*ptyTick+5*time.Second {
				w.fail("held until %v, want the backoff after the error, about %v", held.Supervision.NextAttemptAt, reset)
			}
			t.Logf("held: %s", held.Evidence)

			s := w.observed(time.Until(held.Supervision.NextAttemptAt)+90*time.Second, "in review after the continued turn", ce2eReview(2))
			if !s.Failure.IsZero() || s.NeedsAttention {
				t.Errorf("failure %+v, needs attention %v after the continued turn", s.Failure, s.NeedsAttention)
			}

			if tc.cliContinues {
				// The CLI's own continue ran the turn before the
				// supervisor's was due: nothing was sent.
				for _, r := range w.timeline(s.ID) {
					if r.Kind == core.TimelineNudgeSent || r.Kind == supervisor.TimelineNudgeAttempt || r.Kind == core.TimelineNudgeFailed {
						w.fail("the supervisor sent a nudge though the CLI continued by itself:\n%s", dumpTimeline(w.timeline(s.ID)))
					}
				}
				var got []int
				for _, e := range w.api.Log() {
					if e.Request != nil {
						got = append(got, e.Status)
						if e.Status == 200 && strings.Contains(e.Request.LastUserText(), core.NudgeText) {
							w.fail("the model got the supervisor's nudge though the CLI continued by itself")
						}
					}
				}
				if !slices.Equal(got, tc.statuses) {
					w.fail("the fake API answered %v, want %v", got, tc.statuses)
				}
				t.Logf("the CLI continued by itself; the supervisor would have at %v", held.Supervision.NextAttemptAt.Format("15:04:05"))
				return
			}

			// The timeline: the hold, the continue at the reset (within a
			// tick), its nudge verified as arrived, nothing failed.
			rows := w.recovered(s.ID, core.TimelineRateLimitDrain, core.TimelineRateLimitDrain, core.TimelineNudgeSent)
			cont, sent := rows[1], rows[2]
			if late := cont.Time.Sub(held.Supervision.NextAttemptAt); late < 0 || late > ptyTick+2*time.Second {
				w.fail("continued %s after the hold's end %v, want at it (within a tick)", late, held.Supervision.NextAttemptAt)
			}
			if !strings.Contains(sent.message(), "arrived") || sent.detail()["urgent"] != false {
				w.fail("nudge_sent says %q (urgent %v), want an ordinary nudge that arrived", sent.message(), sent.detail()["urgent"])
			}
			t.Logf("continued %s after the reset; nudge verified %s later (%s)", cont.Time.Sub(reset).Round(time.Millisecond),
				sent.Time.Sub(cont.Time).Round(time.Millisecond), sent.message())

			// The fake API: the CLI gave up as expected, and the request
			// that answered carried the nudge as its last user message.
			var got []int
			for _, e := range w.api.Log() {
				if e.Request != nil {
					got = append(got, e.Status)
				}
			}
			if len(got) < len(tc.statuses) || !slices.Equal(got[:len(tc.statuses)], tc.statuses) {
				w.fail("the fake API answered %v, want %v first", got, tc.statuses)
			}
			if _, ok := w.nudgedRequest(cont.Time); !ok {
				w.fail("no answered request after the continue carried the nudge as its last user message")
			}
		})
	}
}

// A stream that stalls (the fake API sends message_start and then nothing):
// the session turns Suspect after supervisor.stall_suspect_minutes of
// silence, and past supervisor.stall_hard_minutes the supervisor sends the
// hard-stall interrupt, the nudge with priority "now", through the inbox
// socket. The CLI aborts the stalled request and runs the nudge at once
// (the fake answers the nudge), and the turn completes; the timeline has
// stall_interrupt and the verified, urgent nudge_sent.
func TestTerminalRealCLIStall(t *testing.T) {
	t.Parallel()
	const suspect, hard = 6 * time.Second, 15 * time.Second
	w := startPTYWorldWith(t, ptyOptions{settings: []string{
		"supervisor.tick_seconds", "5",
		"supervisor.stall_suspect_minutes", "0.1", // 6 s
		"supervisor.stall_hard_minutes", "0.25", // 15 s
	}})
	w.observed(time.Second, "listed", func(sessions.Session) bool { return true })
	time.Sleep(time.Second) // the prompt box is drawn
	w.typeLine("wait for it [[scenario:stall]]")
	working := w.observed(60*time.Second, "working", func(s sessions.Session) bool { return s.State == sessions.Working && s.InTurn })
	if err := w.api.Wait(t.Context(), func(log []fakeapi.Entry) bool { return len(log) > 0 }); err != nil {
		t.Fatal(err)
	}
	stalledAt := time.Now()
	s := w.observed(suspect+2*ptyTick, "suspect", func(s sessions.Session) bool { return s.State == sessions.Suspect })
	t.Logf("suspect %s after the stalled request: %s", time.Since(stalledAt).Round(time.Millisecond), s.Evidence)

	s = w.observed(hard+2*ptyTick+60*time.Second, "in review after the interrupted turn", func(s sessions.Session) bool {
		return s.State == sessions.WaitingOnUser && s.WaitReason == sessions.WaitReview && s.TurnGeneration > working.TurnGeneration
	})
	t.Logf("in review %s after the stalled request (turn %d): %s", time.Since(stalledAt).Round(time.Millisecond), s.TurnGeneration, s.Evidence)
	if s.NeedsAttention {
		t.Errorf("escalated: %+v", s)
	}

	rows := w.recovered(s.ID, core.TimelineMarkedSuspect, core.TimelineStallInterrupt, core.TimelineNudgeSent)
	intr, sent := rows[1], rows[2]
	if sent.detail()["urgent"] != true || !strings.Contains(sent.message(), "priority now") {
		w.fail("nudge_sent says %q (urgent %v), want the urgent nudge", sent.message(), sent.detail()["urgent"])
	}
	t.Logf("interrupt %s: %s; nudge verified %s later: %s", intr.Time.Sub(stalledAt).Round(time.Millisecond), intr.message(),
		sent.Time.Sub(intr.Time).Round(time.Millisecond), sent.message())

	e, ok := w.nudgedRequest(intr.Time)
	if !ok {
		w.fail("no answered request after the interrupt carried the nudge as its last user message")
	}
	t.Logf("the nudged request reached the fake API %s after the interrupt", e.At.Sub(intr.Time).Round(time.Millisecond))
}
