package claudeterm

import (
	"strconv"
	"testing"
	"time"
)

// A plan's usage limit as 2.1.328 writes it into the transcript (the
// record of TestUsageLimitResetIsTheRecordsExactSecond) is the spent plan
// window a managed session's rate_limit_event gives: its type, rejected,
// the exact reset; it stays past the next turn (the account's), a later
// limit replaces it, and an error without rate-limit info leaves it.
func TestTranscriptPlanWindow(t *testing.T) {
	limit := func(typ string, reset int64) string {
		return `{"type":"assistant","isApiErrorMessage":true,"error":"rate_limit","apiError":"usage_limit_reached","apiErrorStatus":429,` +
			`"apiErrorParams":{"rate_limit_info":{"status":"rejected","resetsAt":` + strconv.FormatInt(reset, 10) + `,"rateLimitType":"` + typ + `"}},` +
			`"message":{"model":"<synthetic>","content":[{"type":"text","text":"You've hit your limit"}]},"timestamp":"2026-11-30T22:48:04.724Z"}`
	}
	server := `{"type":"assistant","isApiErrorMessage":true,"error":"server_error","apiErrorStatus":500,"message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: 500"}]},"timestamp":"2026-11-30T23:00:00Z"}`
	for _, tc := range []struct {
		name    string
		records []string
		kind    string
		reset   int64
	}{
		{"none", []string{recPrompt}, "", 0},
		{"five-hour limit", []string{recPrompt, limit("five_hour", 1796078896)}, "five_hour", 1796078896},
		{"kept past the next turn and another error", []string{recPrompt, limit("five_hour", 1796078896), recPrompt, server}, "five_hour", 1796078896},
		{"a later limit replaces it", []string{recPrompt, limit("five_hour", 1796078896), recPrompt, limit("seven_day", 1796500000)}, "seven_day", 1796500000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sum Summary
			for _, r := range tc.records {
				sum.Feed([]byte(r))
			}
			w := sum.Window
			if tc.kind == "" {
				if w != nil {
					t.Fatalf("window %+v, want none", w)
				}
				return
			}
			if w == nil || w.Kind != tc.kind || !w.Rejected() || !w.ResetsAt.Equal(time.Unix(tc.reset, 0)) || w.Used >= 0 {
				t.Fatalf("window %+v, want %s spent until %v", w, tc.kind, time.Unix(tc.reset, 0).UTC())
			}
		})
	}
}
