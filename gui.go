package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"time"

	"fyne.io/systray"

	"github.com/session-supervisor/session-supervisor/app"
	"github.com/session-supervisor/session-supervisor/assets"
	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/machines"
	"github.com/session-supervisor/session-supervisor/notify"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/supervisor"
	"github.com/session-supervisor/session-supervisor/tray"
	"github.com/session-supervisor/session-supervisor/ui/fleet"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// appID is the desktop application id (also in FyneApp.toml).
const appID = "io.github.sessionsupervisor"

// desktopSource is the supervisor as the desktop uses it: in process (the
// Runtime) or in another process over the local API (the Remote). The
// desktop code is the same for both.
type desktopSource interface {
	app.Backend
	Subscribe(buf int, resync bool) *localapi.Subscription
	Bus() *localapi.Bus
}

// desktopSettings is how the desktop reads and changes settings: the
// in-memory service in process, the Remote's mirror and requests attached.
type desktopSettings interface {
	app.SettingsBackend
	SetSetting(ctx context.Context, key, raw string) (settings.SetResult, error)
}

var (
	_ desktopSource   = (*supervisor.Runtime)(nil)
	_ desktopSource   = (*localapi.Remote)(nil)
	_ desktopSettings = (*settings.Service)(nil)
	_ desktopSettings = (*localapi.Remote)(nil)
)

// guiDeps is what the GUI is wired from.
type guiDeps struct {
	src      desktopSource
	settings desktopSettings
	// dataDir holds machines.json: the other machines the desktop also
	// shows (ui/fleet).
	dataDir string
	// act is where the window's and the tray's actions go: src for this
	// machine's sessions, the owning machine's supervisor for another's
	// (set by runGUI).
	act app.Backend
	// prices turns tokens into the equivalent API cost the window's list
	// shows (the data directory's table, read once at start).
	prices *pricing.Table
	// setShowWindow, in process, lets a second `run` bring the window
	// forward (POST /v1/show); nil when attached, where the supervisor
	// sends a show message on the stream instead.
	setShowWindow func(func())
	log           *slog.Logger
	quit          <-chan struct{}
	requestQuit   func()
	// showAtStart shows the window once the app started; otherwise only
	// the tray shows until the user opens the window.
	showAtStart bool
	// windowArgv starts the window process (windowArgv); stderr is
	// where it writes.
	windowArgv []string
	stderr     io.Writer
	// notifyTest sends a sample through the push channels (Settings →
	// Notifications → Send test), wherever the supervisor runs.
	notifyTest func(ctx context.Context) ([]localapi.PushReceipt, error)
	// pushStatus is the push channels' state for the window's banner;
	// nil attached (the supervisor's process reports it in its health).
	pushStatus func() *localapi.PushStatus
}

// haveDisplay reports whether a GUI can open here.
func haveDisplay() bool {
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd":
		return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
	}
	return true
}

