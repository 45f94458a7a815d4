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
	trayOnly := fs.Bool("tray", false, "start in the tray, without showing the window (for starts at login)")
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

	// Under a service manager nobody watches a terminal: log to the journal
	// (systemd) or a rotating file in the data directory (launchd, Windows).
	log, logFile, err := packaging.NewLogger(launch, dir, c.stderr, slog.LevelInfo)
	if err != nil {
		return err
	}
	defer logFile.Close()

	// Catch Ctrl-C and SIGTERM before anyone can reach the app: from the
	// first request on, a quit must be the graceful one.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	d, err := startDaemon(dir, log)
	if err != nil {
		return err
	}
	log.Info("session supervisor running", "data_dir", dir, "pid", os.Getpid(), "version", version, "started_by", string(launch))
	if launch.Interactive() {
		fmt.Fprintf(c.stderr, "Session Supervisor is running (data directory %s). Ctrl-C quits.\n", dir)
	}

	// One watcher turns Ctrl-C/SIGTERM, the caller's interrupt and a fatal
	// server error into the quit; it ends with the run.
	q := newQuitter()
	runDone := make(chan struct{})
	var watchers sync.WaitGroup
	defer watchers.Wait()
	defer close(runDone)
	watchers.Add(1)
	go func() {
		defer watchers.Done()
		select {
		case <-sigs:
			q.request()
		case <-c.interrupt:
			q.request()
		case err := <-d.failed:
			q.fail(err)
		case <-runDone:
		}
	}()

	if !*headless && haveDisplay() {
		// The GUI owns the main goroutine until Quit (Fyne requires it).
		runGUI(guiDeps{rt: d.rt, settings: d.settings, api: d.api, log: log, quit: q.quit, requestQuit: q.request,
			showAtStart: showWindowAtStart(launch, *trayOnly)})
	} else {
		if !*headless {
			fmt.Fprintln(c.stderr, "No display found; running headless (the CLI and the local API work as usual).")
		}
		<-q.quit
	}

	// Graceful quit: let every turn in flight finish. A second Ctrl-C stops
	// waiting; under a service manager no second Ctrl-C will come, so stop
	// waiting before its own timeout kills the process mid-write.
	shutCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if fatal := q.err(); fatal != nil {
		cancel() // nothing graceful after a fatal error: release and report it
		_ = d.stop(shutCtx)
		return fatal
	}
	if launch.Interactive() {
		fmt.Fprintln(c.stderr, "Quitting: letting turns in flight finish (Ctrl-C again to stop now)…")
	} else {
		log.Info("quitting: letting turns in flight finish", "at_most", packaging.StopGrace)
		var cancelGrace context.CancelFunc
		shutCtx, cancelGrace = context.WithTimeout(shutCtx, packaging.StopGrace)
		defer cancelGrace()
	}
	watchers.Add(1)
	go func() {
		defer watchers.Done()
		select {
		case <-sigs:
			cancel()
		case <-shutCtx.Done():
		}
	}()
	if err := d.stop(shutCtx); err != nil && !isInterrupted(err) {
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		log.Warn("stopped waiting for agent turns", "err", err)
	}
	return nil
}

// showWindowAtStart: a start for the user at login (a service manager, the
// Windows logon entry or an autostart entry, which pass --tray) shows only
// the tray; `run` typed in a terminal or the launcher icon shows the window.
func showWindowAtStart(launch packaging.Launch, trayOnly bool) bool {
	return launch.Interactive() && !trayOnly
}
