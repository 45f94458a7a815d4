package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/session-supervisor/session-supervisor/packaging"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor"
)

func cmdRun(c *cli, args []string) error {
	fs := c.newFlags("run")
	headless := fs.Bool("headless", false, "run without the GUI")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("run takes no arguments")
	}
	launch := packaging.DetectLaunch()
	if launch == packaging.LaunchWindowsService && c.interrupt == nil {
		// The service control manager gives a service seconds to start its
		// dispatcher: hand it the process first and run this same command
		// inside it, stopped through c.interrupt.
		return packaging.RunWindowsService(func(stop <-chan struct{}) error {
			sc := *c
			sc.interrupt = stop
			return cmdRun(&sc, args)
		})
	}

	dir, err := c.resolveDataDir()
	if err != nil {
		return err
	}
	if err := storage.EnsureDir(dir); err != nil {
		return err
	}
	lock, err := supervisor.AcquireLock(dir)
	var locked *supervisor.LockedError
	if errors.As(err, &locked) {
		// Another instance holds the data directory: hand over to it
		// (cmd_service.go), exiting 0 when it answers.
		if lock, err = c.handOver(dir, locked, launch); err == nil && lock == nil {
			return nil
		}
	}
	if err != nil {
		return err
	}
	defer lock.Release()

	st, err := storage.Open(dir)
	if err != nil {
		return err
	}
	defer st.Close()

	// Under a service manager nobody watches a terminal: log to the journal
	// (systemd) or a rotating file in the data directory (launchd, Windows).
	log, logFile, err := packaging.NewLogger(launch, dir, c.stderr, slog.LevelInfo)
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctx := context.Background()
	// Settings are read once and served from memory; every change (API,
	// window, tray) goes through this one service.
	settings, err := storage.NewSettingsService(ctx, st)
	if err != nil {
		return err
	}
	rt := supervisor.New(supervisor.Options{
		Store:  memorySettings{st, settings},
		Agents: agents(),
		Logger: log,
	})
	if err := rt.Boot(ctx); err != nil {
		return err
	}
	// Catch Ctrl-C and SIGTERM before anyone can reach the app: from the
	// first request on, a quit must be the graceful one.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	api, err := supervisor.Listen(rt, settings, dir, version)
	if err != nil {
		return err
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- api.Serve() }()

	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	go func() { rt.Run(loopCtx); close(loopDone) }()

	log.Info("session supervisor running", "data_dir", dir, "pid", os.Getpid(), "version", version, "started_by", string(launch))
	if launch.Interactive() {
		fmt.Fprintf(c.stderr, "Session Supervisor is running (data directory %s). Ctrl-C quits.\n", dir)
	}

	// quit is closed by Ctrl-C/SIGTERM, by the tray's Quit, or by tests.
	quit := make(chan struct{})
	var quitOnce sync.Once
	requestQuit := func() { quitOnce.Do(func() { close(quit) }) }
	go func() {
		select {
		case <-sigs:
		case <-c.interrupt:
		}
		requestQuit()
	}()
	var fatal error
	go func() {
		if err := <-serveErr; err != nil {
			fatal = err
			requestQuit()
		}
	}()
	if !*headless && haveDisplay() {
		// The GUI owns the main goroutine until Quit (Fyne requires it).
		runGUI(guiDeps{rt: rt, settings: settings, api: api, log: log, quit: quit, requestQuit: requestQuit})
	} else {
		if !*headless {
			fmt.Fprintln(c.stderr, "No display found; running headless (the CLI and the local API work as usual).")
		}
		<-quit
	}
	if fatal != nil {
		stopLoop()
		<-loopDone
		return fatal
	}
	// Graceful quit: stop deciding, stop serving, let every turn in flight
	// finish. A second Ctrl-C stops waiting.
	stopLoop()
	<-loopDone
	api.Close()
	shutCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if launch.Interactive() {
		fmt.Fprintln(c.stderr, "Quitting: letting turns in flight finish (Ctrl-C again to stop now)…")
	} else {
		// No second Ctrl-C will come: stop waiting before the service
		// manager's own timeout kills the process mid-write.
		log.Info("quitting: letting turns in flight finish", "at_most", packaging.StopGrace)
		var cancelGrace context.CancelFunc
		shutCtx, cancelGrace = context.WithTimeout(shutCtx, packaging.StopGrace)
		defer cancelGrace()
	}
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-shutCtx.Done():
		}
	}()
	if err := rt.Shutdown(shutCtx); err != nil && !errors.Is(err, context.Canceled) {
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		log.Warn("stopped waiting for agent turns", "err", err)
	}
	return nil
}

// memorySettings is the store the runtime uses, with its settings reads
// served from the settings service's memory instead of SQLite (the loop
// reads them every round). A bridge until the runtime takes the service
// itself.
type memorySettings struct {
	*storage.Store
	settings *storage.SettingsService
}

func (m memorySettings) LoadSettings(context.Context) (storage.Settings, error) {
	return m.settings.Get(), nil
}