// runDesktop runs the tray and the notifier until the user quits (the tray's
// Quit) or quit is closed (Ctrl-C, SIGTERM). The tray is fyne.io/systray
// driven directly, not Fyne: a desktop showing only its tray runs no GUI
// toolkit's event loop and maps no GL driver. The window is a process of
// its own (windowProc, `session-supervisor window`) started when it is
// asked for and ended with it; quitting ends it too.
//
// The tray renders from one model fed by the bus (ui/model), never from the
// database: the same messages the local API streams, so a desktop attached
// over the API, and the window process, feed their models the same way.
// Each loop (the model's feed, the tray, the notifier) runs in a goroutine
// owned here and awaited before returning.
func runDesktop(d guiDeps) {
	ctx, cancel := context.WithCancel(context.Background())
	var loops sync.WaitGroup
	defer func() {
		cancel()
		awaitLoops(&loops, d.log)
	}()

	var notes func(ctx context.Context, machine string, in <-chan localapi.Message)
	mdl, fl := startModel(ctx, &d, &loops, func(ctx context.Context, machine string, in <-chan localapi.Message) { notes(ctx, machine, in) })

	win := newWindowProc(d.windowArgv, nil, d.stderr, d.log)
	// Stopped before the loops are awaited: a loop may be telling it.
	defer win.Stop(windowStopGrace)
	open := func(c windowCommand) {
		if err := win.Send(c); err != nil && !errors.Is(err, errWindowStopped) {
			d.log.Warn("opening the window", "command", c.Verb, "err", err)
		}
	}
	// A second `run` asks this one to show its window.
	if d.setShowWindow != nil {
		d.setShowWindow(func() { open(windowCommand{Verb: winShow}) })
		defer d.setShowWindow(nil)
	} else {
		// Attached: a second `run` asks the supervisor, which asks us.
		shows := d.src.Bus().Subscribe(16)
		loops.Go(func() {
			defer d.src.Bus().Unsubscribe(shows)
			for {
				select {
				case <-ctx.Done():
					return
				case m, ok := <-shows.C:
					if !ok {
						return
					}
					if m.Type == localapi.MsgShow {
						open(windowCommand{Verb: winShow})
					}
				}
			}
		})
	}

	tr := tray.New(func(it tray.Item) { trayAction(ctx, d, mdl, open, &loops, it) })

	icon, _ := assets.AppIcon(64)
	notifier := notify.New(notify.Desktop, icon, nil, d.log)
	notifier.SetStartedAt(processStarted)
	var rich func(notify.Notification, []byte) error
	if notificationServiceReachable() && runtime.GOOS != "darwin" && runtime.GOOS != "windows" {
		// Where the notification service reports clicks, a click opens
		// the window on the notification's session.
		if c, err := notify.NewClickable("Session Supervisor", "session-supervisor"); err == nil {
			rich = c.Send
			notifier.SetRichSender(c.Send)
			defer c.Close()
			loops.Go(func() {
				for id := range c.Clicks() {
					open(windowCommand{Verb: winSession, Arg: id})
				}
			})
			loops.Go(func() {
				// Allow or Deny on a permission request's notification
				// answers exactly that request; one answered meanwhile
				// (in the window, the terminal) is refused and says so.
				for a := range c.Answers() {
					actx, cancel := context.WithTimeout(ctx, 30*time.Second)
					_, err := d.act.Answer(actx, a.SessionID, a.RequestID, a.Allow, "")
					cancel()
					if err != nil {
						open(windowCommand{Verb: winError, Arg: fmt.Sprintf("answering from the notification: %v", err)})
					}
				}
			})
			loops.Go(func() {
				for id := range c.Terminals() {
					s, err := mdl.Session(id)
					if err == nil {
						_, err = focusAnyTerminal(ctx, s)
					}
					if err != nil {
						open(windowCommand{Verb: winError, Arg: fmt.Sprintf("go to terminal: %v", err)})
					}
				}
			})
		}
	}
	local := d.src.Subscribe(notifyBuffer, false)
	loops.Go(func() {
		defer d.src.Bus().Unsubscribe(local)
		notifier.Run(ctx, local.C, func() bool { return mdl.Prefs().NotifyWaitingOnUser })
	})
	// Another machine's escalations are notified here, the machine named
	// in the title; each machine has its own notifier (its own rate limit:
	// a noisy machine does not hold back this one's).
	notes = func(ctx context.Context, machine string, in <-chan localapi.Message) {
		n := notify.New(notify.Desktop, icon, nil, d.log)
		n.SetStartedAt(processStarted)
		n.SetMachine(machine)
		if rich != nil {
			n.SetRichSender(rich)
		}
		n.Run(ctx, in, func() bool { return mdl.Prefs().NotifyWaitingOnUser })
	}
	loops.Go(func() { fl.Follow(ctx, d.dataDir, machinesReload) })

	if d.showAtStart {
		open(windowCommand{Verb: winShow})
	}
	// The tray follows the model from when systray reports it ready until
	// the quit; then its menu is removed (ending the click goroutines)
	// while the bus connection is still up, and only then systray stops.
	// A tray that failed to start returns from Run without being ready:
	// then there is nothing to remove.
	trayCtx, stopTray := context.WithCancel(ctx)
	trayDone, runOver := make(chan struct{}), make(chan struct{})
	loops.Go(func() {
		select {
		case <-d.quit:
		case <-ctx.Done():
		}
		stopTray()
		select {
		case <-trayDone:
			tr.Close()
		case <-runOver:
		}
		systray.Quit()
	})
	systray.Run(func() {
		defer close(trayDone)
		tr.Run(trayCtx, mdl)
	}, nil)
	close(runOver)
	d.requestQuit()
}

