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
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/packaging"
	"github.com/session-supervisor/session-supervisor/storage"
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
	lock, err := storage.AcquireLock(dir)
	var locked *storage.LockedError
	if errors.As(err, &locked) {
		// Another instance holds the data directory: hand over to it
		// (cmd_service.go), exiting 0 when it answers; a desktop start that
		// finds it without a window attaches to it instead.
		canAttach := !*headless && haveDisplay() && launch != packaging.LaunchWindowsService
		var attach bool
		if lock, attach, err = c.handOver(dir, locked, launch, canAttach, *trayOnly); err == nil && lock == nil {
			if attach {
				return c.runAttached(dir, launch, *trayOnly)
			}
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
	// Opt-in, for measuring the idle cost: off unless its variable is set.
	defer profileHook(log, "")()

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
		case err := <-d.failed():
			q.fail(err)
		case <-runDone:
		}
	}()

	if !*headless && haveDisplay() {
		// The desktop shows what needs the user first; pushes follow
		// after notify.push_after_minutes.
		// A locked screen is a desktop nobody sees.
		lock := screenLockWatch()
		pushes := d.pushWhileAway(func() bool { return !lock.Locked(time.Now()) })
		argv, err := windowArgv(dir)
		if err != nil {
			_ = d.stop(context.Background())
			return err
		}
		// The tray owns the main goroutine until Quit (macOS requires it).
		runDesktop(guiDeps{windowArgv: argv, stderr: c.stderr, src: d.rt, settings: d.settings, dataDir: dir, setShowWindow: d.api.SetShowWindow, log: log, quit: q.quit, requestQuit: q.request, prices: c.priceTable(),
			showAtStart: showWindowAtStart(launch, *trayOnly),
			notifyTest:  func(ctx context.Context) ([]localapi.PushReceipt, error) { return pushes.Test(ctx, nil) },
			pushStatus:  func() *localapi.PushStatus { st := pushes.Status(); return &st }})
	} else {
		if !*headless {
			fmt.Fprintln(c.stderr, "No display found; running headless (the CLI and the local API work as usual).")
		}
		// Headless: a desktop is there when this process can notify the
		// machine's notification service or a desktop is attached;
		// otherwise (a server) pushes go out at once.
		notifying := d.notifyWhileNoDesktop()
		lock := screenLockWatch()
		d.pushWhileAway(func() bool { return (notifying || d.api.DesktopAttached()) && !lock.Locked(time.Now()) })
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

// runAttached runs the desktop (tray, notifications, the window process) for a
// supervisor that runs without a window in another process, through its
// local API only. It reconnects by itself when the supervisor restarts and
// says so meanwhile; quitting it leaves the supervisor running.
func (c *cli) runAttached(dir string, launch packaging.Launch, trayOnly bool) error {
	argv, err := windowArgv(dir)
	if err != nil {
		return err
	}
	d, stop := c.attach(dir)
	defer stop()
	if launch.Interactive() {
		fmt.Fprintf(c.stderr, "Session Supervisor is running without a window (data directory %s); this desktop attaches to it. Quitting the desktop leaves it running.\n", dir)
	}
	d.windowArgv, d.stderr, d.showAtStart = argv, c.stderr, showWindowAtStart(launch, trayOnly)
	runDesktop(d)
	return nil
}

// attach is a desktop part (the attached desktop, the window process) wired
// to the supervisor of dir through its local API only: a Remote that
// reconnects by itself, and a quit that Ctrl-C, SIGTERM and c.interrupt
// request. stop ends its loops and waits for them.
func (c *cli) attach(dir string) (d guiDeps, stop func()) {
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	remote := localapi.NewRemote(localapi.NewClient(dir), log)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)

	ctx, cancel := context.WithCancel(context.Background())
	q := newQuitter()
	var loops sync.WaitGroup
	loops.Go(func() { remote.Run(ctx) })
	loops.Go(func() {
		select {
		case <-sigs:
			q.request()
		case <-c.interrupt:
			q.request()
		case <-ctx.Done():
		}
	})
	d = guiDeps{src: remote, settings: remote, dataDir: dir, log: log, quit: q.quit, requestQuit: q.request, prices: c.priceTable(), notifyTest: remote.NotifyTest}
	return d, func() {
		cancel()
		loops.Wait()
		signal.Stop(sigs)
	}
}
