package doctor

import (
	"strings"
	"testing"
	"time"
)

func TestCheckHooks(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		h      Hooks
		status Status
		want   string
	}{
		{"not installed", Hooks{}, OK, "not installed (optional"},
		{"unreadable settings", Hooks{Problem: "not a valid settings file"}, Warn, "not a valid settings file"},
		{"outdated entries", Hooks{Installed: true, Settings: "/h/.claude/settings.json", Problem: "the entries are from another build"}, Warn, "but the entries"},
		{"app down", Hooks{Installed: true}, OK, "no app is running"},
		{"events arrive", Hooks{Installed: true, Listening: true, Since: now.Add(-time.Hour), Events: 12, Last: now.Add(-2 * time.Minute)}, OK, "12 events"},
		{"just started", Hooks{Installed: true, Listening: true, Since: now.Add(-time.Minute)}, OK, "no event yet"},
		{"silent for long", Hooks{Installed: true, Listening: true, Since: now.Add(-time.Hour)}, Warn, "no event arrived"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch := CheckHooks(tc.h, now)
			if ch.Status != tc.status || !strings.Contains(ch.Detail, tc.want) || ch.Name != "hooks" {
				t.Fatalf("got %v %q, want %v mentioning %q", ch.Status, ch.Detail, tc.status, tc.want)
			}
		})
	}
}