// startModel makes the model the tray or the window renders from: fed by
// d.src's stream, with d's settings, and the other machines (machines.json)
// under their own keys through the fleet, which then carries every action
// to the machine owning its session (d.act). notes, when set, runs another
// machine's notifications.
func startModel(ctx context.Context, d *guiDeps, loops *sync.WaitGroup, notes func(ctx context.Context, machine string, in <-chan localapi.Message)) (*model.Model, *fleet.Fleet) {
	mdl := model.New()
	loadPrefs(ctx, *d, mdl)
	feed := d.src.Subscribe(modelBuffer, false)
	// The subscription starts with a snapshot: applied here, the first
	// tray menu and window already show every session.
	mdl.Apply(<-feed.C)
	loops.Go(func() {
		defer d.src.Bus().Unsubscribe(feed)
		// A snapshot follows every settings change the desktop makes and
		// comes at least once a minute: the desktop's settings are re-read
		// there, not at each redraw.
		mdl.Run(ctx, feed.C, func() { loadPrefs(ctx, *d, mdl) })
	})
	fl := fleet.New(fleet.Options{Local: d.src, Model: mdl, Connect: machineConnector(*d), Log: d.log, Notes: notes})
	d.act = fl.Backend()
	return mdl, fl
}

// The subscriptions' queues. Overflowing one costs only incremental
// messages: the next snapshot is always delivered and repairs the model
// (which then reloads the open timeline).
const (
	modelBuffer  = 1024
	notifyBuffer = 256
)

// loopsDeadline bounds the wait for the GUI's loops at exit: a loop caught
// handing an update to Fyne after its main loop stopped must not keep the
// app from quitting.
const loopsDeadline = 3 * time.Second

func awaitLoops(loops *sync.WaitGroup, log *slog.Logger) {
	done := make(chan struct{})
	go func() { loops.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(loopsDeadline):
		log.Warn("GUI loops still running at exit", "waited", loopsDeadline)
	}
}

// loadPrefs reads the settings the desktop obeys into the model.
func loadPrefs(_ context.Context, d guiDeps, mdl *model.Model) {
	if list := d.settings.List(); len(list) > 0 {
		mdl.SetPrefs(model.PrefsFrom(list, mdl.Prefs()))
	}
}

