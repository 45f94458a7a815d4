package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"

	"github.com/session-supervisor/session-supervisor/assets"
	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/notify"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor"
)

// daemon is the supervisor part of a running app: the store, the runtime
// and its loop, and the local API. start brings it up in order; stop takes
// it down in the reverse order, gracefully, and returns only when every
// goroutine it started has ended. It knows nothing of the GUI or of signals.
type daemon struct {
	st *storage.Store
	// settings is the one way settings are read and changed while the app
	// runs: from memory, published to the bus on every change.
	settings *storage.SettingsService
	rt       *supervisor.Runtime
	api      *localapi.API
	log      *slog.Logger

	// failed receives a fatal error from the API server (at most one).
	failed   chan error
	loopCtx  context.Context
	stopLoop context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// startDaemon opens the store in dir (already locked by the caller), boots
// the runtime, starts its loop and serves the local API.
func startDaemon(dir string, log *slog.Logger) (d *daemon, err error) {
	st, err := storage.Open(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			st.Close()
		}
	}()
	settings, err := storage.NewSettingsService(context.Background(), st)
	if err != nil {
		return nil, err
	}
	rt := supervisor.New(supervisor.Options{Store: st, Agents: agents(), DefaultAgent: defaultAgent(), External: externalSources(dir), Logger: log,
		Settings: settings.Get, SettingValues: settings.List})
	if err := rt.Boot(context.Background()); err != nil {
		return nil, err
	}
	api, err := localapi.Listen(rt, settings, dir, version)
	if err != nil {
		return nil, err
	}
	d = &daemon{st: st, settings: settings, rt: rt, api: api, log: log, failed: make(chan error, 1)}
	loopCtx, stopLoop := context.WithCancel(context.Background())
	d.loopCtx, d.stopLoop = loopCtx, stopLoop
	changes, cancelChanges := settings.Subscribe()
	d.wg.Add(3)
	go func() {
		// Every settings change reaches the bus (the desktop, attached or
		// not, and `watch`) at once.
		defer d.wg.Done()
		defer cancelChanges()
		for {
			select {
			case <-loopCtx.Done():
				return
			case <-changes:
				rt.PublishSettings(settings.List())
			}
		}
	}()
	go func() {
		defer d.wg.Done()
		if err := api.Serve(); err != nil {
			d.failed <- err
		}
	}()
	go func() {
		defer d.wg.Done()
		rt.Run(loopCtx)
	}()
	return d, nil
}

// notifyWhileNoDesktop runs the supervisor's own notifier (headless): it
// notifies escalations and waits on the user through the machine's
// notification service, except while a desktop is attached over the API,
// which then notifies instead. Never twice for one incident: what the
// desktop was there for counts as done.
func (d *daemon) notifyWhileNoDesktop() {
	if !notificationServiceReachable() {
		return
	}
	icon, _ := assets.AppIcon(64)
	n := notify.New(notify.Desktop, icon, nil, d.log)
	n.SetGate(func() bool { return !d.api.DesktopAttached() })
	sub := d.rt.Subscribe(notifyBuffer, false)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer d.rt.Bus().Unsubscribe(sub)
		n.Run(d.loopCtx, sub.C, func() bool { return d.settings.Get().NotifyWaitingOnUser })
	}()
}

// stop is the graceful quit: stop deciding, stop serving, then let every
// turn in flight finish until ctx is done (a second Ctrl-C, or the service
// manager's grace). It always releases everything, and reports a turn that
// did not finish in time as an error wrapping ctx's.
func (d *daemon) stop(ctx context.Context) error {
	var err error
	d.stopOnce.Do(func() {
		d.stopLoop()
		if cerr := d.api.Close(); cerr != nil {
			d.log.Warn("closing the local API", "err", cerr)
		}
		d.wg.Wait() // the loop and the server have returned
		err = d.rt.Shutdown(ctx)
		if cerr := d.st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the database: %w", cerr)
		}
	})
	return err
}

// quitWhenAsked closes quit (once) when any of the sources fires, and ends
// when done is closed; it is the one goroutine that turns signals, the
// tray's Quit and a fatal server error into a quit.
type quitter struct {
	quit     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	fatalErr error
}

func newQuitter() *quitter { return &quitter{quit: make(chan struct{})} }

// request asks for the graceful quit.
func (q *quitter) request() { q.once.Do(func() { close(q.quit) }) }

// fail asks for a quit because of err (the first one is kept).
func (q *quitter) fail(err error) {
	q.mu.Lock()
	if q.fatalErr == nil {
		q.fatalErr = err
	}
	q.mu.Unlock()
	q.request()
}

func (q *quitter) err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.fatalErr
}

// isInterrupted reports whether err is only the end of a wait the user cut short.
func isInterrupted(err error) bool { return errors.Is(err, context.Canceled) }

// notificationServiceReachable: on Linux and the BSDs notifications go over
// the session bus, and without DBUS_SESSION_BUS_ADDRESS the D-Bus library
// would launch a bus of its own (a stray dbus-daemon that outlives the app)
// just to find no notification service on it. Elsewhere the platform's own
// mechanism is used.
func notificationServiceReachable() bool {
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd":
		return os.Getenv("DBUS_SESSION_BUS_ADDRESS") != ""
	}
	return true
}
