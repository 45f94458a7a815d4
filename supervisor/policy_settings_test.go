package supervisor

import (
	"github.com/session-supervisor/session-supervisor/supervisor/core"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/settings"
)

// Every setting the policy reads reaches its field; the budgets with no
// setting keep their defaults.
func TestPolicyFromSettings(t *testing.T) {
	set := settings.Defaults()
	set.Enabled, set.AutoRecover, set.NudgeEnabled = false, false, false
	set.StallSuspect, set.StallToolSuspect, set.StallHard = time.Minute, 2*time.Minute, 3*time.Minute
	set.NudgeMaxAttempts, set.NudgeCooldown = 7, 4*time.Minute
	set.CompactTimeout, set.AuthRetry = 90*time.Second, 6*time.Second
	set.TransientWindow = 12 * time.Second
	set.ResumeTerminal = true
	set.ArchiveAfterDays = 3
	p := PolicyFromSettings(set)
	want := DefaultPolicy()
	want.Enabled, want.AutoRecover, want.NudgeEnabled = false, false, false
	want.StallSuspect, want.StallToolSuspect, want.StallHard = time.Minute, 2*time.Minute, 3*time.Minute
	want.NudgeMaxAttempts, want.NudgeCooldown = 7, 4*time.Minute
	want.CompactTimeout, want.AuthRetryInterval = 90*time.Second, 6*time.Second
	want.TransientWindow = 12 * time.Second
	want.ResumeTerminal = true
	want.ArchiveAfter = 3 * 24 * time.Hour
	if p != want {
		t.Fatalf("PolicyFromSettings =\n%+v\nwant\n%+v", p, want)
	}
	if got := PolicyFromSettings(settings.Defaults()).AuthRetryInterval; got != DefaultPolicy().AuthRetryInterval {
		t.Errorf("default auth retry %s, want the policy default %s", got, DefaultPolicy().AuthRetryInterval)
	}
	if got := PolicyFromSettings(settings.Defaults()).TransientWindow; got != DefaultPolicy().TransientWindow {
		t.Errorf("default transient window %s, want the policy default %s", got, DefaultPolicy().TransientWindow)
	}
}

// The defaults live once, in the settings registry: DefaultPolicy is those
// settings plus the knobs that are not settings, and still the spec's
// numbers.
func TestDefaultPolicyDerivesFromSettingDefaults(t *testing.T) {
	want := core.Policy{
		Enabled: true, AutoRecover: true, NudgeEnabled: true,
		StallSuspect: 10 * time.Minute, StallToolSuspect: 30 * time.Minute, StallHard: 150 * time.Minute,
		NudgeCooldown: 10 * time.Minute, CompactTimeout: 600 * time.Second, NudgeMaxAttempts: 2,
		InterruptGrace: 30 * time.Second, LostResultAfter: time.Minute, OverflowMaxAttempts: 2, RateLimitMaxAttempts: 5, AuthMaxAttempts: 3,
		RateLimitBaseBackoff: time.Minute, RateLimitMaxBackoff: 30 * time.Minute, AuthRetryInterval: 5 * time.Minute,
		TransientWindow: 90 * time.Minute, ArchiveAfter: 7 * 24 * time.Hour,
	}
	if got := DefaultPolicy(); got != want {
		t.Fatalf("DefaultPolicy =\n%+v\nwant\n%+v", got, want)
	}
	if got := PolicyFromSettings(settings.Defaults()); got != DefaultPolicy() {
		t.Errorf("PolicyFromSettings(defaults) = %+v, want DefaultPolicy", got)
	}
}
