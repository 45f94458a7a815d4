package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/session-supervisor/session-supervisor/localapi"
)

// stored reads a setting back from the store: what persists.
func (e *env) stored(key string) string {
	e.t.Helper()
	v, err := testSettings.On(e.store).GetSetting(e.ctx, key)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// showSettings opens Settings on a new window with no sessions, as the
// user does.
func showSettings(t *testing.T) (*env, *settingsView) {
	t.Helper()
	e := newEnv(t, nil, nil)
	e.w.ShowSettings()
	return e, e.w.settingsView()
}

// typeInto replaces an entry's text the way a user would.
func typeInto(f *settingField, text string) {
	f.entry.SetText("")
	test.Type(f.entry, text)
}

func TestSettingsGeneralHoldsExactlyTheSpecKnobs(t *testing.T) {
	e := newEnv(t, nil, nil)
	v := e.w.settingsView()
	var general, advanced []string
	for _, f := range v.fields {
		if isGeneral(f.def.Key) {
			general = append(general, f.def.Key)
		} else {
			advanced = append(advanced, f.def.Key)
		}
	}
	if strings.Join(general, ",") != strings.Join(generalKeys, ",") {
		t.Fatalf("General: %v", general)
	}
	if len(general)+len(advanced) != len(testSettings.Defs()) {
		t.Fatal("a setting is on neither tab")
	}
	for _, f := range v.fields {
		if f.def.Kind.String() == "bool" && f.check == nil || f.def.Kind.String() != "bool" && f.entry == nil {
			t.Errorf("%s: wrong input kind", f.def.Key)
		}
	}
}

func isGeneral(key string) bool {
	for _, k := range generalKeys {
		if k == key {
			return true
		}
	}
	return false
}

func TestSettingsInvalidInputIsShownInlineAndNotSaved(t *testing.T) {
	e, v := showSettings(t)
	tick := v.byKey["supervisor.tick_seconds"]
	suspect := v.byKey["supervisor.stall_suspect_minutes"]

	typeInto(tick, "abc")
	if !tick.errMsg.Visible() || !strings.Contains(tick.errMsg.Text, "Not a whole number") ||
		!strings.Contains(tick.errMsg.Text, "from 5 to 60") {
		t.Fatalf("tick error: visible=%v %q", tick.errMsg.Visible(), tick.errMsg.Text)
	}
	typeInto(suspect, "ten")
	if !suspect.errMsg.Visible() || !strings.Contains(suspect.errMsg.Text, "Not a number") ||
		!strings.Contains(suspect.errMsg.Text, "from 0.01 to 1440") {
		t.Fatalf("suspect error: %q", suspect.errMsg.Text)
	}
	// A valid change next to invalid ones is not saved either: all or none.
	typeInto(v.byKey["supervisor.stall_hard_minutes"], "200")

	test.Tap(v.save)
	for key, want := range map[string]string{
		"supervisor.tick_seconds": "15", "supervisor.stall_suspect_minutes": "10", "supervisor.stall_hard_minutes": "150",
	} {
		if got := e.stored(key); got != want {
			t.Errorf("%s stored %q after a refused save, want %q", key, got, want)
		}
	}
	if !strings.Contains(v.status.Text, "Not saved") {
		t.Errorf("status: %q", v.status.Text)
	}
	if v.tabs.SelectedIndex() != 0 {
		t.Error("the tab with the first error (General) must be shown")
	}

	// Fixing the input clears the error as the user types.
	typeInto(suspect, "12")
	if suspect.errMsg.Visible() {
		t.Fatal("error still shown for a valid value")
	}
}

func TestSettingsSaveAppliesAndPersists(t *testing.T) {
	e, v := showSettings(t)
	sub := e.rt.Bus().Subscribe(8)
	defer e.rt.Bus().Unsubscribe(sub)

	typeInto(v.byKey["supervisor.stall_suspect_minutes"], "12")
	test.Tap(v.byKey["supervisor.nudge_enabled"].check) // on → off
	test.Tap(v.save)

	if got := e.stored("supervisor.stall_suspect_minutes"); got != "12" {
		t.Fatalf("stall_suspect_minutes stored %q", got)
	}
	if got := e.stored("supervisor.nudge_enabled"); got != "false" {
		t.Fatalf("nudge_enabled stored %q", got)
	}
	set, err := testSettings.On(e.store).LoadSettings(e.ctx)
	if err != nil || set.StallSuspect.Minutes() != 12 || set.NudgeEnabled {
		t.Fatalf("what the loop reads next tick: %+v %v", set, err)
	}
	if !strings.Contains(v.status.Text, "Saved 2 settings") {
		t.Errorf("status: %q", v.status.Text)
	}
	select {
	case m := <-sub.C:
		if m.Type != localapi.MsgSnapshot {
			t.Errorf("published %s, want a snapshot", m.Type)
		}
	default:
		t.Error("saving did not publish a snapshot for the tray")
	}

	// Nothing changed since: nothing to save.
	test.Tap(v.save)
	if v.status.Text != "Nothing to save." {
		t.Errorf("status: %q", v.status.Text)
	}
}

func TestSettingsClampedValueShowsWhatWasStored(t *testing.T) {
	e, v := showSettings(t)
	v.tabs.SelectIndex(int(tabAdvanced))
	tick := v.byKey["supervisor.tick_seconds"]
	typeInto(tick, "1")
	if tick.errMsg.Visible() {
		t.Fatalf("an out-of-range tick is clamped, not refused: %q", tick.errMsg.Text)
	}
	test.Tap(v.save)
	if got := e.stored("supervisor.tick_seconds"); got != "5" {
		t.Fatalf("tick stored %q, want the clamp 5", got)
	}
	if tick.entry.Text != "5" {
		t.Errorf("entry shows %q, want the clamped 5", tick.entry.Text)
	}
	if !tick.note.Visible() || !strings.Contains(tick.note.Text, "5 (the nearest allowed value) was saved") {
		t.Errorf("clamp note: %q", tick.note.Text)
	}
	// What the loop reads is the settings service's memory.
	if got := e.settings.Get().Tick; got.Seconds() != 5 {
		t.Errorf("in force: tick %v", got)
	}
}

// Out of range is clamped, never refused, for every number, and 0 too
// (issue 10 item 4): the window lets it through and notes the clamp.
func TestSettingsZeroIsClampedNotRefused(t *testing.T) {
	e, v := showSettings(t)
	suspect := v.byKey["supervisor.stall_suspect_minutes"]
	cooldown := v.byKey["supervisor.nudge_cooldown_minutes"]
	typeInto(suspect, "0")
	typeInto(cooldown, "0")
	if suspect.errMsg.Visible() || cooldown.errMsg.Visible() {
		t.Fatalf("0 refused: %q / %q", suspect.errMsg.Text, cooldown.errMsg.Text)
	}
	test.Tap(v.save)
	if got := e.stored("supervisor.stall_suspect_minutes"); got != "0.01" {
		t.Errorf("suspect stored %q, want the smallest threshold 0.01", got)
	}
	if got := e.stored("supervisor.nudge_cooldown_minutes"); got != "0" {
		t.Errorf("cooldown stored %q, want 0 (no cooldown)", got)
	}
	if !suspect.note.Visible() || cooldown.note.Visible() {
		t.Errorf("notes: suspect %q (want the clamp), cooldown %q (want none)", suspect.note.Text, cooldown.note.Text)
	}
}

// A hard threshold below the suspect threshold is saved as typed but the
// field shows the value in force and says why.
func TestSettingsCrossKeyFloorIsExplained(t *testing.T) {
	e, v := showSettings(t)
	hard := v.byKey["supervisor.stall_hard_minutes"]
	typeInto(hard, "5")
	test.Tap(v.save)
	if got := e.stored("supervisor.stall_hard_minutes"); got != "10" { // GetSetting reports the value in force
		t.Errorf("hard in force %q, want 10", got)
	}
	if hard.entry.Text != "10" || !hard.note.Visible() || !strings.Contains(hard.note.Text, "below supervisor.stall_suspect_minutes") {
		t.Errorf("hard shows %q, note %q", hard.entry.Text, hard.note.Text)
	}
}

func TestSettingsRefreshKeepsUnsavedEdits(t *testing.T) {
	e, v := showSettings(t)
	typeInto(v.byKey["supervisor.stall_hard_minutes"], "300")
	// The tray pauses the supervisor meanwhile.
	if _, err := e.settings.Update(e.ctx, "supervisor.enabled", "false"); err != nil {
		t.Fatal(err)
	}
	e.w.Refresh()
	if v.byKey["supervisor.enabled"].check.Checked {
		t.Error("Settings does not show the tray's pause")
	}
	if got := v.byKey["supervisor.stall_hard_minutes"].entry.Text; got != "300" {
		t.Errorf("a refresh ate the edit: %q", got)
	}
	test.Tap(v.revert)
	if got := v.byKey["supervisor.stall_hard_minutes"].entry.Text; got != "150" {
		t.Errorf("revert: %q", got)
	}
}

// The window's quick check must agree with the store, which has the last
// word: what the window accepts the store stores, what it refuses the
// store refuses.
func TestCheckSettingAgreesWithTheStore(t *testing.T) {
	e := newEnv(t, nil, nil)
	inputs := []string{"", " ", "abc", "0", "-1", "1", "5", "60", "61", "0.5", "1e3", "NaN", "Inf", "1e999",
		"99999999999999999999", "true", "off", "yes", "claude", "two\nlines"}
	for _, def := range testSettings.Defs() {
		for _, in := range inputs {
			quick := checkSetting(def, in) == ""
			_, err := testSettings.On(e.store).SetSetting(e.ctx, def.Key, in)
			if quick != (err == nil) {
				t.Errorf("%s = %q: window accepts=%v, store err=%v", def.Key, in, quick, err)
			}
		}
	}
}

// The agents' command settings are titled from the registry, not from a
// list in the window.
func TestSettingsAgentCommandTitledFromTheRegistry(t *testing.T) {
	e := newEnv(t, nil, nil)
	f := e.w.settingsView().byKey[localapi.AgentCommandKey("claude")]
	if f == nil {
		t.Fatal("no field for the registered agent's command")
	}
	if _, ok := settingTitles[f.def.Key]; ok {
		t.Errorf("%s is titled by the window's own list", f.def.Key)
	}
	found := false
	walk(f.row, func(o fyne.CanvasObject) {
		if rt, ok := o.(*widget.RichText); ok && strings.Contains(rt.String(), "Claude Code command") {
			found = true
		}
	})
	if !found {
		t.Error("the field is not titled \"Claude Code command\"")
	}
}

// Send test reports each channel's outcome, and why when none is set.
func TestSettingsSendTest(t *testing.T) {
	e, v := showSettings(t)
	test.Tap(v.test)
	if !strings.Contains(v.testResult.Text, "No push channel is configured") || v.testResult.Importance != widget.DangerImportance {
		t.Fatalf("with no channel: %q (%v)", v.testResult.Text, v.testResult.Importance)
	}
	e.notifyTest = func(context.Context) ([]localapi.PushReceipt, error) {
		return []localapi.PushReceipt{{Channel: "ntfy", OK: true, Status: 200}, {Channel: "webhook", Status: 401, Error: "HTTP 401: invalid_token"}}, nil
	}
	test.Tap(v.test)
	if v.testResult.Text != "ntfy: sent · webhook: failed (HTTP 401: invalid_token)" || v.testResult.Importance != widget.DangerImportance || v.test.Disabled() {
		t.Fatalf("after a test: %q (%v), button disabled %v", v.testResult.Text, v.testResult.Importance, v.test.Disabled())
	}
}

// A push channel that failed shows in the banner with what to do; one
// that works again takes it away. The supervisor's link state comes first.
func TestBannerSaysAPushFailed(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.push = &localapi.PushStatus{Channels: []string{"ntfy"}, Failures: []localapi.PushFailure{{Channel: "ntfy", At: e.now.Add(-3 * time.Minute), Error: "HTTP 401: unauthorized", GaveUp: true}}}
	e.w.Refresh()
	if !e.w.banner.Visible() || e.w.banner.Text != "Notifications: a push through ntfy failed 3m ago (HTTP 401: unauthorized; gave up). Check Settings → Notifications, then Send test." {
		t.Fatalf("banner %v %q", e.w.banner.Visible(), e.w.banner.Text)
	}
	e.push = &localapi.PushStatus{Channels: []string{"ntfy"}}
	e.w.Refresh()
	if e.w.banner.Visible() {
		t.Fatalf("banner still shows %q", e.w.banner.Text)
	}
}
