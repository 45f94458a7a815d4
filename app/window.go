package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// Options configures a Window.
type Options struct {
	// OpenDir opens a directory in the desktop's file manager (main passes
	// one using xdg-open / open / explorer). Nil disables the action.
	OpenDir func(path string) error
	// Logger receives what the window cannot show (nil discards).
	Logger *slog.Logger
	// Now is the clock for ages and countdowns; tests fix it so goldens are
	// stable. Nil means time.Now. Timeline times are shown in its location.
	Now func() time.Time
	// Agents are the registry's agents, in display order: the New session
	// dialog offers them (the first preselected) and Settings titles their
	// command settings. The window names no agent itself.
	Agents []sessions.AgentInfo
	// SettingDefs are the settings registry's definitions, in display
	// order: what Settings shows and validates as the user types (the
	// running app's service stays the authority).
	SettingDefs []localapi.SettingDef
	// FocusTerminal brings the terminal a session runs in to the front and
	// says what it did ("Go to terminal"); it runs where the desktop is.
	// Nil hides the action.
	FocusTerminal func(ctx context.Context, s sessions.Session) (string, error)
	// ContinueInTerminal hands a managed session over to a terminal
	// (waiting for its turn, or interrupting it) and says what it did; it
	// runs where the desktop is. Nil hides the action.
	ContinueInTerminal func(ctx context.Context, id string, interrupt bool) (string, error)
	// NotifyTest sends a sample through every configured push channel
	// (Settings → Notifications → Send test). Nil hides the button.
	NotifyTest func(ctx context.Context) ([]localapi.PushReceipt, error)
	// PushStatus is the push channels' state, read at each redraw (cheap:
	// memory in process); the banner says when a channel failed. Nil
	// shows none.
	PushStatus func() *localapi.PushStatus
	// Cost is a session's tokens as their equivalent API cost in a few
	// characters ("$1.23"), priced by main with the data directory's
	// table. Nil hides the list's cost and time-left column.
	Cost func(sessions.Usage) string
	// Machines reach the other machines configured (machines.json): New
	// session and Settings then offer a choice of machine. Nil: this
	// machine only.
	Machines Machines
}

// Window is the app's one window: Sessions (list ↔ detail) and Settings.
// Closing it only hides it; the app lives in the tray.
//
// Every method except Run and ShowError must be called on Fyne's goroutine
// (from a Fyne callback or inside fyne.Do), like any Fyne widget call.
type Window struct {
	win fyne.Window
	b   Backend
	m   *model.Model
	s   SettingsBackend
	log *slog.Logger
	now func() time.Time
	dir func(string) error
	// agents are Options.Agents.
	agents []sessions.AgentInfo
	// settingDefs are Options.SettingDefs.
	settingDefs []localapi.SettingDef
	// focus is Options.FocusTerminal.
	focus func(ctx context.Context, s sessions.Session) (string, error)
	// handover is Options.ContinueInTerminal.
	handover func(ctx context.Context, id string, interrupt bool) (string, error)
	// notifyTest is Options.NotifyTest.
	notifyTest func(ctx context.Context) ([]localapi.PushReceipt, error)
	// pushStatus is Options.PushStatus.
	pushStatus func() *localapi.PushStatus
	// cost is Options.Cost.
	cost func(sessions.Usage) string
	// machines is Options.Machines.
	machines Machines

	// do runs f on Fyne's goroutine (fyne.Do); async runs a backend command
	// off it (go f()). Tests replace both with direct calls so a command and
	// its effect on the widgets happen in order, without sleeps.
	do    func(func())
	async func(func())

	tabs        *container.AppTabs
	sessionsTab *container.TabItem
	settingsTab *container.TabItem
	list        *sessionsView
	detail      *detailView
	settings    *settingsView
	newSession  *newSessionForm

	banner *widget.Label

	shown bool
	// next is where the window tells Run the next instant a text it
	// shows moves by itself (schedule).
	next  *model.Deadline
	ticks int
	// refreshes counts Refresh calls (tests check the coalescing).
	refreshes int
}

// The window's size: the list's columns and the detail's two panes are laid
// out for it.
const (
	windowWidth  = 1000
	windowHeight = 700
)

