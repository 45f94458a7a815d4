package app

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// generalKeys, in the spec's order, are the knobs the spec puts in Settings → General: "the
// supervisor switch, auto-recovery, the nudge and its attempt cap, and the
// two stall thresholds". The spec's watchdog section names exactly two stall
// thresholds — "the suspect threshold" (Working → Suspect) and "the
// hard-stall threshold" (Suspect → interrupt) — and calls the tool variant
// the suspect threshold "relaxed while a tool call is open", a refinement of
// the first rather than a third threshold. So General holds suspect and
// hard; stall_tool_suspect_minutes is in Advanced with the other cadence
// knobs. Issue 11 adds the switch that resumes terminal sessions whose
// process died mid-turn: a recovery choice the user makes once, like the nudge.
// Issue 24 adds the terminal a hand-over opens when no tmux server runs.
var generalKeys = []string{
	"supervisor.enabled",
	"supervisor.auto_recover_enabled",
	"supervisor.nudge_enabled",
	"supervisor.nudge_max_attempts",
	"supervisor.stall_suspect_minutes",
	"supervisor.stall_hard_minutes",
	"supervisor.resume_terminal_sessions",
	"desktop.terminal",
}

// settingTitles are short human names; the key is shown under each, since
// it is what the CLI (`config set`) and the docs use.
var settingTitles = map[string]string{
	"supervisor.enabled":                       "Supervisor",
	"supervisor.auto_recover_enabled":          "Automatic recovery",
	"supervisor.nudge_enabled":                 "Continuation nudge",
	"supervisor.nudge_max_attempts":            "Nudges per incident",
	"supervisor.resume_terminal_sessions":      "Resume terminal sessions that died mid-turn",
	"desktop.terminal":                         "Terminal for Continue in terminal",
	"supervisor.stall_suspect_minutes":         "Suspect a stall after",
	"supervisor.stall_hard_minutes":            "Interrupt a stalled turn after",
	"supervisor.tick_seconds":                  "Watchdog tick",
	"supervisor.stall_tool_suspect_minutes":    "Suspect a stall during a tool call after",
	"supervisor.nudge_cooldown_minutes":        "Time between nudges",
	"supervisor.snapshot_interval_seconds":     "Snapshot interval",
	"context_overflow.compact_timeout_seconds": "Compaction timeout",
	"timeline.retention_days":                  "Keep the timeline for",
	"sessions.archive_after_days":              "Archive ended sessions after",
	"notify.waiting_on_user":                   "Notify when a session waits on you",
	"notify.push_after_minutes":                "Push when still unanswered after",
	"notify.push_waiting_on_user":              "Push sessions waiting on you too",
	"notify.quiet_hours":                       "Quiet hours",
	"notify.ntfy.server":                       "ntfy server",
	"notify.ntfy.topic":                        "ntfy topic",
	"notify.ntfy.token":                        "ntfy access token",
	"notify.webhook.url":                       "Webhook URL",
	"notify.webhook.format":                    "Webhook format",
	"notify.webhook.secret":                    "Webhook signing secret",
	"notify.click_url":                         "Link a push opens",
	"budget.session_cost_dollars":              "Session budget: equivalent API cost ($)",
	"budget.session_tokens":                    "Session budget: tokens",
	"budget.session_recoveries_per_day":        "Session budget: automatic recoveries a day",
	"budget.daily_cost_dollars":                "Daily budget: equivalent API cost ($)",
	"budget.daily_tokens":                      "Daily budget: tokens",
	"budget.daily_recoveries":                  "Daily budget: automatic recoveries",
	// agents.NAME.command: "DISPLAY NAME command", from the registry.
}

// settingsView is Settings: General and Advanced tabs of fields, one Save.
type settingsView struct {
	w *Window
	// machine chooses whose settings are shown (each machine's supervisor
	// has its own): hidden unless other machines are configured. src is
	// the chosen machine's settings (the window's own for this one).
	machine     *widget.Select
	machineRow  fyne.CanvasObject // "Settings of" and the choice, hidden together
	machineName string
	src         SettingsBackend
	fields      []*settingField
	byKey       map[string]*settingField
	tabs        *container.AppTabs
	status      *widget.Label
	save        *widget.Button
	revert      *widget.Button
	content     *fyne.Container
	// test sends a sample through the push channels; testResult says how
	// each went. Nil when the window has no way to ask.
	test       *widget.Button
	testResult *widget.Label
}

