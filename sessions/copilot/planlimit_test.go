package copilot

import (
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Copilot's own rate limits as the real 1.0.102 wrote them (to stdout and
// events.jsonl alike) when its API answered 429 user_weekly_rate_limited
// (weekly) and user_global_rate_limited (the session limit) with
// retry-after 3540 and 7200: the failure's reset counts from the event's
// time, the account's window is spent; a BYOK provider's 429 (real,
// testdata/429.jsonl) and an event without a time say no reset.
func TestDecodePlanLimit(t *testing.T) {
	at := time.Date(2026, 12, 3, 7, 3, 36, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		line   string
		reset  time.Time
		window string
	}{
		{"weekly, 59 minutes",
			`{"type":"session.error","data":{"errorType":"rate_limit","message":"You've reached your weekly rate limit. Please wait for your limit to reset in 59 minutes. Learn More (https://docs.github.com/copilot/concepts/rate-limits).","statusCode":429,"errorCode":"user_weekly_rate_limited","eligibleForAutoSwitch":false,"originatingMessageId":"3107f77c-bc70-4074-9acc-f83904e1d040"},"id":"afb76bcb-4a60-442e-929b-d12359b82426","timestamp":"2026-12-03T07:03:36.896Z","parentId":"407b6c6c-b683-4df7-a4ac-f75c215d9f93"}`,
			at.Add(59 * time.Minute), "weekly"},
		{"weekly, 2 hours",
			`{"type":"session.error","data":{"errorType":"rate_limit","message":"You've reached your weekly rate limit. Please wait for your limit to reset in 2 hours. Learn More (https://docs.github.com/copilot/concepts/rate-limits).","statusCode":429,"errorCode":"user_weekly_rate_limited","eligibleForAutoSwitch":false},"timestamp":"2026-12-03T07:03:36.000Z"}`,
			at.Add(2 * time.Hour), "weekly"},
		{"session, 59 minutes",
			`{"type":"session.error","data":{"errorType":"rate_limit","message":"You've hit your session rate limit. Please wait for your limit to reset in 59 minutes. Learn More (https://docs.github.com/copilot/concepts/rate-limits).","statusCode":429,"errorCode":"user_global_rate_limited","eligibleForAutoSwitch":false},"timestamp":"2026-12-03T07:03:36Z"}`,
			at.Add(59 * time.Minute), "session"},
		{"a model's limit (worded as the binary's strings): a reset, no window",
			`{"type":"session.error","data":{"errorType":"rate_limit","message":"You've hit the rate limit for this model. Please wait for your limit to reset in 1 hour.","statusCode":429,"errorCode":"user_model_rate_limited"},"timestamp":"2026-12-03T07:03:36Z"}`,
			at.Add(time.Hour), ""},
		{"a BYOK provider's 429",
			`{"type":"session.error","data":{"errorType":"rate_limit","message":"Failed to get response from the AI model; retried 5 times (total retry wait time: 39.72 seconds) Last error: 429 rate_limited","statusCode":429,"originatingMessageId":"f2a2e3cd-8083-4df2-be23-dbdb02f6eb94"},"id":"9029a0e8-013b-407c-9947-ec1bf4c0b1cf","timestamp":"2026-11-30T22:11:03.403Z"}`,
			time.Time{}, ""},
		{"no time to count from",
			`{"type":"session.error","data":{"errorType":"rate_limit","message":"Please wait for your limit to reset in 2 hours.","statusCode":429,"errorCode":"user_weekly_rate_limited"}}`,
			time.Time{}, ""},
		{"an absurd count",
			`{"type":"session.error","data":{"errorType":"rate_limit","message":"Please wait for your limit to reset in 99999999 days.","errorCode":"user_weekly_rate_limited"},"timestamp":"2026-12-03T07:03:36Z"}`,
			time.Time{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, _, err := DecodeLine([]byte(tc.line))
			if err != nil || len(evs) != 1 || evs[0].Kind != sessions.EvTurnFailed || evs[0].Failure.Kind != sessions.RateLimit {
				t.Fatalf("%+v %v", evs, err)
			}
			e := evs[0]
			if !e.Failure.RetryAt.Equal(tc.reset) {
				t.Errorf("reset %v, want %v", e.Failure.RetryAt, tc.reset)
			}
			if w := e.RateWindow; (tc.window != "") != (w != nil) || w != nil && (w.Kind != tc.window || !w.Rejected() || !w.ResetsAt.Equal(tc.reset) || w.Used >= 0) {
				t.Errorf("window %+v, want %q spent until %v", w, tc.window, tc.reset)
			}
		})
	}
}
