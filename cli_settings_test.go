package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// mustSettingsService is the app's settings service over st, as run builds it.
func mustSettingsService(t testing.TB, st *storage.Store) *settings.Service {
	t.Helper()
	svc, err := settings.NewService(context.Background(), settingsRegistry, st)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// Issue 10 item 4: out-of-range numbers, 0 included, are clamped and the
// command says so, for every numeric key; nothing numeric is refused.
func TestSettingsSetClampsEveryNumericKey(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		key, raw, want string
		clamped        bool
	}{
		{"supervisor.tick_seconds", "0", "5", true},
		{"supervisor.stall_suspect_minutes", "0", "0.01", true},
		{"supervisor.stall_tool_suspect_minutes", "-1", "0.01", true},
		{"supervisor.stall_hard_minutes", "99999", "10080", true},
		{"supervisor.nudge_max_attempts", "-1", "0", true},
		{"supervisor.nudge_cooldown_minutes", "0", "0", false}, // no cooldown: legitimate
		{"supervisor.auth_retry_minutes", "0", "0.01", true},
		{"supervisor.transient_window_minutes", "0", "0.01", true},
		{"supervisor.snapshot_interval_seconds", "0", "5", true},
		{"context_overflow.compact_timeout_seconds", "0", "60", true},
		{"timeline.retention_days", "0", "30", true},
		{"sessions.archive_after_days", "-5", "0", true}, // 0: never archive
		{"notify.push_after_minutes", "-1", "0", true},   // 0: push at once
		// 0 is every budget's off.
		{"budget.session_tokens", "-1", "0", true},
		{"budget.session_recoveries_per_day", "10001", "10000", true},
		{"budget.daily_tokens", "0", "0", false},
		{"budget.daily_recoveries", "-3", "0", true},
	}
	numeric := 0
	for _, d := range settingsRegistry.Defs() {
		if d.Kind == settings.KindInt || d.Kind == settings.KindMinutes {
			numeric++
		}
	}
	if numeric != len(tests) {
		t.Fatalf("table covers %d numeric keys, the registry has %d", len(tests), numeric)
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			code, out, errOut := runCLI(t, "--data-dir", dir, "settings", "set", tt.key, tt.raw)
			if code != 0 {
				t.Fatalf("set %s %s: exit %d, stderr %q; want it clamped, not refused", tt.key, tt.raw, code, errOut)
			}
			if !strings.HasPrefix(out, tt.key+" = "+tt.want) {
				t.Errorf("output %q, want %s = %s", out, tt.key, tt.want)
			}
			if said := strings.Contains(out, "clamped from "+tt.raw); said != tt.clamped {
				t.Errorf("output %q: says clamped=%v, want %v", out, said, tt.clamped)
			}
			if code, out, _ := runCLI(t, "--data-dir", dir, "settings", "reset", tt.key); code != 0 || !strings.Contains(out, "(default)") {
				t.Errorf("reset: %d %q", code, out)
			}
		})
	}
}

// A secret is stored and used, but `settings set`, `get` and `list` (text
// and JSON) never print it.
func TestSettingsNeverPrintASecret(t *testing.T) {
	dir := t.TempDir()
	const secret = "tk_0123456789abcdefghijklmnopqr"
	for _, args := range [][]string{
		{"settings", "set", "notify.ntfy.token", secret},
		{"settings", "get", "notify.ntfy.token"},
		{"settings", "list"},
		{"settings", "list", "--json"},
	} {
		code, out, errOut := runCLI(t, append([]string{"--data-dir", dir}, args...)...)
		if code != 0 || strings.Contains(out+errOut, secret) || !strings.Contains(out, settings.Masked) {
			t.Errorf("%q: exit %d, output %q %q; want it masked", args, code, out, errOut)
		}
	}
	st, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := settingsRegistry.On(st).LoadSettings(context.Background())
	if err != nil || got.Push.NtfyToken != secret {
		t.Errorf("in force: %q, %v; want the token as given", got.Push.NtfyToken, err)
	}
}

// A hard threshold below the suspect one is stored as asked, and the
// command says which value is in force and why.
func TestSettingsSetReportsTheValueInForce(t *testing.T) {
	dir := t.TempDir()
	code, out, _ := runCLI(t, "--data-dir", dir, "settings", "set", "supervisor.stall_hard_minutes", "5")
	if code != 0 || !strings.Contains(out, "supervisor.stall_hard_minutes = 5\n") ||
		!strings.Contains(out, "in force: 10") || !strings.Contains(out, "below supervisor.stall_suspect_minutes") {
		t.Errorf("set: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "--data-dir", dir, "settings", "list")
	if code != 0 || !strings.Contains(out, "note: supervisor.stall_hard_minutes: 5 is below") {
		t.Errorf("list does not explain the value in force: %q", out)
	}
}

// While the app runs, set and reset go through its settings service, so the
// change is in force in the app at once (a write to the database alone
// would not reach the app's memory).
func TestSettingsSetGoesThroughTheRunningApp(t *testing.T) {
	dir := testdir.Short(t, "ss")
	svc := serveApp(t, dir, nil).settings

	updates, cancel := svc.Subscribe()
	defer cancel()
	code, out, errOut := runCLI(t, "--data-dir", dir, "settings", "set", "supervisor.tick_seconds", "1")
	if code != 0 || !strings.Contains(out, "= 5 (clamped from 1") {
		t.Fatalf("set: %d %q %q", code, out, errOut)
	}
	if got := svc.Get().Tick; got != 5*time.Second {
		t.Errorf("the app's memory has tick %v, want 5s", got)
	}
	select {
	case s := <-updates:
		if s.Tick != 5*time.Second {
			t.Errorf("published tick %v", s.Tick)
		}
	default:
		t.Error("the app's subscribers were not told")
	}
	if code, _, errOut := runCLI(t, "--data-dir", dir, "settings", "reset", "supervisor.tick_seconds"); code != 0 {
		t.Fatalf("reset: %d %q", code, errOut)
	}
	if got := svc.Get().Tick; got != 15*time.Second {
		t.Errorf("after reset the app's memory has tick %v", got)
	}
	if code, _, errOut := runCLI(t, "--data-dir", dir, "settings", "set", "supervisor.enabled", "maybe"); code != exitFail ||
		!strings.Contains(errOut, "supervisor.enabled") || !strings.Contains(errOut, "maybe") {
		t.Errorf("invalid value through the app: %d %q", code, errOut)
	}
}
