package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/session-supervisor/session-supervisor/packaging"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor"
)

// A doctor check's status. warn is something worth knowing that does not
// stop the app from working (an optional agent missing, the service not
// installed); fail is something that needs fixing, and makes doctor exit 1.
const (
	checkOK   = "ok"
	checkWarn = "warn"
	checkFail = "fail"
)

// doctorCheck is one line of the report; its JSON is the `doctor --json`
// contract.
type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// doctorReport is `doctor --json`: the worst status and every check.
type doctorReport struct {
	Status  string        `json:"status"`
	Version string        `json:"version"`
	DataDir string        `json:"data_dir"`
	Checks  []doctorCheck `json:"checks"`
}

// knownAgent is an agent CLI doctor looks for, and how to install it.
type knownAgent struct {
	name, command, install string
}

var knownAgents = []knownAgent{
	{"claude", "claude", "npm install -g @anthropic-ai/claude-code"},
	{"codex", "codex", "npm install -g @openai/codex"},
	{"gemini", "gemini", "npm install -g @google/gemini-cli"},
	{"opencode", "opencode", "npm install -g opencode-ai"},
	{"copilot", "copilot", "npm install -g @github/copilot"},
}

// claudeCommandKey is the setting naming the Claude Code executable.
const claudeCommandKey = "agents.claude.command"

// Bounds on what doctor waits for: an agent's --version (some CLIs start a
// runtime first), the app's health answer, a D-Bus query. Variables so tests
// can shorten them.
var (
	doctorVersionTimeout = 5 * time.Second
	doctorAppTimeout     = 3 * time.Second
	doctorBusTimeout     = 3 * time.Second
)

// busNamesFunc lists the names owned on and activatable by a session bus;
// tests replace it.
var busNamesFunc = busNames

func cmdDoctor(c *cli, args []string) error {
	fs := c.newFlags("doctor")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("doctor takes no arguments")
	}
	dir, err := c.resolveDataDir()
	if err != nil {
		return err
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	ctx := context.Background()
	rep := doctorReport{Version: version, DataDir: dir}

	dirCheck, dirExists := checkDataDir(dir)
	rep.Checks = append(rep.Checks, dirCheck)
	dbCheck, claudeCmd, claudeConfigured := checkDatabase(ctx, dir, dirExists)
	rep.Checks = append(rep.Checks, dbCheck)
	rep.Checks = append(rep.Checks, checkApp(ctx, dir, dirExists))
	rep.Checks = append(rep.Checks, c.checkService(ctx))
	for _, a := range knownAgents {
		cmd, configured := a.command, false
		if a.name == "claude" {
			cmd, configured = claudeCmd, claudeConfigured
		}
		rep.Checks = append(rep.Checks, checkAgent(ctx, a, cmd, configured))
	}
	if hasFreedesktop(runtime.GOOS) {
		rep.Checks = append(rep.Checks, checkDesktopBus(ctx, os.Getenv)...)
	}

	failed, warned := 0, 0
	rep.Status = checkOK
	for _, ch := range rep.Checks {
		switch ch.Status {
		case checkFail:
			failed++
			rep.Status = checkFail
		case checkWarn:
			warned++
			if rep.Status == checkOK {
				rep.Status = checkWarn
			}
		}
	}
	if *asJSON {
		if err := writeJSON(c, rep); err != nil {
			return err
		}
	} else {
		printDoctor(c, rep, failed, warned)
	}
	if failed > 0 {
		return fmt.Errorf("doctor: %d check(s) failed; the fix is printed under each", failed)
	}
	return nil
}

// hasFreedesktop: the desktops whose notifications and tray go over D-Bus.
func hasFreedesktop(goos string) bool {
	switch goos {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
		return true
	}
	return false
}

func printDoctor(c *cli, rep doctorReport, failed, warned int) {
	fmt.Fprintf(c.stdout, "Session Supervisor %s, data directory %s\n\n", rep.Version, rep.DataDir)
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	for _, ch := range rep.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Status, ch.Name, ch.Detail)
		if ch.Fix != "" && ch.Status != checkOK {
			fmt.Fprintf(tw, "\t\tfix: %s\n", ch.Fix)
		}
	}
	tw.Flush()
	fmt.Fprintln(c.stdout)
	switch {
	case failed > 0:
		fmt.Fprintf(c.stdout, "%d check(s) failed and %d warning(s): run the fix under each failed check.\n", failed, warned)
	case warned > 0:
		fmt.Fprintf(c.stdout, "Nothing is broken; %d warning(s) above.\n", warned)
	default:
		fmt.Fprintln(c.stdout, "Everything is in order.")
	}
}

