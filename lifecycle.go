package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/assets"
	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/notify"
	"github.com/session-supervisor/session-supervisor/services"
	"github.com/session-supervisor/session-supervisor/sessions/pricing"
	"github.com/session-supervisor/session-supervisor/sessions/procwatch"
	"github.com/session-supervisor/session-supervisor/sessions/termloc/termsys"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor"
)

// daemon is the supervisor part of a running app: the store, the runtime,
// and the services that run beside it (the loop, the local API, the
// settings publisher and, headless, the notifier). startDaemon brings it up
// in order; stop takes it down in the reverse order, gracefully, and returns
// only when every service has returned. It knows nothing of the GUI or of
// signals.
type daemon struct {
	st *storage.Store
	// settings is the one way settings are read and changed while the app
	// runs: from memory, published to the bus on every change.
	settings *settings.Service
	rt       *supervisor.Runtime
	api      *localapi.API
	log      *slog.Logger

	services *services.Group
	stopOnce sync.Once
}

// startDaemon opens the store in dir (already locked by the caller), boots
// the runtime, and starts its services.
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
	svc, err := settings.NewService(context.Background(), settingsRegistry, st)
	if err != nil {
		return nil, err
	}
	// One process table for every terminal source, one loop scanning it
	// (a service below): the sources are woken by its changes.
	procs := procwatch.New(procwatch.System())
	// The budgets and the tray's day total price with the same table as
	// `show` and `usage`: a malformed override is logged and the built-in
	// prices stay in force.
	prices, perr := pricing.Load(dir)
	if perr != nil {
		log.Warn("reading the price table", "err", perr)
	}
	rt := supervisor.New(supervisor.Options{Store: st, Agents: agents(), DefaultAgent: defaultAgent(), External: externalSources(dir, procs), Logger: log,
		Settings: svc.Get, SettingValues: svc.List, LocateTerminal: termsys.Locate, Prices: prices})
	if err := rt.Boot(context.Background()); err != nil {
		return nil, err
	}
	profile, profiling, err := daemonProfiler(os.Getenv)
	if err != nil {
		return nil, err
	}
	api, err := localapi.Listen(rt, svc, dir, version)
	if err != nil {
		return nil, err
	}
	d = &daemon{st: st, settings: svc, rt: rt, api: api, log: log}
	d.services = services.Start(context.Background(),
		services.Service{Name: "the supervisor loop", Run: func(ctx context.Context) error { rt.Run(ctx); return nil }},
		services.Service{Name: "the local API", Run: d.serveAPI},
		services.Service{Name: "the settings publisher", Run: d.publishSettings},
		services.Service{Name: "the process table", Run: func(ctx context.Context) error { procs.Run(ctx, 0); return nil }},
	)
	if profiling {
		log.Info("writing profiles", "dir", os.Getenv(envDaemonProfile), "every", daemonProfileEvery)
		_ = d.services.Add(services.Service{Name: "the profiler", Run: profile})
	}
	return d, nil
}

// serveAPI serves the local API until ctx ends, then closes it (no new
// request from then on; the socket is removed).
func (d *daemon) serveAPI(ctx context.Context) error {
	served := make(chan error, 1)
	go func() { served <- d.api.Serve() }()
	select {
	case err := <-served:
		// Failed on its own: close it all the same (open watch streams of
		// an attached desktop or `watch` end, the socket goes).
		if cerr := d.api.Close(); cerr != nil {
			d.log.Warn("closing the local API", "err", cerr)
		}
		return err
	case <-ctx.Done():
		if err := d.api.Close(); err != nil {
			d.log.Warn("closing the local API", "err", err)
		}
		return <-served
	}
}

// publishSettings sends every settings change to the bus (the desktop,
// attached or not, and `watch`) at once.
func (d *daemon) publishSettings(ctx context.Context) error {
	changes, cancel := d.settings.Subscribe()
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
			d.rt.PublishSettings(d.settings.List())
		}
	}
}

