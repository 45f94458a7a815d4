package settings

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// specDefaults is the spec's table (and this package's additions) written
// out by hand, so a changed default in the registry fails here.
var specDefaults = Settings{
	Enabled:             true,
	Tick:                15 * time.Second,
	StallSuspect:        10 * time.Minute,
	StallToolSuspect:    30 * time.Minute,
	StallHard:           150 * time.Minute,
	AutoRecover:         true,
	NudgeEnabled:        true,
	NudgeMaxAttempts:    2,
	NudgeCooldown:       10 * time.Minute,
	AuthRetry:           5 * time.Minute,
	TransientWindow:     90 * time.Minute,
	SnapshotInterval:    60 * time.Second,
	CompactTimeout:      600 * time.Second,
	RetentionDays:       30,
	ArchiveAfterDays:    7,
	NotifyWaitingOnUser: true,
	AgentCommands:       map[string]string{"claude": "claude"},
	SSHCommand:          "ssh",
	Push:                Push{After: 5 * time.Minute, NtfyServer: "https://ntfy.sh", WebhookFormat: "generic"},
}

// withSpecDefaults returns specDefaults with edit applied to a copy (the map
// included), so table cases cannot change each other's expectations.
func withSpecDefaults(edit func(*Settings)) Settings {
	s := specDefaults
	s.AgentCommands = maps.Clone(specDefaults.AgentCommands)
	if edit != nil {
		edit(&s)
	}
	return s
}