// settingField is one setting's row: its input, inline error and note.
type settingField struct {
	def    localapi.SettingDef
	check  *widget.Check // bool settings
	entry  *widget.Entry // every other kind
	errMsg *widget.Label // invalid input, with the allowed range
	note   *widget.Label // a clamped or ignored value
	loaded string        // the value in force when last read or saved
	row    *fyne.Container
	// relayout re-lays the field's page out after an error or note shows.
	relayout func()
}

func newSettingsView(w *Window) *settingsView {
	v := &settingsView{w: w, byKey: map[string]*settingField{}, src: w.s}
	var genRows, advRows, noteRows []fyne.CanvasObject
	var genFields, advFields, noteFields []*settingField
	// General in the spec's order of the knobs; Advanced in the registry's
	// (the spec's table) order.
	defs := slices.Clone(w.settingDefs)
	rank := func(key string) int {
		for i, k := range generalKeys {
			if k == key {
				return i
			}
		}
		return len(generalKeys)
	}
	sort.SliceStable(defs, func(i, j int) bool { return rank(defs[i].Key) < rank(defs[j].Key) })
	titles := map[string]string{}
	for _, a := range w.agents {
		titles[localapi.AgentCommandKey(a.Name())] = a.DisplayName() + " command"
	}
	for _, def := range defs {
		f := newSettingField(def, titles[def.Key])
		v.fields = append(v.fields, f)
		v.byKey[def.Key] = f
		switch tabOf(def.Key) {
		case tabGeneral:
			genRows = append(genRows, f.row, widget.NewSeparator())
			genFields = append(genFields, f)
		case tabNotifications:
			noteRows = append(noteRows, f.row, widget.NewSeparator())
			noteFields = append(noteFields, f)
		default:
			advRows = append(advRows, f.row, widget.NewSeparator())
			advFields = append(advFields, f)
		}
	}
	if w.notifyTest != nil {
		v.test = widget.NewButtonWithIcon("Send test", theme.MailSendIcon(), v.sendTest)
		v.testResult = widget.NewLabel("Send a sample through every push channel set below (save your changes first).")
		v.testResult.Wrapping = fyne.TextWrapWord
		noteRows = append([]fyne.CanvasObject{container.NewBorder(nil, nil, nil, v.test, v.testResult), widget.NewSeparator()}, noteRows...)
	}
	page := func(intro string, rows []fyne.CanvasObject, fields []*settingField) fyne.CanvasObject {
		box := container.NewVBox(append([]fyne.CanvasObject{mutedLine(intro), widget.NewSeparator()}, rows...)...)
		scroll := container.NewVScroll(container.NewPadded(box))
		for _, f := range fields {
			// An error or note appearing under a field pushes the rows
			// below it down; that takes a layout pass.
			f.relayout = func() {
				box.Refresh()
				scroll.Refresh()
			}
		}
		return scroll
	}
	v.tabs = container.NewAppTabs(
		container.NewTabItem("General", page("What the supervisor may do on its own, and when it considers a session stalled.", genRows, genFields)),
		container.NewTabItem("Notifications", page("The desktop is told at once; ntfy and a webhook reach you away from the desk. Secrets are stored owner-only and never shown.", noteRows, noteFields)),
		container.NewTabItem("Advanced", page("Cadence, retention and agent settings. The defaults suit multi-hour turns.", advRows, advFields)),
	)
	v.status = widget.NewLabel("")
	v.status.Wrapping = fyne.TextWrapWord
	v.save = widget.NewButtonWithIcon("Save", theme.DocumentSaveIcon(), v.saveAll)
	v.save.Importance = widget.HighImportance
	v.revert = widget.NewButtonWithIcon("Revert", theme.ContentUndoIcon(), v.revertAll)
	bar := container.NewBorder(nil, nil, nil, container.NewHBox(v.revert, v.save), v.status)
	var top fyne.CanvasObject
	if w.machines != nil {
		v.machine = widget.NewSelect(nil, v.chooseMachine)
		v.machineRow = container.NewBorder(nil, nil, fieldName("Settings of"), nil, v.machine)
		top = v.machineRow
	}
	v.content = container.NewBorder(top, container.NewVBox(widget.NewSeparator(), bar), nil, nil, v.tabs)
	v.load()
	return v
}

// settingsTab is a tab of Settings, in display order.
type settingsTab int

const (
	tabGeneral settingsTab = iota
	tabNotifications
	tabAdvanced
)

