package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/packaging"
	"github.com/session-supervisor/session-supervisor/storage"
)

// newServiceManager builds the platform's service manager; tests replace
// it with one writing into a temporary directory through a fake runner.
var newServiceManager = packaging.New

// serviceSpec is what the service runs: this binary, `run`, and the data
// directory when it is not the default. A data directory chosen by
// --data-dir or $SESSION_SUPERVISOR_HOME is written into the unit, because
// the service manager starts the app without the shell's flags or variables.
func (c *cli) serviceSpec(headless bool) (packaging.Spec, error) {
	exe, err := os.Executable()
	if err != nil {
		return packaging.Spec{}, fmt.Errorf("finding this binary's path: %w", err)
	}
	exe = stableExecutable(exe, os.Args[0])
	spec := packaging.Spec{Executable: exe, Headless: headless, PathEnv: os.Getenv("PATH")}
	if c.dataDir != "" || os.Getenv(storage.EnvHome) != "" {
		dir, err := c.resolveDataDir()
		if err != nil {
			return spec, err
		}
		if spec.DataDir, err = filepath.Abs(dir); err != nil {
			return spec, fmt.Errorf("resolving the data directory %s: %w", dir, err)
		}
	}
	return spec, nil
}

// stableExecutable prefers the path the user invoked (found on PATH) over
// the resolved one when both are the same file: a package manager's symlink
// (/opt/homebrew/bin/session-supervisor → …/Cellar/1.2.3/…) survives an
// upgrade, the versioned target it resolves to does not. os.Executable
// resolves symlinks on Linux, so only argv[0] still knows the link.
func stableExecutable(exe, arg0 string) string {
	invoked, err := exec.LookPath(arg0)
	if err != nil {
		return exe
	}
	if invoked, err = filepath.Abs(invoked); err != nil {
		return exe
	}
	a, errA := os.Stat(invoked)
	b, errB := os.Stat(exe)
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		return exe
	}
	return invoked
}

func cmdService(c *cli, args []string) error {
	if len(args) == 0 {
		return usagef("service needs a subcommand: install, uninstall, start, stop, restart or status")
	}
	sub, args := args[0], args[1:]
	fs := c.newFlags("service " + sub)
	headless := fs.Bool("headless", false, "install: run without window or tray (on Linux: start without a desktop session)")
	asJSON := fs.Bool("json", false, "status: print JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	switch sub {
	case "install", "uninstall", "start", "stop", "restart", "status":
	default:
		return usagef("unknown service subcommand %q", sub)
	}
	if *headless && sub != "install" {
		return usagef("--headless is an install option")
	}
	if *asJSON && sub != "status" {
		return usagef("--json is a status option")
	}
	spec, err := c.serviceSpec(*headless)
	if err != nil {
		return err
	}
	m, err := newServiceManager(spec)
	if err != nil {
		return err
	}
	// Every step is one quick call to systemctl/launchctl/the service
	// manager; stopping waits for the app's graceful quit.
	ctx, cancel := context.WithTimeout(context.Background(), packaging.StopGrace+30*time.Second)
	defer cancel()

	switch sub {
	case "install":
		return serviceInstall(ctx, c, m, spec)
	case "uninstall":
		res, err := m.Uninstall(ctx)
		if err != nil {
			return err
		}
		if len(res.Removed) == 0 {
			fmt.Fprintf(c.stdout, "The service is not installed (no %s); nothing to remove.\n", m.UnitPath())
			return nil
		}
		for _, p := range res.Removed {
			fmt.Fprintf(c.stdout, "Removed %s\n", p)
		}
		if res.Note != "" {
			fmt.Fprintf(c.stdout, "Note: %s\n", res.Note)
		}
		return nil
	case "start":
		if err := m.Start(ctx); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "Started the %s.\n", m.Kind())
	case "stop":
		if err := m.Stop(ctx); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "Stopped the %s (it starts again at the next login).\n", m.Kind())
	case "restart":
		if err := m.Restart(ctx); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "Restarted the %s.\n", m.Kind())
	case "status":
		st, err := m.Status(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(c, st)
		}
		printServiceStatus(c, st)
	}
	return nil
}

func serviceInstall(ctx context.Context, c *cli, m packaging.Manager, spec packaging.Spec) error {
	res, err := m.Install(ctx)
	if res.Change != "" {
		verb := map[packaging.Change]string{
			packaging.Created:   "Installed",
			packaging.Updated:   "Updated",
			packaging.Unchanged: "Already installed, unchanged:",
		}[res.Change]
		fmt.Fprintf(c.stdout, "%s the %s %s\n", verb, m.Kind(), res.Path)
		fmt.Fprintf(c.stdout, "It runs: %s\n", strings.Join(append([]string{spec.Executable}, spec.Args()...), " "))
	}
	if err != nil {
		return err
	}
	switch {
	case spec.Headless:
		fmt.Fprintln(c.stdout, "It starts at login (without a window) and is restarted after a crash.")
	default:
		fmt.Fprintln(c.stdout, "It starts with your desktop session and is restarted after a crash.")
	}
	switch {
	case res.Running && res.Change == packaging.Updated:
		fmt.Fprintln(c.stdout, "It is running with the old settings: session-supervisor service restart applies the new ones.")
	case res.Running:
		fmt.Fprintln(c.stdout, "It is running.")
	default:
		fmt.Fprintln(c.stdout, "Start it now with: session-supervisor service start")
	}
	return nil
}