// checkDataDir: the directory exists, is a directory, and is private.
func checkDataDir(dir string) (doctorCheck, bool) {
	ch := doctorCheck{Name: "data directory"}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ch.Status = checkWarn
		ch.Detail = dir + " does not exist yet: the app has not run with this data directory (a different --data-dir or $" + storage.EnvHome + "?)"
		ch.Fix = "session-supervisor run"
		return ch, false
	case err != nil:
		ch.Status, ch.Detail = checkFail, fmt.Sprintf("cannot read %s: %v", dir, err)
		ch.Fix = "sudo chown -R \"$USER\" " + shellQuote(dir) + "   # an earlier run with sudo may own it"
		return ch, false
	case !fi.IsDir():
		ch.Status, ch.Detail = checkFail, dir+" exists but is not a directory"
		ch.Fix = "mv " + shellQuote(dir) + " " + shellQuote(dir+".old")
		return ch, false
	}
	ch.Status, ch.Detail = checkOK, dir
	if runtime.GOOS != "windows" {
		if perm := fi.Mode().Perm(); perm != 0o700 {
			ch.Status = checkWarn
			ch.Detail = fmt.Sprintf("%s has mode %04o: it holds your sessions' data and should be 0700 (the app tightens it when it next opens the database)", dir, perm)
			ch.Fix = "chmod 700 " + shellQuote(dir)
		} else {
			ch.Detail += " (mode 0700)"
		}
	}
	return ch, true
}

// checkDatabase opens the database the way the app does (which refuses a
// corrupt, foreign or too-new file without touching it, and brings an older
// schema up to date), runs the full integrity check and reports size and
// schema version. It also returns the configured Claude command, which
// lives in the database's settings.
func checkDatabase(ctx context.Context, dir string, dirExists bool) (ch doctorCheck, claudeCmd string, configured bool) {
	ch = doctorCheck{Name: "database"}
	claudeCmd = "claude"
	path := filepath.Join(dir, storage.FileName)
	if !dirExists {
		ch.Status, ch.Detail, ch.Fix = checkWarn, "not checked: no data directory", "session-supervisor run"
		return
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		ch.Status, ch.Detail, ch.Fix = checkWarn, path+" does not exist yet (the first run creates it)", "session-supervisor run"
		return
	}
	moveAside := "stop the app (session-supervisor service stop, or quit it), then: mv " + shellQuote(path) + " " + shellQuote(path+".corrupt") +
		"   (and its -wal and -shm files if present); the next start creates an empty database"
	st, err := storage.Open(dir)
	if err != nil {
		ch.Status, ch.Detail = checkFail, err.Error()
		switch {
		case errors.Is(err, storage.ErrCorrupt):
			ch.Fix = moveAside
		case errors.Is(err, storage.ErrTooNew):
			ch.Fix = "install a newer Session Supervisor (this is " + version + "), or use another data directory: --data-dir DIR"
		case errors.Is(err, storage.ErrForeign):
			ch.Fix = "use another data directory (--data-dir DIR), or move the file aside: mv " + shellQuote(path) + " " + shellQuote(path+".old")
		case errors.Is(err, fs.ErrPermission):
			ch.Fix = "sudo chown -R \"$USER\" " + shellQuote(dir) + "   # an earlier run with sudo left it owned by root"
		}
		return
	}
	defer st.Close()
	report, err := st.IntegrityCheck(ctx)
	if err != nil {
		ch.Status, ch.Detail, ch.Fix = checkFail, err.Error(), moveAside
		return
	}
	if report != "ok" {
		lines := strings.Split(report, "\n")
		if len(lines) > 3 {
			lines = append(lines[:3], fmt.Sprintf("(and %d more)", len(lines)-3))
		}
		ch.Status, ch.Fix = checkFail, moveAside
		ch.Detail = path + " fails its integrity check: " + strings.Join(lines, "; ")
		return
	}
	v, err := st.SchemaVersion(ctx)
	if err != nil {
		ch.Status, ch.Detail = checkFail, err.Error()
		return
	}
	ch.Status = checkOK
	ch.Detail = fmt.Sprintf("%s: %s, schema version %d (this build supports %d), integrity ok",
		path, formatSize(fileSize(path)+fileSize(path+"-wal")), v, storage.SupportedSchemaVersion())
	if vals, err := st.ListSettings(ctx); err == nil {
		for _, s := range vals {
			if s.Key == claudeCommandKey {
				claudeCmd, configured = s.Value, !s.IsDefault
			}
		}
	}
	return
}