// failed delivers a fatal error of a service (at most one).
func (d *daemon) failed() <-chan error { return d.services.Failed() }

// notifyWhileNoDesktop runs the supervisor's own notifier (headless): it
// notifies escalations and waits on the user through the machine's
// notification service, except while a desktop is attached over the API,
// which then notifies instead. Never twice for one incident: what the
// desktop was there for counts as done.
//
// It reports whether it notifies: false when no notification service is
// reachable (a server), so the push channels do not wait for a desktop.
func (d *daemon) notifyWhileNoDesktop() bool {
	if !notificationServiceReachable() {
		return false
	}
	icon, _ := assets.AppIcon(64)
	n := notify.New(notify.Desktop, icon, nil, d.log)
	n.SetStartedAt(processStarted)
	n.SetGate(func() bool { return !d.api.DesktopAttached() })
	// Where the service reports actions, a managed session's permission
	// request offers Allow and Deny, answered here; there is no window to
	// open, so no Open.
	var actions *notify.Clickable
	if runtime.GOOS != "darwin" && runtime.GOOS != "windows" {
		if c, err := notify.NewClickable("Session Supervisor", "session-supervisor"); err == nil {
			c.WithoutOpen()
			n.SetRichSender(c.Send)
			actions = c
		}
	}
	sub := d.rt.Subscribe(notifyBuffer, false)
	err := d.services.Add(services.Service{Name: "the notifier", Run: func(ctx context.Context) error {
		defer d.rt.Bus().Unsubscribe(sub)
		if actions != nil {
			var answering sync.WaitGroup
			defer answering.Wait()
			defer actions.Close()
			answering.Go(func() { d.answerFromNotifications(ctx, actions) })
			answering.Go(func() { d.focusFromNotifications(ctx, actions) })
		}
		n.Run(ctx, sub.C, func() bool { return d.settings.Get().NotifyWaitingOnUser })
		return nil
	}})
	if err != nil {
		d.rt.Bus().Unsubscribe(sub)
		if actions != nil {
			actions.Close()
		}
		d.log.Warn("the notifier did not start", "err", err)
		return false
	}
	return true
}

// answerFromNotifications answers each Allow or Deny chosen on a
// notification: exactly the request it was for; one answered meanwhile
// (in the terminal, the CLI) is refused by the runtime and only logged.
// It returns when the Clickable is closed.
func (d *daemon) answerFromNotifications(ctx context.Context, c *notify.Clickable) {
	for a := range c.Answers() {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := d.rt.Answer(actx, a.SessionID, a.RequestID, a.Allow, "")
		cancel()
		if err != nil {
			d.log.Info("a permission answer from a notification was not sent", "session", a.SessionID, "request", a.RequestID, "err", err)
		}
	}
}

// stop is the graceful quit: stop deciding, stop serving, then let every
// turn in flight finish until ctx is done (a second Ctrl-C, or the service
// manager's grace). It always releases everything, and reports a turn that
// did not finish in time as an error wrapping ctx's.
func (d *daemon) stop(ctx context.Context) error {
	var err error
	d.stopOnce.Do(func() {
		// The loop, the server and the rest return, unless one is stuck
		// (a read of a hung file system): then ctx (a second Ctrl-C, the
		// service manager's grace) stops the wait as it stops the turns'.
		stopped := make(chan struct{})
		go func() { d.services.Stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-ctx.Done():
			d.log.Warn("stopped waiting for the services to end", "err", ctx.Err())
		}
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

// focusFromNotifications brings a terminal session's terminal forward for
// each "Go to terminal" chosen on a notification; what it could not do is
// logged (there is no window to say it in).
func (d *daemon) focusFromNotifications(ctx context.Context, c *notify.Clickable) {
	for id := range c.Terminals() {
		s, err := d.rt.Session(id)
		if err == nil {
			_, err = focusTerminal(ctx, s)
		}
		if err != nil {
			d.log.Info("go to terminal from a notification", "session", id, "err", err)
		}
	}
}