func printServiceStatus(c *cli, st packaging.Status) {
	state := string(st.State)
	if st.Installed {
		state = "installed, " + state
	}
	fmt.Fprintf(c.stdout, "service:   %s (%s)\n", state, st.Kind)
	fmt.Fprintf(c.stdout, "unit:      %s\n", st.UnitPath)
	if !st.Installed {
		fmt.Fprintln(c.stdout, "install:   session-supervisor service install")
		return
	}
	if st.Command != "" {
		fmt.Fprintf(c.stdout, "runs:      %s\n", st.Command)
	}
	if st.Enabled {
		fmt.Fprintln(c.stdout, "at login:  starts")
	} else if st.State != packaging.StateUnknown {
		fmt.Fprintln(c.stdout, "at login:  does not start (session-supervisor service install enables it)")
	}
	if !st.Current {
		fmt.Fprintln(c.stdout, "note:      the unit differs from what this binary would install (moved binary, other data directory or an older version): session-supervisor service install updates it")
	}
	if st.Problem != nil {
		fmt.Fprintf(c.stdout, "problem:   %s\n", st.Problem.Error())
	}
}

// handOverWait bounds how long a second `run` waits for the first to
// answer: the first takes the lock before it boots and listens, so a second
// start right after the first (a double click) finds the lock held and the
// socket not yet there.
var handOverWait = 3 * time.Second

// standByPoll is how often a standing-by Windows service tries the lock.
var standByPoll = 5 * time.Second

// handOver is a second `run` while one holds the data directory. Started by
// a person, it asks the first to bring its window forward and exits 0, so a
// launcher clicked twice is harmless; started by a service manager it only
// checks that the first answers, and exits 0 quietly (no window pops up at
// login). When nothing answers on the socket, the holder is stuck (or not
// this app): exit 1 naming its pid. The Windows service stands by instead
// (see standBy). It returns a lock only when it ends up holding one.
func (c *cli) handOver(dir string, locked *storage.LockedError, launch packaging.Launch, canAttach, trayOnly bool) (*storage.Lock, bool, error) {
	if launch == packaging.LaunchWindowsService {
		lock, err := c.standBy(dir)
		return lock, false, err
	}
	cl := localapi.NewClient(dir)
	who := "pid unknown"
	if locked.PID > 0 {
		who = fmt.Sprintf("pid %d", locked.PID)
	}
	// Ask it to show its window only for a start that wants one: not a
	// service manager's, and not a start in the tray.
	askShow := launch.Interactive() && !trayOnly
	deadline := time.Now().Add(handOverWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var res localapi.ShowResult
		var err error
		if askShow {
			res, err = cl.Show(ctx)
		}
		if err != nil || !askShow {
			// Not asked to show, or it answered but not to /v1/show (an
			// older version): it runs all the same.
			if !errors.Is(err, localapi.ErrNotRunning) {
				if _, herr := cl.Health(ctx); herr == nil || errors.Is(herr, localapi.ErrUnavailable) {
					err = nil
				} else if err == nil {
					err = herr
				}
			}
		}
		cancel()
		if err == nil {
			switch {
			case res.Shown:
				fmt.Fprintf(c.stderr, "Session Supervisor is already running (%s); brought its window forward.\n", who)
			case canAttach:
				// It runs without a window (headless, a service): this
				// process becomes its desktop.
				return nil, true, nil
			case !launch.Interactive():
				fmt.Fprintf(c.stderr, "Session Supervisor is already running on %s (%s); this instance exits.\n", dir, who)
			default:
				fmt.Fprintf(c.stderr, "Session Supervisor is already running (%s) without a window (headless or as a service); 'session-supervisor ls' and 'watch' talk to it.\n", who)
			}
			return nil, false, nil
		}
		if time.Now().After(deadline) {
			return nil, false, fmt.Errorf("%w, but it does not answer on %s (stuck, or not this app); stop it and start again", locked, filepath.Join(dir, localapi.SocketName))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// standBy is the Windows service finding the data directory held, usually
// by the `run` the logon entry started in the desktop session (the service
// starts delayed after boot, so that one tends to win at login). Exiting
// would count as a failure the service control manager answers with a
// restart every 10 s; instead the service waits for the lock and takes over
// when that app quits, for instance at logout. It returns nil, nil if asked
// to stop first.
func (c *cli) standBy(dir string) (*storage.Lock, error) {
	fmt.Fprintf(c.stderr, "The data directory %s is in use by another instance; waiting to take over when it quits.\n", dir)
	t := time.NewTicker(standByPoll)
	defer t.Stop()
	for {
		select {
		case <-c.interrupt:
			return nil, nil
		case <-t.C:
		}
		lock, err := storage.AcquireLock(dir)
		if err == nil {
			return lock, nil
		}
		var locked *storage.LockedError
		if !errors.As(err, &locked) {
			return nil, err
		}
	}
}
