package copilotterm

import (
	"testing"
	"time"
)

// The weekly rate limit a terminal session's events.jsonl records (the
// line the real 1.0.102 wrote there against a fake of its own API, its
// time aside) is the failure's reset and the spent weekly window, as for a
// managed session; a later failure of the same kind replaces it.
func TestFeedWeeklyLimit(t *testing.T) {
	line := func(in, ts string) []byte {
		return []byte(`{"type":"session.error","data":{"errorType":"rate_limit","message":"You've reached your weekly rate limit. Please wait for your limit to reset in ` + in +
			`. Learn More (https://docs.github.com/copilot/concepts/rate-limits).","statusCode":429,"errorCode":"user_weekly_rate_limited","eligibleForAutoSwitch":false},"id":"afb76bcb-4a60-442e-929b-d12359b82426","timestamp":"` + ts + `"}`)
	}
	var s Summary
	s.Feed(line("2 hours", "2026-12-03T07:04:08.120Z"))
	want := time.Date(2026, 12, 3, 9, 4, 8, 0, time.UTC)
	if s.Failure == nil || !s.Failure.RetryAt.Equal(want) || len(s.Windows) != 1 || !s.Windows[0].ResetsAt.Equal(want) || !s.Windows[0].Rejected() {
		t.Fatalf("failure %+v windows %+v, want both until %v", s.Failure, s.Windows, want)
	}
	s.Feed(line("59 minutes", "2026-12-03T10:00:00Z"))
	if want := time.Date(2026, 12, 3, 10, 59, 0, 0, time.UTC); len(s.Windows) != 1 || !s.Windows[0].ResetsAt.Equal(want) {
		t.Fatalf("windows %+v, want one until %v", s.Windows, want)
	}
}