// checkApp asks the running app for its health over the socket; when
// nothing answers, the instance lock tells "not running" from "running but
// stuck".
func checkApp(ctx context.Context, dir string, dirExists bool) doctorCheck {
	ch := doctorCheck{Name: "app"}
	socket := filepath.Join(dir, supervisor.SocketName)
	if dirExists {
		hctx, cancel := context.WithTimeout(ctx, doctorAppTimeout)
		h, err := supervisor.NewClient(dir).Health(hctx)
		cancel()
		if err == nil {
			ch.Status = checkOK
			ch.Detail = fmt.Sprintf("running (pid %d, version %s), answering on %s", h.PID, h.Version, socket)
			if h.Version != version {
				ch.Status = checkWarn
				ch.Detail = fmt.Sprintf("running version %s (pid %d), but this binary is %s: the app still runs the old code", h.Version, h.PID, version)
				ch.Fix = "session-supervisor service restart   (or quit the app and start it again)"
			}
			return ch
		}
		// Only look at the lock when a run has created it: taking it
		// would otherwise create the file.
		if _, err := os.Stat(filepath.Join(dir, supervisor.LockName)); err == nil {
			lock, err := supervisor.AcquireLock(dir)
			var locked *supervisor.LockedError
			if errors.As(err, &locked) {
				ch.Status = checkFail
				ch.Detail = fmt.Sprintf("%s holds the data directory but does not answer on %s (stuck, or still starting)", pidText(locked.PID), socket)
				ch.Fix = "session-supervisor service restart   (not a service: kill " + pidOrPlaceholder(locked.PID) + ", then session-supervisor run)"
				return ch
			}
			if err == nil {
				lock.Release()
			}
		}
	}
	ch.Status = checkWarn
	ch.Detail = "not running (nothing answers on " + socket + "): sessions are not supervised"
	ch.Fix = "session-supervisor service start   (or: session-supervisor run)"
	return ch
}

func pidText(pid int) string {
	if pid > 0 {
		return fmt.Sprintf("process %d", pid)
	}
	return "another process"
}

func pidOrPlaceholder(pid int) string {
	if pid > 0 {
		return fmt.Sprint(pid)
	}
	return "<pid>"
}

// checkService reports the per-user service: installed, running, and
// whether it runs this binary with this data directory.
func (c *cli) checkService(ctx context.Context) doctorCheck {
	ch := doctorCheck{Name: "service"}
	spec, err := c.serviceSpec(false)
	if err != nil {
		ch.Status, ch.Detail = checkWarn, "not checked: "+err.Error()
		return ch
	}
	m, err := newServiceManager(spec)
	if err != nil {
		ch.Status, ch.Detail = checkWarn, err.Error()
		return ch
	}
	st, err := m.Status(ctx)
	if err != nil {
		ch.Status, ch.Detail = checkWarn, err.Error()
		return ch
	}
	where := st.Kind + " " + st.UnitPath
	switch st.State {
	case packaging.StateNotInstalled:
		ch.Status = checkWarn
		ch.Detail = "not installed: the app does not start at login or come back after a crash"
		ch.Fix = "session-supervisor service install"
		return ch
	case packaging.StateRunning:
		ch.Status, ch.Detail = checkOK, "installed and running ("+where+")"
	case packaging.StateStopped:
		ch.Status, ch.Detail = checkWarn, "installed but not running ("+where+")"
		ch.Fix = "session-supervisor service start"
	case packaging.StateFailed:
		ch.Status, ch.Detail = checkFail, "installed but failed ("+where+")"
		if st.Problem != nil {
			ch.Detail += ": " + st.Problem.What
			ch.Fix = st.Problem.Fix
		}
		return ch
	default:
		ch.Status, ch.Detail = checkWarn, "installed ("+where+"), state unknown"
		if st.Problem != nil {
			ch.Detail += ": " + st.Problem.What
			if st.Problem.Err != nil {
				ch.Detail += " (" + st.Problem.Err.Error() + ")"
			}
			ch.Fix = st.Problem.Fix
		}
		return ch
	}
	if !st.Current {
		ch.Status = checkWarn
		ch.Detail += "; it runs " + st.Command + ", not this binary with this data directory"
		ch.Fix = "session-supervisor service install   (rewrites the unit), then: session-supervisor service restart"
	}
	return ch
}

