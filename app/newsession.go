package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	fynestorage "fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// permissionModes are Claude Code's permission modes (the values of its
// --permission-mode flag). The agents come from the registry
// (Options.Agents).
var permissionModes = []string{"default", "acceptEdits", "plan", "bypassPermissions"}

// newSessionForm is the New session dialog: it validates inline and stays
// open until the launch succeeds or the user cancels.
type newSessionForm struct {
	w *Window
	// machine chooses where the session runs: shown only when other
	// machines are configured (nil otherwise: this machine).
	machine   *widget.Select
	agent     *widget.Select
	cwd       *widget.Entry
	browse    *widget.Button
	name      *widget.Entry
	mode      *widget.Select
	prompt    *widget.Entry
	cwdErr    *widget.Label
	promptErr *widget.Label
	launchErr *widget.Label
	// proposed is the folder the form filled in, to tell it from one typed.
	proposed string
	launch   *widget.Button
	cancel   *widget.Button
	body     *fyne.Container
	dlg      *dialog.CustomDialog
}

// fieldError is an inline error label and what it should say ("" hides).
type fieldError struct {
	label *widget.Label
	msg   string
}

// showErrors sets the labels and lays the form out again when any changed:
// an error appearing must push the fields below it down.
func (f *newSessionForm) showErrors(errs ...fieldError) {
	changed := false
	for _, e := range errs {
		if setError(e.label, e.msg) {
			changed = true
		}
	}
	if changed && f.body != nil {
		f.body.Refresh()
	}
}

func showNewSession(w *Window) *newSessionForm {
	f := &newSessionForm{w: w}
	// The choice shows each agent's display name; the request carries its
	// registry name.
	var labels []string
	for _, a := range w.agents {
		labels = append(labels, a.DisplayName())
	}
	f.agent = widget.NewSelect(labels, nil)
	if len(labels) > 0 {
		f.agent.SetSelected(labels[0])
	}
	f.cwd = widget.NewEntry()
	f.cwd.SetPlaceHolder("/path/to/project")
	// People mostly start the next session where they started the last one.
	f.proposed = lastFolder(w.list.all, "")
	f.cwd.SetText(f.proposed)
	f.browse = widget.NewButtonWithIcon("Choose…", theme.FolderOpenIcon(), f.pickFolder)
	if names := w.otherMachines(); len(names) > 0 {
		f.machine = widget.NewSelect(append([]string{model.LocalHeading}, names...), nil)
		f.machine.SetSelected(model.LocalHeading)
		f.machine.OnChanged = f.machineChosen
	}
	f.name = widget.NewEntry()
	f.name.SetPlaceHolder("optional, e.g. refactor-auth")
	f.mode = widget.NewSelect(permissionModes, nil)
	f.mode.SetSelected(permissionModes[0])
	f.prompt = widget.NewMultiLineEntry()
	f.prompt.Wrapping = fyne.TextWrapWord
	f.prompt.SetPlaceHolder("What should the agent do?")
	f.prompt.SetMinRowsVisible(6)
	f.cwdErr, f.promptErr, f.launchErr = errorLabel(), errorLabel(), errorLabel()
	// Errors clear as soon as the user fixes the field, not only on Launch.
	f.cwd.OnChanged = func(string) { f.showErrors(fieldError{f.cwdErr, ""}) }
	f.prompt.OnChanged = func(string) { f.showErrors(fieldError{f.promptErr, ""}) }

	var rows []fyne.CanvasObject
	if f.machine != nil {
		rows = append(rows, fieldName("Machine"), f.machine)
	}
	form := container.New(layout.NewFormLayout(), append(rows,
		fieldName("Agent"), f.agent,
		fieldName("Folder"), container.NewVBox(container.NewBorder(nil, nil, nil, f.browse, f.cwd), f.cwdErr),
		fieldName("Name"), f.name,
		fieldName("Permissions"), f.mode,
		fieldName("Prompt"), container.NewVBox(f.prompt, f.promptErr),
	)...)
	f.launch = widget.NewButtonWithIcon("Launch", theme.MediaPlayIcon(), f.submit)
	f.launch.Importance = widget.HighImportance
	f.cancel = widget.NewButton("Cancel", func() { f.dlg.Hide() })
	f.body = container.NewVBox(form, f.launchErr)
	f.dlg = dialog.NewCustomWithoutButtons("New session", f.body, w.win)
	f.dlg.SetButtons([]fyne.CanvasObject{f.cancel, f.launch})
	f.dlg.Resize(fyne.NewSize(640, 560))
	f.dlg.Show()
	w.win.Canvas().Focus(f.prompt)
	return f
}