// trayAction runs a tray click. Commands run off the tray's goroutine (in
// loops, awaited at exit) so a slow agent never freezes the menu; their
// errors are shown in the window (open starts it when it is not open).
func trayAction(ctx context.Context, d guiDeps, mdl *model.Model, open func(windowCommand), loops *sync.WaitGroup, it tray.Item) {
	switch it.Action {
	case tray.ActOpenWindow:
		open(windowCommand{Verb: winShow})
		return
	case tray.ActOpenSettings:
		open(windowCommand{Verb: winSettings})
		return
	case tray.ActOpenSession:
		open(windowCommand{Verb: winSession, Arg: it.SessionID})
		return
	case tray.ActQuit:
		d.requestQuit()
		return
	}
	loops.Go(func() {
		var err error
		switch it.Action {
		case tray.ActNudge:
			_, err = d.act.NudgeNow(ctx, it.SessionID)
		case tray.ActInterrupt:
			_, err = d.act.Interrupt(ctx, it.SessionID)
		case tray.ActAcknowledge:
			_, err = d.act.Ack(ctx, it.SessionID)
		case tray.ActResume:
			_, err = d.act.Resume(ctx, it.SessionID)
		case tray.ActToggleRecovery:
			// The check shows the model's value; turn it the other way.
			var s sessions.Session
			if s, err = mdl.Session(it.SessionID); err == nil {
				_, err = d.act.SetRecovery(ctx, it.SessionID, s.RecoveryOff)
			}
		case tray.ActContinueInTerminal:
			_, err = desktopHandover(d)(ctx, it.SessionID, false)
		case tray.ActGoToTerminal:
			var s sessions.Session
			if s, err = mdl.Session(it.SessionID); err == nil {
				_, err = focusAnyTerminal(ctx, s)
			}
		case tray.ActTogglePause:
			// The menu's check shows the model's value; toggle that.
			paused := mdl.Prefs().Paused
			if _, err = d.settings.SetSetting(ctx, "supervisor.enabled", strconv.FormatBool(paused)); err == nil {
				// The supervisor reads the setting at every tick; the
				// desktop shows it now, and a snapshot lets every other
				// view catch up.
				loadPrefs(ctx, d, mdl)
				d.src.PublishSnapshot()
			}
		}
		if err != nil {
			d.log.Warn("tray action failed", "action", it.Action, "err", err)
			open(windowCommand{Verb: winError, Arg: fmt.Sprintf("%s: %v", it.Label, err)})
		}
	})
}

// machinesReload is how often the desktop looks whether machines.json
// changed (a stat; `machines add` and `rm` while the app runs).
const machinesReload = 2 * time.Second

// machineConnector makes a machine's Remote over the user's ssh, the ssh
// command read from the settings at each (re)start of a machine.
// fleetMachines is the fleet as the window reaches other machines.
type fleetMachines struct{ *fleet.Fleet }

// SettingsOf is the machine's settings as the window edits them.
func (f fleetMachines) SettingsOf(machine string) (app.SettingsBackend, error) {
	s, err := f.Fleet.SettingsOf(machine)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func machineConnector(d guiDeps) func(machines.Machine) (fleet.Remote, func(), error) {
	return func(m machines.Machine) (fleet.Remote, func(), error) {
		setting := "ssh"
		for _, v := range d.settings.List() {
			if v.Key == machines.SSHCommandSetting {
				setting = v.Value
			}
		}
		ssh, err := machines.SplitCommand(setting)
		if err != nil {
			return nil, nil, err
		}
		cl := machines.Client(ssh, m)
		return localapi.NewMachineRemote(cl, d.log), cl.Close, nil
	}
}

// focusAnyTerminal brings a session's terminal forward; another machine's
// terminal is on that machine's screen, and saying so is all it can do.
func focusAnyTerminal(ctx context.Context, s sessions.Session) (string, error) {
	if machine, _ := model.SplitKey(s.ID); machine != "" {
		return "", fmt.Errorf("%s on %s: %w", s.DisplayName(), machine, fleet.ErrRemoteTerminal)
	}
	return focusTerminal(ctx, s)
}

// desktopHandover is "Continue in terminal" from the desktop: the terminal
// opens on its display or in the user's tmux, desktop.terminal read at
// each click.
func desktopHandover(d guiDeps) func(ctx context.Context, id string, interrupt bool) (string, error) {
	return func(ctx context.Context, id string, interrupt bool) (string, error) {
		terminal := ""
		for _, v := range d.settings.List() {
			if v.Key == desktopTerminalSetting {
				terminal = v.Value
			}
		}
		return handoverSession(ctx, d.act, id, interrupt, terminal)
	}
}

// openDir opens a directory in the desktop's file manager.
func openDir(path string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", path)
	case "windows":
		cmd = exec.Command("explorer", path)
	default:
		cmd = exec.Command("xdg-open", path)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// costText is the window's cost figure for a usage: its equivalent API cost
// priced with prices (the built-in table when nil), the total alone.
func costText(prices *pricing.Table) func(sessions.Usage) string {
	if prices == nil {
		prices = pricing.Builtin()
	}
	return func(u sessions.Usage) string { return prices.Cost(u).Total.String() }
}