// checkAgent looks an agent CLI up on PATH and asks its version. Every
// missing agent is a warning, Claude Code included: the app runs and
// supervises without any of them, and which agents a user wants is theirs to
// say. The exception is an agents.claude.command the user set explicitly that
// does not resolve: that is a configuration mistake, and every Claude session
// they start would fail, so it fails.
func checkAgent(ctx context.Context, a knownAgent, command string, configured bool) doctorCheck {
	ch := doctorCheck{Name: "agent " + a.name}
	path, err := exec.LookPath(command)
	if err != nil {
		if configured {
			ch.Status = checkFail
			ch.Detail = fmt.Sprintf("%s is set to %q, which is not found: every Claude Code session would fail to start", claudeCommandKey, command)
			ch.Fix = "session-supervisor settings reset " + claudeCommandKey + "   (or settings set " + claudeCommandKey + " /path/to/claude)"
			return ch
		}
		ch.Status = checkWarn
		if a.name == "claude" {
			ch.Detail = command + " not found on PATH: the app runs, but cannot start Claude Code sessions"
		} else {
			ch.Detail = command + " not found on PATH (optional: only needed for " + a.name + " sessions)"
		}
		ch.Fix = a.install
		return ch
	}
	v, err := agentVersion(ctx, path)
	if err != nil {
		ch.Status = checkWarn
		ch.Detail = fmt.Sprintf("found %s, but `%s --version` failed: %v", path, filepath.Base(path), err)
		ch.Fix = "reinstall it: " + a.install
		return ch
	}
	ch.Status, ch.Detail = checkOK, path+", "+v
	return ch
}

// agentVersion runs `path --version` with a short timeout and returns the
// first line it prints.
func agentVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, doctorVersionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	// A CLI that leaves a child holding its output open must not hold
	// doctor too.
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return "", fmt.Errorf("no answer within %s", doctorVersionTimeout)
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return "", fmt.Errorf("%w: %s", err, firstLine(string(ee.Stderr)))
		}
		return "", err
	}
	v := firstLine(string(out))
	if v == "" {
		return "", errors.New("it printed nothing")
	}
	return v, nil
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 100 {
				l = l[:100] + "…"
			}
			return l
		}
	}
	return ""
}

// The D-Bus names the desktop integration needs on Linux.
const (
	notificationsName = "org.freedesktop.Notifications"
	trayWatcherName   = "org.kde.StatusNotifierWatcher"
)