func TestSettingRegistry(t *testing.T) {
	wantKeys := []string{
		"supervisor.enabled",
		"supervisor.tick_seconds",
		"supervisor.stall_suspect_minutes",
		"supervisor.stall_tool_suspect_minutes",
		"supervisor.stall_hard_minutes",
		"supervisor.auto_recover_enabled",
		"supervisor.nudge_enabled",
		"supervisor.nudge_max_attempts",
		"supervisor.nudge_cooldown_minutes",
		"supervisor.resume_terminal_sessions",
		"supervisor.auth_retry_minutes",
		"supervisor.transient_window_minutes",
		"supervisor.snapshot_interval_seconds",
		"context_overflow.compact_timeout_seconds",
		"timeline.retention_days",
		"sessions.archive_after_days",
		"notify.waiting_on_user",
		"notify.push_after_minutes",
		"notify.push_waiting_on_user",
		"notify.quiet_hours",
		"notify.ntfy.server",
		"notify.ntfy.topic",
		"notify.ntfy.token",
		"notify.webhook.url",
		"notify.webhook.format",
		"notify.webhook.secret",
		"notify.click_url",
		"machines.ssh_command",
		"desktop.terminal",
		"budget.session_cost_dollars",
		"budget.session_tokens",
		"budget.session_recoveries_per_day",
		"budget.daily_cost_dollars",
		"budget.daily_tokens",
		"budget.daily_recoveries",
		"agents.claude.command",
	}
	defs := testReg.Defs()
	var keys []string
	for _, d := range defs {
		keys = append(keys, d.Key)
		if d.Description == "" {
			t.Errorf("%s has no description", d.Key)
		}
		// Every default is canonical and in range: it parses to itself
		// without clamping.
		text, _, clamped, err := d.parse(d.Default)
		if err != nil || clamped || text != d.Default {
			t.Errorf("%s: default %q parses to %q (clamped %v, err %v)", d.Key, d.Default, text, clamped, err)
		}
		if (d.Kind == KindInt || d.Kind == KindMinutes) && !(d.Min < d.Max) {
			t.Errorf("%s: empty range [%v, %v]", d.Key, d.Min, d.Max)
		}
	}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("Defs:\n got %q\nwant %q", keys, wantKeys)
	}
	if !reflect.DeepEqual(testReg.Defaults(), specDefaults) {
		t.Errorf("Defaults:\n got %+v\nwant %+v", testReg.Defaults(), specDefaults)
	}
	// The agentless defaults (supervisor.DefaultPolicy's) are the same but
	// for the agents' commands.
	if want := withSpecDefaults(func(s *Settings) { s.AgentCommands = map[string]string{} }); !reflect.DeepEqual(Defaults(), want) {
		t.Errorf("Defaults():\n got %+v\nwant %+v", Defaults(), want)
	}
	// Defs hands out a copy.
	defs[0].Default = "false"
	if testReg.Defs()[0].Default != "true" {
		t.Error("changing Defs' result changed the registry")
	}
	// A client of the local API can decode what the server encodes.
	b, err := json.Marshal(testReg.Defs())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"kind":"minutes"`) || !strings.Contains(string(b), `"policy":"clamp"`) {
		t.Errorf("registry JSON lacks readable kind/policy: %s", b)
	}
	var back []Def
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, testReg.Defs()) {
		t.Errorf("registry JSON round trip = %v; equal %v", err, reflect.DeepEqual(back, testReg.Defs()))
	}
}

func TestSettingsDefaultsOnFreshDatabase(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	got, err := s.LoadSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, specDefaults) {
		t.Errorf("LoadSettings on a fresh db:\n got %+v\nwant %+v", got, specDefaults)
	}
	list, err := s.ListSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(testReg.Defs()) {
		t.Fatalf("ListSettings returned %d settings, want %d", len(list), len(testReg.Defs()))
	}
	for i, v := range list {
		def := testReg.Defs()[i]
		if v.Key != def.Key || v.Value != def.Default || v.Default != def.Default || !v.IsDefault ||
			v.Description != def.Description || v.Note != "" {
			t.Errorf("ListSettings[%d] = %+v, want the default of %s", i, v, def.Key)
		}
		if g, err := s.GetSetting(ctx, def.Key); err != nil || g != def.Default {
			t.Errorf("GetSetting(%s) = %q, %v; want %q", def.Key, g, err, def.Default)
		}
	}
}

// TestSetSettingReachesItsField sets each key to a non-default value and
// checks that exactly the matching Settings field changed, so no key is
// wired to the wrong field.
func TestSetSettingReachesItsField(t *testing.T) {
	tests := []struct {
		key, raw, stored string
		want             func(*Settings)
	}{
		{"supervisor.enabled", "false", "false", func(s *Settings) { s.Enabled = false }},
		{"supervisor.tick_seconds", "30", "30", func(s *Settings) { s.Tick = 30 * time.Second }},
		{"supervisor.stall_suspect_minutes", "0.1", "0.1", func(s *Settings) { s.StallSuspect = 6 * time.Second }},
		{"supervisor.stall_tool_suspect_minutes", "45.5", "45.5", func(s *Settings) { s.StallToolSuspect = 45*time.Minute + 30*time.Second }},
		// 150 minutes: the hard threshold may not be below the suspect
		// threshold in force (10); TestCrossKeyFloors covers the rule.
		{"supervisor.stall_hard_minutes", "120.25", "120.25", func(s *Settings) { s.StallHard = 120*time.Minute + 15*time.Second }},
		{"supervisor.auto_recover_enabled", "no", "false", func(s *Settings) { s.AutoRecover = false }},
		{"supervisor.nudge_enabled", "OFF", "false", func(s *Settings) { s.NudgeEnabled = false }},
		{"supervisor.nudge_max_attempts", "0", "0", func(s *Settings) { s.NudgeMaxAttempts = 0 }},
		{"supervisor.nudge_cooldown_minutes", "0.50", "0.5", func(s *Settings) { s.NudgeCooldown = 30 * time.Second }},
		{"supervisor.resume_terminal_sessions", "on", "true", func(s *Settings) { s.ResumeTerminal = true }},
		{"supervisor.auth_retry_minutes", "0.1", "0.1", func(s *Settings) { s.AuthRetry = 6 * time.Second }},
		{"supervisor.transient_window_minutes", "0.2", "0.2", func(s *Settings) { s.TransientWindow = 12 * time.Second }},
		{"supervisor.snapshot_interval_seconds", "120", "120", func(s *Settings) { s.SnapshotInterval = 2 * time.Minute }},
		{"context_overflow.compact_timeout_seconds", "900", "900", func(s *Settings) { s.CompactTimeout = 15 * time.Minute }},
		{"timeline.retention_days", " 90 ", "90", func(s *Settings) { s.RetentionDays = 90 }},
		{"sessions.archive_after_days", "0", "0", func(s *Settings) { s.ArchiveAfterDays = 0 }},
		{"notify.waiting_on_user", "0", "false", func(s *Settings) { s.NotifyWaitingOnUser = false }},
		{"machines.ssh_command", " ssh -F /tmp/cfg ", "ssh -F /tmp/cfg", func(s *Settings) { s.SSHCommand = "ssh -F /tmp/cfg" }},
		{"desktop.terminal", " kitty --single-instance ", "kitty --single-instance", func(s *Settings) { s.Terminal = "kitty --single-instance" }},
		{"agents.claude.command", " /opt/claude/bin/claude ", "/opt/claude/bin/claude", func(s *Settings) { s.AgentCommands["claude"] = "/opt/claude/bin/claude" }},
		{"notify.push_after_minutes", "0", "0", func(s *Settings) { s.Push.After = 0 }},
		{"notify.push_waiting_on_user", "yes", "true", func(s *Settings) { s.Push.WaitingOnUser = true }},
		{"notify.quiet_hours", "22:00-07:00", "22:00-07:00", func(s *Settings) { s.Push.Quiet, _ = ParseQuietHours("22:00-07:00") }},
		{"notify.ntfy.server", "http://127.0.0.1:8080", "http://127.0.0.1:8080", func(s *Settings) { s.Push.NtfyServer = "http://127.0.0.1:8080" }},
		// A secret is stored as given and shown only as set.
		{"notify.ntfy.topic", "ann-sessions_42", Masked, func(s *Settings) { s.Push.NtfyTopic = "ann-sessions_42" }},
		{"notify.ntfy.token", "tk_abc", Masked, func(s *Settings) { s.Push.NtfyToken = "tk_abc" }},
		{"notify.webhook.url", "https://hooks.slack.com/services/T0/B0/xyz", Masked, func(s *Settings) { s.Push.WebhookURL = "https://hooks.slack.com/services/T0/B0/xyz" }},
		{"notify.webhook.format", "slack", "slack", func(s *Settings) { s.Push.WebhookFormat = "slack" }},
		{"notify.webhook.secret", "s3cret", Masked, func(s *Settings) { s.Push.WebhookSecret = "s3cret" }},
		{"notify.click_url", "https://desk.example/", "https://desk.example/", func(s *Settings) { s.Push.ClickURL = "https://desk.example/" }},
		{"budget.session_cost_dollars", " 12.5 ", "12.5", func(s *Settings) { s.Budgets.SessionCost = 12_500_000 }},
		{"budget.session_tokens", "2000000", "2000000", func(s *Settings) { s.Budgets.SessionTokens = 2_000_000 }},
		{"budget.session_recoveries_per_day", "3", "3", func(s *Settings) { s.Budgets.SessionRecoveries = 3 }},
		{"budget.daily_cost_dollars", "$20", "$20", func(s *Settings) { s.Budgets.DailyCost = 20_000_000 }},
		{"budget.daily_tokens", "50000000", "50000000", func(s *Settings) { s.Budgets.DailyTokens = 50_000_000 }},
		{"budget.daily_recoveries", "40", "40", func(s *Settings) { s.Budgets.DailyRecoveries = 40 }},
	}
	if len(tests) != len(testReg.Defs()) {
		t.Fatalf("table covers %d keys, registry has %d", len(tests), len(testReg.Defs()))
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			s, _ := openTemp(t)
			ctx := context.Background()
			res, err := s.SetSetting(ctx, tt.key, tt.raw)
			if err != nil {
				t.Fatalf("SetSetting: %v", err)
			}
			requested := tt.raw
			if tt.stored == Masked {
				requested = Masked
			}
			if want := (SetResult{Key: tt.key, Value: tt.stored, Requested: requested}); res != want {
				t.Errorf("SetSetting = %+v, want %+v", res, want)
			}
			if g, err := s.GetSetting(ctx, tt.key); err != nil || g != tt.stored {
				t.Errorf("GetSetting = %q, %v; want %q", g, err, tt.stored)
			}
			want := withSpecDefaults(tt.want)
			got, err := s.LoadSettings(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("LoadSettings:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestSetSettingClamps(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	tests := []struct {
		key, raw, want string
	}{
		{"supervisor.tick_seconds", "99", "60"},
		{"supervisor.tick_seconds", "1", "5"},
		{"supervisor.tick_seconds", "-3", "5"},
		{"supervisor.tick_seconds", "99999999999999999999", "60"}, // beyond int64
		{"supervisor.stall_suspect_minutes", "0.001", "0.01"},
		{"supervisor.stall_hard_minutes", "1e6", "10080"},
		{"supervisor.nudge_max_attempts", "50", "10"},
		{"timeline.retention_days", "7", "30"},
		{"context_overflow.compact_timeout_seconds", "5", "60"},
		{"supervisor.transient_window_minutes", "0.001", "0.01"},
		{"supervisor.transient_window_minutes", "5000", "1440"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.raw, func(t *testing.T) {
			res, err := s.SetSetting(ctx, tt.key, tt.raw)
			if err != nil {
				t.Fatalf("SetSetting: %v", err)
			}
			if res.Key != tt.key || res.Value != tt.want || !res.Clamped || res.Requested != tt.raw ||
				!strings.Contains(res.Note, "nearest allowed value") {
				t.Errorf("SetSetting = %+v, want %s clamped to %s with a note", res, tt.raw, tt.want)
			}
			if g, _ := s.GetSetting(ctx, tt.key); g != tt.want {
				t.Errorf("stored %q, want %q", g, tt.want)
			}
		})
	}
	// In range and exactly on a bound is not clamped.
	for _, raw := range []string{"5", "60", "15"} {
		if res, err := s.SetSetting(ctx, "supervisor.tick_seconds", raw); err != nil || res.Clamped || res.Value != raw {
			t.Errorf("SetSetting(tick, %s) = %+v, %v; want it stored unclamped", raw, res, err)
		}
	}
	got, err := s.LoadSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tick != 15*time.Second || got.RetentionDays != 30 || got.CompactTimeout != time.Minute {
		t.Errorf("LoadSettings after clamping: %+v", got)
	}
}

func TestSetSettingRejects(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	// A good value first: a rejected set must leave it in place.
	for _, k := range []string{"supervisor.tick_seconds", "supervisor.enabled", "supervisor.stall_suspect_minutes", "agents.claude.command"} {
		def, _ := testReg.lookup(k)
		if _, err := s.SetSetting(ctx, k, def.Default); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		key, raw string
		msg      []string // in addition to the key and the quoted value
	}{
		{"supervisor.tick_seconds", "abc", []string{"not a whole number", "from 5 to 60"}},
		{"supervisor.tick_seconds", "2.5", []string{"not a whole number", "seconds from 5 to 60"}},
		{"supervisor.tick_seconds", "", []string{"from 5 to 60"}},
		{"supervisor.tick_seconds", "1e3", []string{"not a whole number"}},
		{"supervisor.enabled", "maybe", []string{"not a boolean", "true or false"}},
		{"supervisor.enabled", "", []string{"true or false"}},
		{"supervisor.stall_suspect_minutes", "NaN", []string{"not a finite number", "from 0.01 to 1440"}},
		{"supervisor.stall_suspect_minutes", "Inf", []string{"not a finite number"}},
		{"supervisor.stall_suspect_minutes", "-inf", []string{"not a finite number"}},
		{"supervisor.stall_suspect_minutes", "1e999", []string{"not a finite number"}},
		{"supervisor.stall_suspect_minutes", "ten", []string{"not a finite number", "minutes"}},
		{"agents.claude.command", "  ", []string{"empty"}},
		{"agents.claude.command", "claude\nrm -rf /", []string{"control character"}},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.raw, func(t *testing.T) {
			res, err := s.SetSetting(ctx, tt.key, tt.raw)
			if err == nil {
				t.Fatalf("SetSetting(%s, %q) = %+v, want an error", tt.key, tt.raw, res)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %q does not wrap ErrInvalid", err)
			}
			for _, m := range append([]string{tt.key, `"` + strings.ReplaceAll(tt.raw, "\n", `\n`) + `"`}, tt.msg...) {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			def, _ := testReg.lookup(tt.key)
			if g, _ := s.GetSetting(ctx, tt.key); g != def.Default {
				t.Errorf("after the rejected set %s = %q, want it unchanged (%q)", tt.key, g, def.Default)
			}
		})
	}
}

// TestRejectPolicy covers the policy no shipped key uses yet, with a
// definition made up for the test.
func TestRejectPolicy(t *testing.T) {
	def := Def{Key: "test.strict", Kind: KindInt, Unit: "items", Min: 1, Max: 3, Policy: Reject, Default: "2"}
	minutes := Def{Key: "test.strict_minutes", Kind: KindMinutes, Min: 1, Max: 3, Policy: Reject, Default: "2"}
	tests := []struct {
		def     Def
		raw     string
		want    string
		wantErr bool
	}{
		{def, "1", "1", false},
		{def, "3", "3", false},
		{def, "4", "", true},
		{def, "0", "", true},
		{minutes, "2.5", "2.5", false},
		{minutes, "3.5", "", true},
		{minutes, "0.5", "", true},
	}
	for _, tt := range tests {
		text, _, clamped, err := tt.def.parse(tt.raw)
		if tt.wantErr {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "out of range") ||
				!strings.Contains(err.Error(), "from 1 to 3") {
				t.Errorf("%s=%s: err %v, want an out-of-range error naming the range", tt.def.Key, tt.raw, err)
			}
			continue
		}
		if err != nil || clamped || text != tt.want {
			t.Errorf("%s=%s: %q clamped=%v err=%v; want %q", tt.def.Key, tt.raw, text, clamped, err, tt.want)
		}
	}
}

func TestUnknownSetting(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, ErrUnknown) {
			t.Errorf("%s: error %v does not wrap ErrUnknown", op, err)
			return
		}
		for _, m := range []string{`"supervisor.tick"`, "unknown", "supervisor.tick_seconds", "agents.claude.command"} {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: error %q does not mention %q", op, err, m)
			}
		}
	}
	_, err := s.SetSetting(ctx, "supervisor.tick", "15")
	check("SetSetting", err)
	_, err = s.GetSetting(ctx, "supervisor.tick")
	check("GetSetting", err)
	check("ResetSetting", s.ResetSetting(ctx, "supervisor.tick"))
	if rows, err := s.StoredSettings(ctx); err != nil || len(rows) != 0 {
		t.Errorf("settings rows = %v, %v; want none", rows, err)
	}
}

func TestResetSetting(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	const key = "supervisor.nudge_max_attempts"
	if _, err := s.SetSetting(ctx, key, "5"); err != nil {
		t.Fatal(err)
	}
	list, _ := s.ListSettings(ctx)
	if v := list[slices.IndexFunc(list, func(v Value) bool { return v.Key == key })]; v.Value != "5" || v.IsDefault {
		t.Errorf("after set: %+v", v)
	}
	if err := s.ResetSetting(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := s.ResetSetting(ctx, key); err != nil {
		t.Errorf("resetting an unset key: %v", err)
	}
	list, _ = s.ListSettings(ctx)
	if v := list[slices.IndexFunc(list, func(v Value) bool { return v.Key == key })]; v.Value != "2" || !v.IsDefault {
		t.Errorf("after reset: %+v", v)
	}
}

// TestLoadSettingsSurvivesHandEdits writes values SetSetting would refuse
// straight into the table, as a user with the sqlite3 shell might.
func TestLoadSettingsSurvivesHandEdits(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	for k, v := range map[string]string{
		"supervisor.tick_seconds":          "abc", // unparseable → default 15
		"supervisor.stall_suspect_minutes": "NaN", // → default 10
		"supervisor.enabled":               "maybe",
		"supervisor.nudge_max_attempts":    "999",  // out of range → clamped to 10
		"supervisor.stall_hard_minutes":    "x",    // unparseable → default 150
		"timeline.retention_days":          "45",   // fine
		"agents.claude.command":            "",     // empty → default
		"some.future_key":                  "true", // unknown → ignored
	} {
		if err := s.WriteSettings(ctx, map[string]*string{k: &v}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LoadSettings(ctx)
	if err != nil {
		t.Fatalf("LoadSettings failed on hand-edited values: %v", err)
	}
	want := withSpecDefaults(func(s *Settings) {
		s.NudgeMaxAttempts = 10
		s.RetentionDays = 45
	})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadSettings:\n got %+v\nwant %+v", got, want)
	}
	list, err := s.ListSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	notes := map[string]string{}
	for _, v := range list {
		notes[v.Key] = v.Note
	}
	for _, k := range []string{"supervisor.tick_seconds", "supervisor.stall_suspect_minutes", "supervisor.enabled",
		"supervisor.stall_hard_minutes", "agents.claude.command"} {
		if !strings.Contains(notes[k], "invalid, using the default") {
			t.Errorf("%s note = %q, want it to say the stored value is ignored", k, notes[k])
		}
	}
	if !strings.Contains(notes["supervisor.nudge_max_attempts"], "out of range, using 10") {
		t.Errorf("nudge_max_attempts note = %q", notes["supervisor.nudge_max_attempts"])
	}
	if notes["timeline.retention_days"] != "" {
		t.Errorf("a valid value got a note: %q", notes["timeline.retention_days"])
	}
	if g, err := s.GetSetting(ctx, "supervisor.tick_seconds"); err != nil || g != "15" {
		t.Errorf("GetSetting(tick) = %q, %v; want the default 15", g, err)
	}
}

// Each push setting refuses what its channel could not use, with a reason,
// and a secret's refusal does not repeat the value.
func TestPushSettingsRefuse(t *testing.T) {
	st, _ := openTemp(t)
	svc, err := NewService(context.Background(), testReg, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, raw, why string }{
		{"notify.quiet_hours", "22:00", "want HH:MM-HH:MM"},
		{"notify.quiet_hours", "22:00-24:30", "not a time of day"},
		{"notify.ntfy.server", "ntfy.sh", "not an http or https URL"},
		{"notify.ntfy.topic", "my topic!", "letters, digits"},
		{"notify.webhook.url", "http://hooks.example.com/T0/secretpath", "only to this machine"},
		{"notify.webhook.url", "ftp://hooks.example.com/secretpath", "not an https URL"},
		{"notify.webhook.format", "teams", "generic, slack, discord"},
		{"notify.click_url", "javascript:alert(1)", "not an http or https URL"},
		{"desktop.terminal", "xterm -e 'sh -c x'", "without a shell"},
		{"desktop.terminal", "kitty; rm -rf x", "without a shell"},
		{"desktop.terminal", "bin/xterm", "a name on PATH or an absolute path"},
	} {
		_, err := svc.Update(context.Background(), tc.key, tc.raw)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s = %q: err %v, want ErrInvalid saying %q", tc.key, tc.raw, err, tc.why)
			continue
		}
		if def, _ := testReg.Lookup(tc.key); def.Secret && strings.Contains(err.Error(), "secretpath") {
			t.Errorf("%s: the error repeats the secret: %v", tc.key, err)
		}
	}
	// Empty turns an optional setting off (desktop.terminal: finds one); a
	// required one refuses it.
	if _, err := svc.Update(context.Background(), "desktop.terminal", ""); err != nil {
		t.Errorf("clearing desktop.terminal: %v", err)
	}
	if _, err := svc.Update(context.Background(), "notify.ntfy.topic", ""); err != nil {
		t.Errorf("clearing the topic: %v", err)
	}
	if _, err := svc.Update(context.Background(), "notify.ntfy.server", ""); err == nil {
		t.Error("an empty ntfy server was accepted")
	}
	// Plain http to this machine is a webhook (a local receiver, a test).
	if _, err := svc.Update(context.Background(), "notify.webhook.url", "http://127.0.0.1:9/hook"); err != nil {
		t.Errorf("a loopback webhook: %v", err)
	}
	for _, v := range svc.List() {
		if v.Key == "notify.webhook.url" && v.Value != Masked {
			t.Errorf("List shows the webhook URL: %q", v.Value)
		}
	}
	if got := svc.Get().Push.WebhookURL; got != "http://127.0.0.1:9/hook" {
		t.Errorf("in force: %q", got)
	}
}

func TestQuietHours(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 12, 2, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		in      string
		err     string
		inside  []time.Time
		outside []time.Time
	}{
		{in: ""},
		{in: "22:00-07:00", inside: []time.Time{at(22, 0), at(23, 59), at(0, 0), at(6, 59)}, outside: []time.Time{at(7, 0), at(12, 0), at(21, 59)}},
		{in: " 12:30 - 13:00 ", inside: []time.Time{at(12, 30), at(12, 59)}, outside: []time.Time{at(13, 0), at(12, 29)}},
		{in: "22:00", err: "want HH:MM-HH:MM"},
		{in: "25:00-07:00", err: "not a time of day"},
		{in: "07:00-07:00", err: "the same time"},
	} {
		q, err := ParseQuietHours(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		for _, tm := range tc.inside {
			if !q.Contains(tm) {
				t.Errorf("%q does not contain %s", tc.in, tm.Format("15:04"))
			}
		}
		for _, tm := range tc.outside {
			if q.Contains(tm) {
				t.Errorf("%q contains %s", tc.in, tm.Format("15:04"))
			}
		}
	}
	q, _ := ParseQuietHours("22:00-07:00")
	if got := q.End(at(23, 0)); !got.Equal(time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("End(23:00) = %v", got)
	}
	if got := q.End(at(3, 0)); !got.Equal(at(7, 0)) {
		t.Errorf("End(03:00) = %v", got)
	}
	if q.String() != "22:00-07:00" {
		t.Errorf("String = %q", q.String())
	}
}

func TestParseDollars(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"20", 20_000_000, false},
		{"$20.41", 20_410_000, false},
		{" 0.5 ", 500_000, false},
		{"0.05", 50_000, false},
		{"1000000", 1_000_000_000_000, false},
		{"1000001", 0, true},
		{"99999999999999999999", 0, true},
		{"-1", 0, true},
		{"+1", 0, true},
		{"1.234", 0, true},
		{"1.", 0, true},
		{".5", 0, true},
		{"twenty", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseDollars(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseDollars(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
	// Through the registry: a bad amount is refused with what is wanted.
	def, err := testReg.lookup("budget.daily_cost_dollars")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := def.parse("ten"); err == nil || !strings.Contains(err.Error(), "amount of dollars") {
		t.Errorf("budget.daily_cost_dollars = ten: err = %v", err)
	}
}
