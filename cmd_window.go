package main

import (
	"context"
	"errors"
	"io"
	"sync"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	"github.com/session-supervisor/session-supervisor/app"
	"github.com/session-supervisor/session-supervisor/assets"
	"github.com/session-supervisor/session-supervisor/memtrim"
)

// cmdWindow is the window process (hidden: the desktop starts it, see
// windowproc.go). It attaches to the supervisor of the data directory over
// the local API, as an attached desktop does, and runs only the window: no
// tray, no notifier. It reads what to show from stdin and exits when its
// window is closed or stdin ends.
func cmdWindow(c *cli, args []string) error {
	fs := c.newFlags("window")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("window takes no arguments")
	}
	if !haveDisplay() {
		return errors.New("no display to open the window on")
	}
	dir, err := c.resolveDataDir()
	if err != nil {
		return err
	}
	d, stop := c.attach(dir)
	defer stop()
	// Opt-in, for measuring the window's idle cost (bench-idle).
	defer profileHook(d.log, "window")()
	runWindow(d, c.stdin)
	return nil
}

// runWindow runs the window on the main goroutine (Fyne requires it) until
// it is closed, commands ends or quit is closed. The window renders from a
// model of its own, fed like the tray's; each line of commands says what to
// show (windowCommand). The reader of commands is not awaited: a read from
// a pipe cannot be cut short, and the process exits right after.
func runWindow(d guiDeps, commands io.Reader) {
	a := fyneapp.NewWithID(appID)
	if icon, err := assets.AppIcon(256); err == nil {
		a.SetIcon(fyne.NewStaticResource("session-supervisor.png", icon))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var loops sync.WaitGroup
	defer func() {
		cancel()
		awaitLoops(&loops, d.log)
	}()
	// The other machines too: the window lists and acts on them (their
	// notifications are the tray process's).
	mdl, fl := startModel(ctx, &d, &loops, nil)
	loops.Go(func() { fl.Follow(ctx, d.dataDir, machinesReload) })
	win := app.NewWindow(a, d.act, d.settings, mdl, app.Options{OpenDir: openDir, Logger: d.log, Agents: agentInfos(), SettingDefs: settingsRegistry.Defs(),
		FocusTerminal: focusAnyTerminal, ContinueInTerminal: desktopHandover(d), NotifyTest: d.notifyTest, PushStatus: d.pushStatus, Cost: costText(d.prices),
		Machines: fleetMachines{fl}})
	loops.Go(func() { win.Run(ctx) })
	// What the first layout and each burst of redraws freed goes back to
	// the system once the window settles (memtrim's doc says why).
	loops.Go(func() { memtrim.New().Run(ctx) })
	// Closing the window ends this process: the tray starts another when
	// the window is asked for again.
	win.Window().SetCloseIntercept(a.Quit)
	a.Lifecycle().SetOnStarted(func() {
		go func() {
			readWindowCommands(commands, d.log, func(c windowCommand) { fyne.Do(func() { applyWindowCommand(win, c) }) })
			// The tray quit or died.
			fyne.Do(a.Quit)
		}()
	})
	// ranOut is closed once Fyne's loop has ended: the quit this process
	// then requests itself must not reach Fyne (a call after its loop
	// ended runs on the wrong goroutine).
	ranOut := make(chan struct{})
	loops.Go(func() {
		select {
		case <-d.quit:
			select {
			case <-ranOut:
			default:
				fyne.Do(a.Quit)
			}
		case <-ctx.Done():
		}
	})
	a.Run()
	close(ranOut)
	d.requestQuit()
}

// applyWindowCommand does what c asks of the window, on Fyne's goroutine.
func applyWindowCommand(win *app.Window, c windowCommand) {
	switch c.Verb {
	case winShow:
		win.Show()
	case winSession:
		win.ShowSession(c.Arg)
	case winSettings:
		win.ShowSettings()
	case winError:
		win.ShowError(errors.New(c.Arg))
	}
}