// checkDesktopBus checks the session bus for a notification service and a
// tray host (StatusNotifierWatcher). Both only warn: the supervisor works
// without them, you just do not see its notifications or tray icon.
func checkDesktopBus(ctx context.Context, getenv func(string) string) []doctorCheck {
	notif := doctorCheck{Name: "notifications"}
	tray := doctorCheck{Name: "tray host"}
	addr := sessionBusAddress(getenv)
	if addr == "" {
		notif.Status = checkWarn
		notif.Detail = "no D-Bus session bus ($DBUS_SESSION_BUS_ADDRESS is unset and there is no $XDG_RUNTIME_DIR/bus): desktop notifications cannot be shown"
		notif.Fix = "run the app inside your desktop session (the installed service does); from SSH: export DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$(id -u)/bus"
		tray.Status, tray.Detail = checkWarn, "not checked: no session bus"
		return []doctorCheck{notif, tray}
	}
	ctx, cancel := context.WithTimeout(ctx, doctorBusTimeout)
	defer cancel()
	owned, activatable, err := busNamesFunc(ctx, addr)
	if err != nil {
		notif.Status, notif.Detail = checkWarn, "cannot ask the session bus "+addr+": "+err.Error()
		if errors.Is(err, exec.ErrNotFound) {
			notif.Fix = "sudo apt install libglib2.0-bin   (provides gdbus; or dbus-bin for dbus-send)"
		}
		tray.Status, tray.Detail = checkWarn, "not checked: "+err.Error()
		return []doctorCheck{notif, tray}
	}
	switch {
	case slices.Contains(owned, notificationsName):
		notif.Status, notif.Detail = checkOK, notificationsName+" is served on the session bus"
	case slices.Contains(activatable, notificationsName):
		notif.Status, notif.Detail = checkOK, notificationsName+" is started on demand by the session bus"
	default:
		notif.Status = checkWarn
		notif.Detail = "nothing serves " + notificationsName + " on the session bus: the app's notifications will not show"
		notif.Fix = "sudo apt install dunst   (or any notification daemon; desktops such as GNOME and KDE have one)"
	}
	if slices.Contains(owned, trayWatcherName) || slices.Contains(activatable, trayWatcherName) {
		tray.Status, tray.Detail = checkOK, trayWatcherName+" is on the session bus"
	} else {
		tray.Status = checkWarn
		tray.Detail = "no tray host (" + trayWatcherName + ") on the session bus: the tray icon will not show; the window and notifications still work"
		tray.Fix = "GNOME: sudo apt install gnome-shell-extension-appindicator, then log in again; other desktops: add a system tray (status notifier) panel item"
	}
	return []doctorCheck{notif, tray}
}

// sessionBusAddress is $DBUS_SESSION_BUS_ADDRESS, else the systemd
// per-user bus socket that D-Bus libraries (godbus included) fall back to.
func sessionBusAddress(getenv func(string) string) string {
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" {
		return a
	}
	if rt := getenv("XDG_RUNTIME_DIR"); rt != "" {
		p := filepath.Join(rt, "bus")
		if fi, err := os.Stat(p); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			return "unix:path=" + p
		}
	}
	return ""
}

// busNames asks the bus for ListNames and ListActivatableNames with gdbus,
// else dbus-send (whichever is installed): doctor has no D-Bus library of
// its own.
func busNames(ctx context.Context, addr string) (owned, activatable []string, err error) {
	var call func(method string) ([]string, error)
	if gdbus, err := exec.LookPath("gdbus"); err == nil {
		call = func(method string) ([]string, error) {
			return runBusQuery(ctx, addr, gdbus, "call", "--session", "--dest", "org.freedesktop.DBus",
				"--object-path", "/org/freedesktop/DBus", "--method", "org.freedesktop.DBus."+method)
		}
	} else if send, err := exec.LookPath("dbus-send"); err == nil {
		call = func(method string) ([]string, error) {
			return runBusQuery(ctx, addr, send, "--session", "--print-reply", "--dest=org.freedesktop.DBus",
				"/org/freedesktop/DBus", "org.freedesktop.DBus."+method)
		}
	} else {
		return nil, nil, fmt.Errorf("neither gdbus nor dbus-send is installed: %w", exec.ErrNotFound)
	}
	if owned, err = call("ListNames"); err != nil {
		return nil, nil, err
	}
	if activatable, err = call("ListActivatableNames"); err != nil {
		return nil, nil, err
	}
	return owned, activatable, nil
}

// busName matches a quoted bus name in gdbus ('a.b') and dbus-send ("a.b")
// output alike.
var busName = regexp.MustCompile(`['"]([A-Za-z0-9_.:\-]+)['"]`)

func runBusQuery(ctx context.Context, addr, name string, args ...string) ([]string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS="+addr)
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return nil, errors.New(firstLine(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("%s: %w", filepath.Base(name), err)
	}
	return parseBusNames(string(out)), nil
}

func parseBusNames(out string) []string {
	var names []string
	for _, m := range busName.FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	return names
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func formatSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// shellQuote quotes a path for the fix lines, which users paste into a
// shell.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
