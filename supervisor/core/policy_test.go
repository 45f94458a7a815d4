package core

import "time"

// specPolicy is the spec's default policy, as the runtime builds it from
// the settings' defaults over BasePolicy (supervisor's
// TestDefaultPolicyDerivesFromSettingDefaults checks that they agree).
func specPolicy() Policy {
	p := BasePolicy()
	p.Enabled, p.AutoRecover, p.NudgeEnabled = true, true, true
	p.StallSuspect, p.StallToolSuspect, p.StallHard = 10*time.Minute, 30*time.Minute, 150*time.Minute
	p.NudgeCooldown, p.CompactTimeout, p.NudgeMaxAttempts = 10*time.Minute, 600*time.Second, 2
	p.AuthRetryInterval, p.TransientWindow = 5*time.Minute, 90*time.Minute
	return p
}