// tabOf is the tab a setting is on: the spec's knobs on General, the
// notify.* settings on Notifications, the rest on Advanced.
func tabOf(key string) settingsTab {
	switch {
	case slices.Contains(generalKeys, key):
		return tabGeneral
	case strings.HasPrefix(key, "notify."):
		return tabNotifications
	}
	return tabAdvanced
}

// newSettingField builds def's row; title overrides settingTitles (the
// agents' command settings are titled from the registry).
func newSettingField(def localapi.SettingDef, title string) *settingField {
	f := &settingField{def: def, errMsg: errorLabel(), note: widget.NewLabel(""), relayout: func() {}}
	f.note.Importance = widget.WarningImportance
	f.note.Wrapping = fyne.TextWrapWord
	f.note.Hide()

	if title == "" {
		title = settingTitles[def.Key]
	}
	if title == "" {
		title = def.Key
	}
	// Line one: the name, and the key the CLI and docs use; line two: the
	// registry's one-line explanation and the default.
	head := widget.NewRichText(
		&widget.TextSegment{Text: title, Style: widget.RichTextStyle{Inline: true, TextStyle: fyne.TextStyle{Bold: true}}},
		&widget.TextSegment{Text: "   " + def.Key, Style: mutedStyle()},
	)
	head.Truncation = fyne.TextTruncateEllipsis
	desc := mutedText(false)
	setMuted(desc, def.Description+"  ·  default: "+showValue(def, def.Default))

	var input fyne.CanvasObject
	if def.Kind.String() == "bool" {
		f.check = widget.NewCheck("On", nil)
		input = f.check
	} else {
		f.entry = widget.NewEntry()
		if def.Secret {
			// Shown only as set (the API masks it); typing replaces it,
			// emptying it turns what it configures off.
			f.entry = widget.NewPasswordEntry()
		}
		f.entry.OnChanged = func(string) { f.validate() }
		input = container.NewBorder(nil, nil, nil, fixedWidth(80, fieldName(unitOf(def))), f.entry)
	}
	text := container.New(layout.NewCustomPaddedVBoxLayout(-2*theme.Padding()), head, desc)
	f.row = container.NewVBox(
		container.NewBorder(nil, nil, nil, fixedWidth(230, container.NewCenter(fixedWidth(230, input))), text),
		f.errMsg, f.note,
	)
	return f
}

// unitOf names what a number counts, beside its entry.
func unitOf(def localapi.SettingDef) string {
	switch {
	case def.Kind.String() == "minutes":
		return "minutes"
	case def.Unit != "":
		return def.Unit
	}
	return ""
}

// showValue words a stored value for people: on/off for switches.
func showValue(def localapi.SettingDef, v string) string {
	if def.Kind.String() == "bool" {
		if v == "true" {
			return "on"
		}
		return "off"
	}
	if v == "" {
		return "none"
	}
	return v
}

// value is the field's input as the raw text SetSetting takes.
func (f *settingField) value() string {
	if f.check != nil {
		return strconv.FormatBool(f.check.Checked)
	}
	return strings.TrimSpace(f.entry.Text)
}

func (f *settingField) changed() bool { return f.value() != f.loaded }

// set shows v (the value in force) and forgets any error about the field.
func (f *settingField) set(v string) {
	f.loaded = v
	if f.check != nil {
		f.check.SetChecked(v == "true")
	} else {
		f.entry.SetText(v)
	}
	if setError(f.errMsg, "") {
		f.relayout()
	}
}

// validate shows an inline error for input SetSetting would refuse, with
// the allowed range, as the user types. SetSetting stays the authority: it
// checks again on Save, and its refusal is shown here too.
func (f *settingField) validate() bool {
	msg := checkSetting(f.def, f.value())
	if msg != "" {
		msg += " Allowed: " + f.def.Allowed() + "."
	}
	if setError(f.errMsg, msg) {
		f.relayout()
	}
	return msg == ""
}

