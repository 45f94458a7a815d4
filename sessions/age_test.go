package sessions

import (
	"testing"
	"time"
)

func TestAge(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		ago  time.Duration
		want string
	}{
		{0, "0s"}, {45 * time.Second, "45s"}, {59 * time.Second, "59s"}, {time.Minute, "1m"},
		{12 * time.Minute, "12m"}, {time.Hour, "1h"}, {3 * time.Hour, "3h"}, {47 * time.Hour, "47h"},
		{50 * time.Hour, "2d"}, {-time.Second, "0s"},
	}
	for _, tc := range cases {
		if got := Age(now, now.Add(-tc.ago)); got != tc.want {
			t.Errorf("Age(%s ago) = %q, want %q", tc.ago, got, tc.want)
		}
	}
	if Age(now, time.Time{}) != "-" || Age(time.Time{}, now) != "-" {
		t.Error("an unknown time should read -")
	}
}