// NewWindow builds the window (hidden): it shows the model m, sends
// commands to b and edits settings through s.
func NewWindow(a fyne.App, b Backend, s SettingsBackend, m *model.Model, opts Options) *Window {
	w := &Window{
		win: a.NewWindow("Session Supervisor"),
		b:   recording{Backend: b, put: m.Put}, m: m,
		s: s, log: opts.Logger, now: opts.Now, dir: opts.OpenDir, agents: opts.Agents, settingDefs: opts.SettingDefs,
		focus: opts.FocusTerminal, handover: opts.ContinueInTerminal, notifyTest: opts.NotifyTest, pushStatus: opts.PushStatus, cost: opts.Cost, machines: opts.Machines,
		do:    fyne.Do,
		async: func(f func()) { go f() },
		next:  model.NewDeadline(),
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.now == nil {
		w.now = time.Now
	}
	w.list = newSessionsView(w)
	w.detail = newDetailView(w)

	// The sessions tab holds the list and the detail stacked; one of them
	// is visible. Keeping both built keeps the list's filter and keyboard
	// position when the user goes back from a detail.
	w.detail.content.Hide()
	sessionsPage := container.NewStack(w.list.content, w.detail.content)
	w.sessionsTab = container.NewTabItemWithIcon("Sessions", theme.ListIcon(), sessionsPage)
	// Settings is built the first time it is opened: its dozens of fields
	// and wrapped descriptions were nine tenths of the cost of building
	// the window (text shaping), paid at every start for a tab most
	// starts never show.
	w.settingsTab = container.NewTabItemWithIcon("Settings", theme.SettingsIcon(), container.NewStack())
	w.tabs = container.NewAppTabs(w.sessionsTab, w.settingsTab)
	w.tabs.OnSelected = func(t *container.TabItem) {
		if t == w.settingsTab {
			w.settingsView().load()
		} else {
			w.Refresh()
		}
	}
	// The banner says when the supervisor cannot be reached (a desktop
	// attached to a supervisor in another process); hidden otherwise.
	w.banner = widget.NewLabel("")
	w.banner.Importance = widget.DangerImportance
	w.banner.Wrapping = fyne.TextWrapWord
	w.banner.Hide()
	w.win.SetContent(container.NewBorder(w.banner, nil, nil, nil, w.tabs))
	w.win.Resize(fyne.NewSize(windowWidth, windowHeight))
	// Closing hides: the supervisor keeps running and the tray brings the
	// window back. Quit is the tray's.
	w.win.SetCloseIntercept(w.hide)
	// Escape goes back from a detail when no widget holds the focus (a
	// focused entry keeps its own keys).
	w.win.Canvas().SetOnTypedKey(func(ev *fyne.KeyEvent) {
		if ev.Name == fyne.KeyEscape && w.detail.content.Visible() {
			w.showList()
		}
	})
	w.Refresh()
	return w
}

// showLink shows or hides the banner: the model's link state (the window
// keeps its place, tab and open session, while the supervisor is away),
// else a push channel that failed.
func (w *Window) showLink() {
	text := w.m.LinkSentence(w.now())
	if text == "" && w.pushStatus != nil {
		text = pushSentence(w.pushStatus(), w.now())
	}
	if text == w.banner.Text && w.banner.Visible() == (text != "") {
		return
	}
	w.banner.SetText(text)
	if text == "" {
		w.banner.Hide()
	} else {
		w.banner.Show()
	}
}

// Window is the underlying Fyne window (for tests and for main's
// screenshots).
func (w *Window) Window() fyne.Window { return w.win }

// Show brings the window up on the Sessions tab, on the detail the user
// left open or else the list.
func (w *Window) Show() {
	w.present()
	w.tabs.Select(w.sessionsTab)
	if w.detail.content.Visible() {
		return
	}
	w.showList()
}

// ShowSession opens one session's detail (id or unique id prefix).
func (w *Window) ShowSession(id string) {
	w.present()
	w.tabs.Select(w.sessionsTab)
	if err := w.detail.open(id); err != nil {
		w.showList()
		w.showErrorNow(err)
		return
	}
	w.list.content.Hide()
	w.detail.content.Show()
	// The hidden list must not keep the keyboard (Enter would open another
	// session unseen); with nothing focused, Escape goes back and Tab
	// walks the detail.
	w.win.Canvas().Unfocus()
	w.schedule()
}

// ShowSettings opens Settings (the General tab stays where the user left
// it).
func (w *Window) ShowSettings() {
	w.present()
	w.tabs.Select(w.settingsTab)
	w.settingsView().load()
}

// otherMachines is the machines the window can reach besides this one
// (none without Options.Machines).
func (w *Window) otherMachines() []string {
	if w.machines == nil {
		return nil
	}
	return w.m.Machines()
}

// settingsView is Settings, built on first use (see NewWindow).
func (w *Window) settingsView() *settingsView {
	if w.settings == nil {
		w.settings = newSettingsView(w)
		w.settingsTab.Content = w.settings.content
		w.tabs.Refresh()
	}
	return w.settings
}

// ShowNewSession opens the new-session dialog over the sessions list.
func (w *Window) ShowNewSession() {
	w.present()
	w.tabs.Select(w.sessionsTab)
	w.showList()
	w.newSession = showNewSession(w)
}

// ShowError brings the window up with err in a dialog. It may be called
// from any goroutine: main reports failed tray commands with it.
func (w *Window) ShowError(err error) {
	if err == nil {
		return
	}
	w.do(func() {
		w.present()
		w.showErrorNow(err)
	})
}

func (w *Window) showErrorNow(err error) {
	w.log.Warn("window: showing an error", "err", err)
	dialog.ShowError(err, w.win)
}

// hide is what closing the window does.
func (w *Window) hide() {
	w.shown = false
	w.win.Hide()
	w.schedule()
}

// present shows the window (refreshed first, so it never flashes stale
// data) and raises it.
func (w *Window) present() {
	if !w.shown {
		w.shown = true
		w.Refresh()
	}
	w.win.Show()
	w.win.RequestFocus()
}

// showList returns from a detail to the list, keyboard focus on the list.
func (w *Window) showList() {
	w.detail.content.Hide()
	w.list.content.Show()
	w.list.focus()
	w.schedule()
}

// Refresh redraws from the model: the sessions, the open detail and its
// timeline. Settings, while on screen, is re-read through its own backend
// (the tray's Pause changes a setting too). Main may call it (on Fyne's
// goroutine); Run calls it coalesced after the model changes.
func (w *Window) Refresh() {
	w.refreshes++
	w.showLink()
	w.list.set(w.m.Sessions())
	if w.detail.content.Visible() {
		w.detail.refresh()
	}
	if w.tabs != nil && w.tabs.Selected() == w.settingsTab {
		w.settingsView().load()
	}
	w.schedule()
}

// tick runs at the instant Run was asked for (schedule): countdowns and
// ages move even when no event arrives.
func (w *Window) tick() {
	if !w.shown {
		return
	}
	w.ticks++
	w.showLink() // the reconnect countdown moves
	if w.detail.content.Visible() {
		w.detail.tick()
	}
	if w.list.content.Visible() {
		w.list.tick()
	}
}

// act runs a backend command off Fyne's goroutine, so a slow agent pipe or
// a busy database never freezes the window, then hands its error to after
// on Fyne's goroutine. Commands get a background context: Launch must not
// tie the new agent process to a request's lifetime.
func (w *Window) act(call func(ctx context.Context) error, after func(err error)) {
	w.async(func() {
		err := call(context.Background())
		w.do(func() { after(err) })
	})
}

// pushSentence is the banner's sentence for push channels that fail: what
// failed, when, and where to look; "" when every channel works.
func pushSentence(st *localapi.PushStatus, now time.Time) string {
	if st == nil {
		return ""
	}
	var parts []string
	for _, p := range st.Problems {
		parts = append(parts, fmt.Sprintf("%s is set but unusable (%s)", p.Channel, p.Error))
	}
	for _, f := range st.Failures {
		how := "retrying"
		if f.GaveUp {
			how = "gave up"
		}
		parts = append(parts, fmt.Sprintf("a push through %s failed %s ago (%s; %s)", f.Channel, sessions.Age(now, f.At), f.Error, how))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Notifications: " + strings.Join(parts, "; ") + ". Check Settings → Notifications, then Send test."
}