// machineName is the machine chosen ("" for this one).
func (f *newSessionForm) machineName() string {
	if f.machine == nil || f.machine.Selected == model.LocalHeading {
		return ""
	}
	return f.machine.Selected
}

// machineChosen follows a change of machine: the folder picker browses
// this machine's disk only, and a folder still as the form proposed it
// becomes the new machine's last one.
func (f *newSessionForm) machineChosen(string) {
	machine := f.machineName()
	if machine == "" {
		f.browse.Enable()
	} else {
		f.browse.Disable()
	}
	if f.proposed == f.cwd.Text {
		f.proposed = lastFolder(f.w.list.all, machine)
		f.cwd.SetText(f.proposed)
	}
	f.showErrors(fieldError{f.cwdErr, ""}, fieldError{f.launchErr, ""})
}

// agentName is the registry name of the agent chosen ("" when none).
func (f *newSessionForm) agentName() string {
	for _, a := range f.w.agents {
		if a.DisplayName() == f.agent.Selected {
			return a.Name()
		}
	}
	return ""
}

// request is what the form asks for.
func (f *newSessionForm) request() localapi.LaunchRequest {
	return localapi.LaunchRequest{
		Agent:          f.agentName(),
		Cwd:            strings.TrimSpace(f.cwd.Text),
		Name:           strings.TrimSpace(f.name.Text),
		PermissionMode: f.mode.Selected,
		Prompt:         f.prompt.Text,
	}
}

// validateLaunch checks what the backend would refuse, in words for the
// field concerned. Empty strings mean valid. Another machine's folder is
// not on this disk: that machine's supervisor checks it (remote).
func validateLaunch(req localapi.LaunchRequest, remote bool) (cwdErr, promptErr string) {
	switch fi, err := os.Stat(req.Cwd); {
	case req.Cwd == "":
		cwdErr = "Choose the folder the agent works in."
	case !filepath.IsAbs(req.Cwd) && remote:
		cwdErr = "Use an absolute path on that machine."
	case !filepath.IsAbs(req.Cwd):
		cwdErr = "Use an absolute path (or Choose… a folder)."
	case remote:
	case err != nil:
		cwdErr = "This folder does not exist."
	case !fi.IsDir():
		cwdErr = "This is a file, not a folder."
	}
	if strings.TrimSpace(req.Prompt) == "" {
		promptErr = "Write the first prompt: a session starts with a turn."
	}
	return cwdErr, promptErr
}

// submit validates, launches and opens the new session's detail.
func (f *newSessionForm) submit() {
	req, machine := f.request(), f.machineName()
	cwdErr, promptErr := validateLaunch(req, machine != "")
	f.showErrors(fieldError{f.cwdErr, cwdErr}, fieldError{f.promptErr, promptErr}, fieldError{f.launchErr, ""})
	if cwdErr != "" || promptErr != "" {
		return
	}
	f.launch.Disable() // one launch per click, however slow the agent starts
	var s sessions.Session
	f.w.act(func(ctx context.Context) error {
		var err error
		if machine == "" {
			s, err = f.w.b.Launch(ctx, req)
			return err
		}
		if s, err = f.w.machines.LaunchOn(ctx, machine, req); err == nil {
			// As the window's Backend does for this machine: the session
			// is in the model before its machine's message arrives.
			f.w.m.Put(s)
		}
		return err
	}, func(err error) {
		f.launch.Enable()
		if err != nil {
			f.showErrors(fieldError{f.launchErr, "Could not launch: " + err.Error()})
			return
		}
		f.dlg.Hide()
		f.w.Refresh()
		f.w.ShowSession(s.ID)
	})
}

// pickFolder opens the folder picker at the folder typed so far.
func (f *newSessionForm) pickFolder() {
	pick := dialog.NewFolderOpen(func(uri fyne.ListableURI, err error) {
		if err != nil {
			f.showErrors(fieldError{f.cwdErr, err.Error()})
			return
		}
		if uri != nil {
			f.cwd.SetText(uri.Path())
		}
	}, f.w.win)
	if dir := strings.TrimSpace(f.cwd.Text); dir != "" {
		if l, err := fynestorage.ListerForURI(fynestorage.NewFileURI(dir)); err == nil {
			pick.SetLocation(l)
		}
	}
	pick.Resize(fyne.NewSize(760, 520))
	pick.Show()
}

// lastFolder is the folder of machine's most recently created session.
func lastFolder(list []sessions.Session, machine string) string {
	var best sessions.Session
	for _, s := range list {
		if m, _ := model.SplitKey(s.ID); m != machine {
			continue
		}
		if s.Cwd != "" && s.CreatedAt.After(best.CreatedAt) {
			best = s
		}
	}
	return best.Cwd
}