// checkSetting mirrors the store's parse rules for immediate feedback: ""
// when raw is acceptable. Out-of-range numbers are acceptable when the
// setting clamps: the store moves them to the nearest bound and the note
// says so after saving.
func checkSetting(def localapi.SettingDef, raw string) string {
	in := strings.TrimSpace(raw)
	reject := def.Policy.String() == "reject"
	switch def.Kind.String() {
	case "bool":
		switch strings.ToLower(in) {
		case "true", "false", "yes", "no", "on", "off", "1", "0":
			return ""
		}
		return "Not on or off."
	case "int":
		n, err := strconv.ParseInt(in, 10, 64)
		if err != nil && !strings.Contains(err.Error(), "out of range") {
			return "Not a whole number."
		}
		if reject && (err != nil || float64(n) < def.Min || float64(n) > def.Max) {
			return "Out of range."
		}
	case "minutes":
		v, err := strconv.ParseFloat(in, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return "Not a number."
		}
		if reject && (v < def.Min || v > def.Max) {
			return "Out of range."
		}
	case "string":
		if in == "" && !def.Optional {
			return "Must not be empty."
		}
		if strings.ContainsFunc(in, unicode.IsControl) {
			return "Must be a single line."
		}
		if in != "" {
			if err := def.CheckFormat(in); err != nil {
				return upperFirst(err.Error()) + "."
			}
		}
	}
	return ""
}

// load reads the values in force. Fields the user has changed and not
// saved keep what was typed: a background refresh must not eat an edit.
func (v *settingsView) load() {
	v.showMachines()
	list := v.src.List()
	for _, sv := range list {
		f := v.byKey[sv.Key]
		if f == nil {
			continue
		}
		if f.loaded != "" && f.changed() {
			f.loaded = sv.Value
			continue
		}
		f.set(sv.Value)
		f.setNote(sv.Note)
	}
}

func (f *settingField) setNote(note string) {
	if f.note.Text == note && f.note.Visible() == (note != "") {
		return
	}
	f.note.SetText(note)
	if note == "" {
		f.note.Hide()
	} else {
		f.note.Show()
	}
	f.relayout()
}

// showMachines offers the machines configured now (machines add and rm
// while the window is open), the choice hidden when there are none; a
// machine removed while its settings were shown goes back to this one.
func (v *settingsView) showMachines() {
	if v.machine == nil {
		return
	}
	names := v.w.otherMachines()
	// The whole row: its label alone would introduce an empty choice.
	if len(names) == 0 {
		v.machineRow.Hide()
	} else {
		v.machineRow.Show()
	}
	opts := append([]string{model.LocalHeading}, names...)
	if !slices.Equal(opts, v.machine.Options) {
		v.machine.SetOptions(opts)
	}
	if v.machineName != "" && !slices.Contains(names, v.machineName) {
		v.show("", v.w.s)
		v.setStatus("Showing this machine's settings: "+v.machineName+" is no longer configured.", widget.MediumImportance)
	}
	if want := cmp.Or(v.machineName, model.LocalHeading); v.machine.Selected != want {
		v.machine.SetSelected(want)
	}
}

// chooseMachine shows the settings of the machine chosen; unsaved edits
// of the one shown before are dropped (they were that machine's). A
// machine whose link is down has none to show: the choice goes back.
func (v *settingsView) chooseMachine(label string) {
	machine := label
	if label == model.LocalHeading {
		machine = ""
	}
	if machine == v.machineName {
		return
	}
	if machine == "" {
		v.show("", v.w.s)
		v.setStatus("", widget.MediumImportance)
		return
	}
	src, err := v.w.machines.SettingsOf(machine)
	if err != nil {
		v.machine.SetSelected(cmp.Or(v.machineName, model.LocalHeading))
		v.setStatus("Cannot show "+machine+"'s settings: "+err.Error(), widget.DangerImportance)
		return
	}
	v.show(machine, src)
	v.setStatus("Showing "+machine+"'s settings: a Save changes them on "+machine+".", widget.MediumImportance)
}

// show puts machine's settings in every field, unsaved edits dropped.
func (v *settingsView) show(machine string, src SettingsBackend) {
	v.machineName, v.src = machine, src
	for _, f := range v.fields {
		f.loaded = ""
		setError(f.errMsg, "")
	}
	list := src.List()
	for _, sv := range list {
		if f := v.byKey[sv.Key]; f != nil {
			f.set(sv.Value)
			f.setNote(sv.Note)
		}
	}
	if v.test != nil {
		// The channels a test runs through are this desktop's.
		if machine == "" {
			v.test.Enable()
		} else {
			v.test.Disable()
		}
	}
}

// revertAll drops unsaved edits.
func (v *settingsView) revertAll() {
	for _, f := range v.fields {
		f.set(f.loaded)
	}
	v.setStatus("", widget.MediumImportance)
}

