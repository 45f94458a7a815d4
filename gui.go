package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/driver/desktop"

	"github.com/session-supervisor/session-supervisor/app"
	"github.com/session-supervisor/session-supervisor/assets"
	"github.com/session-supervisor/session-supervisor/notify"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor"
	"github.com/session-supervisor/session-supervisor/tray"
)

// appID is the desktop application id (also in FyneApp.toml).
const appID = "io.github.sessionsupervisor"

// guiDeps is what the GUI is wired from.
type guiDeps struct {
	rt          *supervisor.Runtime
	settings    *storage.SettingsService
	api         *supervisor.API
	log         *slog.Logger
	quit        <-chan struct{}
	requestQuit func()
}

// haveDisplay reports whether a GUI can open here.
func haveDisplay() bool {
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd":
		return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
	}
	return true
}

// runGUI runs the tray, the window and the notifier on the main goroutine
// until the user quits (the tray's Quit, closing is only hiding) or quit is
// closed (Ctrl-C, SIGTERM).
func runGUI(d guiDeps) {
	a := fyneapp.NewWithID(appID)
	if icon, err := assets.AppIcon(256); err == nil {
		a.SetIcon(fyne.NewStaticResource("session-supervisor.png", icon))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	win := app.NewWindow(a, d.rt, d.settings, app.Options{OpenDir: openDir, Logger: d.log, Agents: agentInfos()})
	go win.Run(ctx)
	// A second `run` asks this one to show its window.
	d.api.SetShowWindow(func() { fyne.Do(win.Show) })
	defer d.api.SetShowWindow(nil)

	if desk, ok := a.(desktop.App); ok {
		tr := tray.New(desk, func(it tray.Item) { trayAction(ctx, d, win, it) })
		// The first menu is set here, on the main goroutine before Run:
		// Fyne starts the tray when the first menu is set, and quitting
		// before that crashes inside systray.
		tr.Show(tray.Build(traySnapshot(ctx, d)))
		changes := watchChanges(ctx, d.rt.Bus())
		go tray.Coalesce(ctx, changes, 250*time.Millisecond, 30*time.Second, func() {
			m := tray.Build(traySnapshot(ctx, d))
			fyne.Do(func() { tr.Show(m) })
		})
	}

	icon, _ := assets.AppIcon(64)
	notifier := notify.New(notify.Desktop, icon, d.rt.Sessions(), d.log)
	go runNotifier(ctx, d, notifier)

	go func() {
		select {
		case <-d.quit:
			fyne.Do(a.Quit)
		case <-ctx.Done():
		}
	}()
	a.Lifecycle().SetOnStarted(func() { win.Show() })
	a.Run()
	d.requestQuit()
}

// traySnapshot is what the tray shows now.
func traySnapshot(ctx context.Context, d guiDeps) tray.Snapshot {
	set, err := d.settings.LoadSettings(ctx)
	paused := err == nil && !set.Enabled
	return tray.Snapshot{Sessions: d.rt.Sessions(), Paused: paused, Now: time.Now()}
}

// watchChanges turns bus traffic into a change signal that never blocks the
// bus: one pending signal is enough for the coalescer.
func watchChanges(ctx context.Context, bus *supervisor.Bus) <-chan struct{} {
	out := make(chan struct{}, 1)
	sub := bus.Subscribe(64)
	go func() {
		defer bus.Unsubscribe(sub)
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-sub.C:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}

// runNotifier feeds every session change (and every snapshot, which repairs
// missed messages) to the notifier.
func runNotifier(ctx context.Context, d guiDeps, n *notify.Notifier) {
	bus := d.rt.Bus()
	sub := bus.Subscribe(256)
	defer bus.Unsubscribe(sub)
	const settingsEvery = 5 * time.Second
	waiting, readAt := true, time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-sub.C:
			if !ok {
				return
			}
			var list []sessions.Session
			switch m.Type {
			case supervisor.MsgSession, supervisor.MsgEscalation:
				list = []sessions.Session{*m.Session}
			case supervisor.MsgSnapshot:
				list = m.Sessions
			}
			if len(list) == 0 {
				continue
			}
			// The setting is re-read at most every few seconds, not for
			// every stream event.
			if now := time.Now(); now.Sub(readAt) >= settingsEvery {
				if set, err := d.settings.LoadSettings(ctx); err == nil {
					waiting = set.NotifyWaitingOnUser
				}
				readAt = now
			}
			for _, s := range list {
				n.Observe(s, waiting, time.Now())
			}
		}
	}
}

// trayAction runs a tray click. Commands run off Fyne's goroutine so a slow
// agent never freezes the menu; their errors are shown in the window.
func trayAction(ctx context.Context, d guiDeps, win *app.Window, it tray.Item) {
	switch it.Action {
	case tray.ActOpenWindow:
		win.Show()
		return
	case tray.ActOpenSettings:
		win.ShowSettings()
		return
	case tray.ActOpenSession:
		win.ShowSession(it.SessionID)
		return
	case tray.ActQuit:
		d.requestQuit()
		return
	}
	go func() {
		var err error
		switch it.Action {
		case tray.ActNudge:
			_, err = d.rt.NudgeNow(ctx, it.SessionID)
		case tray.ActInterrupt:
			_, err = d.rt.Interrupt(ctx, it.SessionID)
		case tray.ActAcknowledge:
			_, err = d.rt.Ack(ctx, it.SessionID)
		case tray.ActTogglePause:
			var set storage.Settings
			if set, err = d.settings.LoadSettings(ctx); err == nil {
				_, err = d.settings.SetSetting(ctx, "supervisor.enabled", strconv.FormatBool(!set.Enabled))
				// The setting is read at every tick; re-render the tray now.
				d.rt.PublishSnapshot()
			}
		}
		if err != nil {
			d.log.Warn("tray action failed", "action", it.Action, "err", err)
			win.ShowError(fmt.Errorf("%s: %w", it.Label, err))
		}
	}()
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
