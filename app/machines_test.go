package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// devbox is another machine as the window reaches it (the fleet's part,
// tested in ui/fleet): its settings a real service over its own store,
// its launches recorded and answered as the machine's supervisor would,
// and down when the test says so, failing at once as the fleet does.
type devbox struct {
	settings *settings.Service
	down     bool
	launched []localapi.LaunchRequest
}

var errDevboxDown = errors.New("machine devbox is unreachable: ssh: connect to host devbox port 22: Connection refused")

func (d *devbox) LaunchOn(_ context.Context, machine string, req localapi.LaunchRequest) (sessions.Session, error) {
	if machine != "devbox" || d.down {
		return sessions.Session{}, errDevboxDown
	}
	d.launched = append(d.launched, req)
	return sessions.Session{ID: model.Key(machine, "n1"), Name: req.Name, Agent: req.Agent, Cwd: req.Cwd, State: sessions.Working}, nil
}

func (d *devbox) SettingsOf(machine string) (SettingsBackend, error) {
	if machine != "devbox" || d.down {
		return nil, errDevboxDown
	}
	return d.settings, nil
}

// newMachinesEnv is a window on this machine with devbox configured.
func newMachinesEnv(t *testing.T, list []sessions.Session) (*env, *devbox) {
	t.Helper()
	st, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &devbox{}
	if d.settings, err = settings.NewService(context.Background(), testSettings, st); err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, list, nil, func(o *Options) { o.Machines = d })
	e.m.SetMachines([]string{"devbox"})
	return e, d
}

// New session offers the machines configured; a folder on another
// machine is not looked for on this disk (that machine's supervisor
// checks it), the folder picker (this disk's) is off for it, and the
// launch goes to that machine, its session opened under its key.
func TestNewSessionOnAnotherMachine(t *testing.T) {
	remote := seed()[5]
	remote.ID = model.Key("devbox", "r9")
	remote.Cwd = "/srv/devbox-app"
	e, d := newMachinesEnv(t, []sessions.Session{seed()[0]})
	e.m.Put(remote)
	e.refresh()
	e.w.ShowNewSession()
	f := e.w.newSession
	if f.machine == nil || strings.Join(f.machine.Options, ",") != "This machine,devbox" || f.machine.Selected != "This machine" {
		t.Fatalf("machine choice: %+v", f.machine)
	}
	if f.cwd.Text != "/home/dev/src/refactor-auth" {
		t.Errorf("folder %q, want this machine's last", f.cwd.Text)
	}
	f.machine.SetSelected("devbox")
	if f.cwd.Text != "/srv/devbox-app" {
		t.Errorf("folder %q after choosing devbox, want its last session's", f.cwd.Text)
	}
	if !f.browse.Disabled() {
		t.Error("the folder picker (this machine's disk) is on for devbox")
	}
	f.cwd.SetText("srv/app")
	f.prompt.SetText("go")
	test.Tap(f.launch)
	if !strings.Contains(f.cwdErr.Text, "absolute path on that machine") || len(d.launched) != 0 {
		t.Fatalf("relative folder on devbox: %q, launched %v", f.cwdErr.Text, d.launched)
	}

	// Down: the dialog says why and stays open.
	d.down = true
	f.cwd.SetText("/srv/not-on-this-disk")
	test.Tap(f.launch)
	if f.cwdErr.Visible() || !strings.Contains(f.launchErr.Text, "devbox is unreachable") {
		t.Fatalf("launch on devbox down: folder %q, launch %q", f.cwdErr.Text, f.launchErr.Text)
	}
	d.down = false
	test.Tap(f.launch)
	if len(d.launched) != 1 || d.launched[0].Cwd != "/srv/not-on-this-disk" || d.launched[0].Prompt != "go" {
		t.Fatalf("devbox launched %+v", d.launched)
	}
	if len(e.rt.Sessions()) != 1 {
		t.Errorf("this machine has %d sessions, want its one", len(e.rt.Sessions()))
	}
	if e.w.detail.id != "n1@devbox" {
		t.Errorf("detail on %q, want devbox's new session", e.w.detail.id)
	}
	if _, err := e.m.Session("n1@devbox"); err != nil {
		t.Errorf("the model lacks the new session: %v", err)
	}

	// Back on this machine the picker works again.
	e.w.ShowNewSession()
	f = e.w.newSession
	f.machine.SetSelected("devbox")
	f.machine.SetSelected("This machine")
	if f.browse.Disabled() {
		t.Error("the folder picker is off for this machine")
	}
}

// With no other machine the dialog has no machine row.
func TestNewSessionWithoutMachinesHasNoChoice(t *testing.T) {
	e, _ := newMachinesEnv(t, nil)
	e.m.SetMachines(nil)
	e.w.ShowNewSession()
	if e.w.newSession.machine != nil {
		t.Fatal("a machine choice with no machine configured")
	}
}

// Settings shows the chosen machine's values and saves there, never here;
// a machine that is down cannot be chosen and says why.
func TestSettingsOfAnotherMachine(t *testing.T) {
	e, d := newMachinesEnv(t, nil)
	const key = "supervisor.stall_suspect_minutes"
	if _, err := d.settings.Update(e.ctx, key, "25"); err != nil {
		t.Fatal(err)
	}
	e.w.ShowSettings()
	v := e.w.settingsView()
	if !v.machineRow.Visible() || strings.Join(v.machine.Options, ",") != "This machine,devbox" {
		t.Fatalf("machine choice: visible %v, %q", v.machineRow.Visible(), v.machine.Options)
	}
	local := v.byKey[key].value()
	typeInto(v.byKey[key], "13") // an edit of this machine's, dropped by the switch
	v.machine.SetSelected("devbox")
	if got := v.byKey[key].value(); got != "25" {
		t.Fatalf("devbox's suspect threshold shown as %q, want 25", got)
	}
	if !v.test.Disabled() {
		t.Error("Send test (this desktop's channels) is on while devbox is shown")
	}
	typeInto(v.byKey[key], "40")
	test.Tap(v.save)
	if got, _ := d.settings.Value(key); got.Value != "40" {
		t.Fatalf("devbox stored %q, want 40", got.Value)
	}
	if got := e.stored(key); got == "40" || got == "13" {
		t.Fatalf("this machine stored %q: devbox's Save (or the dropped edit) landed here", got)
	}
	if !strings.Contains(v.status.Text, "Saved 1 setting on devbox") {
		t.Errorf("status %q", v.status.Text)
	}
	// A refresh (a message arrived) keeps showing devbox's values.
	e.refresh()
	if got := v.byKey[key].value(); got != "40" {
		t.Errorf("after a refresh the field shows %q, want devbox's 40", got)
	}

	// Down since it was chosen: the Save fails at once, saying why.
	d.down = true
	typeInto(v.byKey[key], "41")
	test.Tap(v.save)
	if !strings.Contains(v.status.Text, "devbox is unreachable") {
		t.Errorf("save on devbox down: status %q", v.status.Text)
	}
	v.machine.SetSelected("This machine")
	if got := v.byKey[key].value(); got != local {
		t.Errorf("this machine's value shown as %q, want %q", got, local)
	}
	v.machine.SetSelected("devbox")
	if v.machine.Selected != "This machine" || !strings.Contains(v.status.Text, "Cannot show devbox's settings") {
		t.Errorf("choosing devbox down: selected %q, status %q", v.machine.Selected, v.status.Text)
	}

	// devbox removed while the window is open: the choice goes.
	e.m.SetMachines(nil)
	e.refresh()
	if v.machineRow.Visible() {
		t.Error("machine choice (or its \"Settings of\" label) shown with no machine configured")
	}
}