// saveAll saves every changed field, or none when any is invalid: half of
// an edit applied live (a new suspect threshold without its matching hard
// threshold) is worse than none.
func (v *settingsView) saveAll() {
	var changes []localapi.SettingChange
	invalid := 0
	for _, f := range v.fields {
		if !f.changed() {
			continue
		}
		if !f.validate() {
			invalid++
			continue
		}
		changes = append(changes, localapi.SettingChange{Key: f.def.Key, Raw: f.value()})
	}
	if invalid > 0 {
		v.showTabOf(func(f *settingField) bool { return f.errMsg.Visible() })
		v.setStatus(fmt.Sprintf("Not saved: %s to correct (in red).", plural(invalid, "value", "values")), widget.DangerImportance)
		return
	}
	if len(changes) == 0 {
		v.setStatus("Nothing to save.", widget.MediumImportance)
		return
	}
	var results []localapi.SetResult
	machine, src := v.machineName, v.src
	v.save.Disable()
	v.w.act(func(ctx context.Context) error {
		if machine != "" {
			// Asked again: a machine that went down since it was
			// chosen fails at once, saying so.
			var err error
			if src, err = v.w.machines.SettingsOf(machine); err != nil {
				return err
			}
		}
		// One update for the whole Save: all of it is stored, or none
		// (half an edit applied live — a new suspect threshold without
		// its matching hard threshold — is worse than none).
		var err error
		results, err = src.UpdateMany(ctx, changes)
		return err
	}, func(err error) {
		v.save.Enable()
		if err != nil {
			for _, c := range changes {
				if strings.Contains(err.Error(), c.Key) {
					f := v.byKey[c.Key]
					setError(f.errMsg, err.Error())
					f.relayout()
				}
			}
			v.setStatus("Not saved: "+err.Error(), widget.DangerImportance)
			return
		}
		for _, res := range results {
			f := v.byKey[res.Key]
			// Show what is in force; the note says when that differs from
			// what was typed (clamped, or raised by a cross-key rule).
			inForce := res.Value
			if res.InForce != "" {
				inForce = res.InForce
			}
			f.set(inForce)
			f.setNote(res.Note)
		}
		// The settings service publishes the change to its subscribers; a
		// snapshot now also lets the tray (Pause) and every other view
		// catch up at once.
		if machine != "" {
			// That machine's supervisor publishes its own change.
			v.setStatus(fmt.Sprintf("Saved %s on %s; its supervisor applies changes at its next tick.", plural(len(results), "setting", "settings"), machine), widget.SuccessImportance)
			return
		}
		v.w.b.PublishSnapshot()
		v.setStatus(fmt.Sprintf("Saved %s; the supervisor applies changes at its next tick.", plural(len(results), "setting", "settings")), widget.SuccessImportance)
	})
}

// showTabOf switches to the first tab holding a field that matches, so an
// error is never hidden on the other tab.
func (v *settingsView) showTabOf(match func(*settingField) bool) {
	for _, f := range v.fields {
		if match(f) {
			v.tabs.SelectIndex(int(tabOf(f.def.Key)))
			return
		}
	}
}

func (v *settingsView) setStatus(msg string, imp widget.Importance) {
	v.status.Importance = imp
	v.status.SetText(msg)
}

// upperFirst starts a sentence.
func upperFirst(s string) string {
	r := []rune(s)
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}

// sendTest sends a sample through every configured push channel (saved
// settings: save first) and shows how each went.
func (v *settingsView) sendTest() {
	v.test.Disable()
	v.testResult.Importance = widget.MediumImportance
	v.testResult.SetText("Sending…")
	v.w.async(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		receipts, err := v.w.notifyTest(ctx)
		v.w.do(func() {
			v.test.Enable()
			text, imp := testOutcome(receipts, err)
			v.testResult.Importance = imp
			v.testResult.SetText(text)
		})
	})
}

// testOutcome words a test's receipts: one clause per channel.
func testOutcome(receipts []localapi.PushReceipt, err error) (string, widget.Importance) {
	if err != nil {
		return upperFirst(err.Error()) + ".", widget.DangerImportance
	}
	var parts []string
	imp := widget.SuccessImportance
	for _, r := range receipts {
		if r.OK {
			parts = append(parts, r.Channel+": sent")
			continue
		}
		imp = widget.DangerImportance
		why := r.Error
		if why == "" {
			why = fmt.Sprintf("HTTP %d", r.Status)
		}
		parts = append(parts, r.Channel+": failed ("+why+")")
	}
	return strings.Join(parts, " · "), imp
}
