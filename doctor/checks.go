package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/packaging"
	"github.com/session-supervisor/session-supervisor/storage"
)

// checkDataDir: the directory exists, is a directory, and is private.
func (d *doctor) checkDataDir() (Check, bool) {
	dir := d.o.DataDir
	ch := Check{Name: "data directory"}
	fi, err := d.p.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ch.Status = Warn
		ch.Detail = dir + " does not exist yet: the app has not run with this data directory (a different --data-dir or $" + storage.EnvHome + "?)"
		ch.Fix = "session-supervisor run"
		return ch, false
	case err != nil:
		ch.Status, ch.Detail = Fail, fmt.Sprintf("cannot read %s: %v", dir, err)
		ch.Fix = "sudo chown -R \"$USER\" " + ShellQuote(dir) + "   # an earlier run with sudo may own it"
		return ch, false
	case !fi.IsDir():
		ch.Status, ch.Detail = Fail, dir+" exists but is not a directory"
		ch.Fix = "mv " + ShellQuote(dir) + " " + ShellQuote(dir+".old")
		return ch, false
	}
	ch.Status, ch.Detail = OK, dir
	if d.o.GOOS != "windows" {
		if perm := fi.Mode().Perm(); perm != 0o700 {
			ch.Status = Warn
			ch.Detail = fmt.Sprintf("%s has mode %04o: it holds your sessions' data and should be 0700 (the app tightens it when it next opens the database)", dir, perm)
			ch.Fix = "chmod 700 " + ShellQuote(dir)
		} else {
			ch.Detail += " (mode 0700)"
		}
	}
	return ch, true
}

// checkDatabase opens the database the way the app does (which refuses a
// corrupt, foreign or too-new file without touching it, and brings an older
// schema up to date), runs the full integrity check and reports size and
// schema version. It also returns the settings the user set, which name
// the agents' commands.
func (d *doctor) checkDatabase(ctx context.Context, dirExists bool) (ch Check, userSettings map[string]string) {
	ch = Check{Name: "database"}
	dir := d.o.DataDir
	path := filepath.Join(dir, storage.FileName)
	if !dirExists {
		ch.Status, ch.Detail, ch.Fix = Warn, "not checked: no data directory", "session-supervisor run"
		return ch, nil
	}
	if _, err := d.p.Stat(path); errors.Is(err, fs.ErrNotExist) {
		ch.Status, ch.Detail, ch.Fix = Warn, path+" does not exist yet (the first run creates it)", "session-supervisor run"
		return ch, nil
	}
	moveAside := "stop the app (session-supervisor service stop, or quit it), then: mv " + ShellQuote(path) + " " + ShellQuote(path+".corrupt") +
		"   (and its -wal and -shm files if present); the next start creates an empty database"
	db, err := d.p.OpenDatabase(dir)
	if err != nil {
		ch.Status, ch.Detail = Fail, err.Error()
		switch {
		case errors.Is(err, storage.ErrCorrupt):
			ch.Fix = moveAside
		case errors.Is(err, storage.ErrTooNew):
			ch.Fix = "install a newer Session Supervisor (this is " + d.o.Version + "), or use another data directory: --data-dir DIR"
		case errors.Is(err, storage.ErrForeign):
			ch.Fix = "use another data directory (--data-dir DIR), or move the file aside: mv " + ShellQuote(path) + " " + ShellQuote(path+".old")
		case errors.Is(err, fs.ErrPermission):
			ch.Fix = "sudo chown -R \"$USER\" " + ShellQuote(dir) + "   # an earlier run with sudo left it owned by root"
		}
		return ch, nil
	}
	defer db.Close()
	report, err := db.IntegrityCheck(ctx)
	if err != nil {
		ch.Status, ch.Detail, ch.Fix = Fail, err.Error(), moveAside
		return ch, nil
	}
	if report != "ok" {
		lines := strings.Split(report, "\n")
		if len(lines) > 3 {
			lines = append(lines[:3], fmt.Sprintf("(and %d more)", len(lines)-3))
		}
		ch.Status, ch.Fix = Fail, moveAside
		ch.Detail = path + " fails its integrity check: " + strings.Join(lines, "; ")
		return ch, nil
	}
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		ch.Status, ch.Detail = Fail, err.Error()
		return ch, nil
	}
	ch.Status = OK
	ch.Detail = fmt.Sprintf("%s: %s, schema version %d (this build supports %d), integrity ok",
		path, FormatSize(d.fileSize(path)+d.fileSize(path+"-wal")), v, storage.SupportedSchemaVersion())
	if bad, err := db.Quarantined(ctx); err == nil && len(bad) > 0 {
		d.quarantined(&ch, bad)
	}
	// A failure to read the settings only loses the configured commands:
	// the agents are then checked by their default names.
	userSettings, _ = db.UserSettings(ctx)
	return ch, userSettings
}

// quarantined turns the database check into a warning naming the stored
// sessions this build cannot read: the app leaves them untouched and does
// not supervise them, which the user should know and can fix.
func (d *doctor) quarantined(ch *Check, bad []storage.Quarantined) {
	const listed = 3
	var names []string
	newer := false
	for i, q := range bad {
		newer = newer || q.Reason == storage.QuarantineNewer
		if i < listed {
			names = append(names, fmt.Sprintf("%s (%s: %v)", q.ID, q.Reason, q.Err))
		}
	}
	if len(bad) > listed {
		names = append(names, fmt.Sprintf("and %d more", len(bad)-listed))
	}
	ch.Status = Warn
	ch.Detail += fmt.Sprintf("; %d stored session(s) cannot be read by this build and are left untouched, unsupervised: %s",
		len(bad), strings.Join(names, ", "))
	if newer {
		ch.Fix = "install the newer Session Supervisor that wrote them (this is " + d.o.Version + ")"
	} else {
		ch.Fix = "nothing is lost: the rows stay as they are; keep a copy of " + ShellQuote(filepath.Join(d.o.DataDir, storage.FileName)) + " for a bug report"
	}
}

func (d *doctor) fileSize(path string) int64 {
	fi, err := d.p.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// checkApp asks the running app for its health over the socket; when
// nothing answers, the instance lock tells "not running" from "running but
// stuck". An app that answers that its supervision loop stopped ticking is
// stuck too: it answers, but supervises nothing.
func (d *doctor) checkApp(ctx context.Context, dirExists bool) (Check, *Health) {
	ch := Check{Name: "app"}
	socket := d.o.Socket
	if dirExists {
		hctx, cancel := context.WithTimeout(ctx, d.o.AppTimeout)
		h, err := d.p.Health(hctx)
		cancel()
		if err == nil {
			return d.appAnswered(h, socket), &h
		}
		if lock, err := d.p.Lock(); err == nil && lock.Held {
			ch.Status = Fail
			ch.Detail = fmt.Sprintf("%s holds the data directory but does not answer on %s (stuck, or still starting)", pidText(lock.PID), socket)
			ch.Fix = "session-supervisor service restart   (not a service: kill " + pidOrPlaceholder(lock.PID) + ", then session-supervisor run)"
			return ch, nil
		}
	}
	ch.Status = Warn
	ch.Detail = "not running (nothing answers on " + socket + "): sessions are not supervised"
	ch.Fix = "session-supervisor service start   (or: session-supervisor run)"
	return ch, nil
}

// CheckPush says whether the push channels reach the user: none
// configured is fine (the desktop alone); a channel whose settings cannot
// be used, or whose last delivery failed, warns with what to do.
func CheckPush(p Push, now time.Time) Check {
	ch := Check{Name: "push", Status: OK}
	if len(p.Channels) == 0 && len(p.Problems) == 0 {
		ch.Detail = "no push channel: only the desktop is told when a session needs you"
		ch.Fix = "session-supervisor settings set notify.ntfy.topic TOPIC   (or notify.webhook.url URL), then: session-supervisor notify test"
		return ch
	}
	var bad []string
	for _, pr := range p.Problems {
		bad = append(bad, fmt.Sprintf("%s is set but unusable: %s", pr.Channel, pr.Error))
	}
	for _, f := range p.Failures {
		how := "retrying"
		if f.GaveUp {
			how = "gave up"
		}
		bad = append(bad, fmt.Sprintf("%s failed %s ago (%s; %s)", f.Channel, humanSpan(now.Sub(f.At)), f.Error, how))
	}
	if len(bad) == 0 {
		ch.Detail = "pushes go to " + strings.Join(p.Channels, " and ")
		return ch
	}
	ch.Status = Warn
	ch.Detail = strings.Join(bad, "; ")
	ch.Fix = "check the notify.* settings (session-supervisor settings list), then: session-supervisor notify test"
	return ch
}

func (d *doctor) appAnswered(h Health, socket string) Check {
	ch := Check{Name: "app"}
	if h.Stalled() {
		ch.Status = Fail
		who := "version " + orUnknown(h.Version)
		if h.PID > 0 {
			who = fmt.Sprintf("pid %d, %s", h.PID, who)
		}
		ch.Detail = fmt.Sprintf("running (%s) and answering on %s, but its supervision loop has stopped: %s; sessions are not being watched",
			who, socket, d.stallText(h))
		ch.Fix = "session-supervisor service restart   (not a service: quit the app and start it again; if it stalls again, keep its log for a bug report)"
		return ch
	}
	ch.Status = OK
	ch.Detail = fmt.Sprintf("running (pid %d, version %s), answering on %s", h.PID, h.Version, socket)
	if !h.LastTick.IsZero() {
		ch.Detail += fmt.Sprintf("; last tick %s ago", humanSpan(d.p.Now().Sub(h.LastTick)))
	}
	if h.Version != d.o.Version {
		ch.Status = Warn
		ch.Detail = fmt.Sprintf("running version %s (pid %d), but this binary is %s: the app still runs the old code", h.Version, h.PID, d.o.Version)
		ch.Fix = "session-supervisor service restart   (or quit the app and start it again)"
	}
	return ch
}

// stallText says how long the loop has been stuck, from what the app told.
func (d *doctor) stallText(h Health) string {
	switch {
	case !h.LastTick.IsZero():
		return fmt.Sprintf("no tick for %s (last at %s)", humanSpan(d.p.Now().Sub(h.LastTick)), h.LastTick.Local().Format("15:04:05"))
	case h.TickLag > 0:
		return fmt.Sprintf("no tick for %s", humanSpan(h.TickLag))
	}
	return "it reports no recent tick"
}

// humanSpan is a duration in whole seconds ("1m30s"), or "less than a
// second".
func humanSpan(d time.Duration) string {
	if d < time.Second {
		return "less than a second"
	}
	return d.Truncate(time.Second).String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
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
func (d *doctor) checkService(ctx context.Context) Check {
	ch := Check{Name: "service"}
	st, err := d.p.Service(ctx)
	if err != nil {
		ch.Status, ch.Detail = Warn, err.Error()
		return ch
	}
	where := st.Kind + " " + st.UnitPath
	switch st.State {
	case packaging.StateNotInstalled:
		ch.Status = Warn
		ch.Detail = "not installed: the app does not start at login or come back after a crash"
		ch.Fix = "session-supervisor service install"
		return ch
	case packaging.StateRunning:
		ch.Status, ch.Detail = OK, "installed and running ("+where+")"
	case packaging.StateStopped:
		ch.Status, ch.Detail = Warn, "installed but not running ("+where+")"
		ch.Fix = "session-supervisor service start"
	case packaging.StateFailed:
		ch.Status, ch.Detail = Fail, "installed but failed ("+where+")"
		if st.Problem != nil {
			ch.Detail += ": " + st.Problem.What
			ch.Fix = st.Problem.Fix
		}
		return ch
	default:
		ch.Status, ch.Detail = Warn, "installed ("+where+"), state unknown"
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
		ch.Status = Warn
		ch.Detail += "; it runs " + st.Command + ", not this binary with this data directory"
		ch.Fix = "session-supervisor service install   (rewrites the unit), then: session-supervisor service restart"
	}
	return ch
}

// checkAgent looks an agent CLI up on PATH and asks its version. Every
// missing agent is a warning, the managed ones included: the app runs and
// supervises without any of them, and which agents a user wants is theirs
// to say. The exception is a command the user set explicitly that does not
// resolve: that is a configuration mistake, and every session of that
// agent would fail to start, so it fails.
func (d *doctor) checkAgent(ctx context.Context, a Agent, userSettings map[string]string) Check {
	ch := Check{Name: "agent " + a.Name}
	command, configured := a.Command, false
	if v, ok := userSettings[a.Setting]; ok && a.Setting != "" {
		command, configured = v, true
	}
	path, err := d.p.LookPath(command)
	if err != nil {
		if configured {
			ch.Status = Fail
			ch.Detail = fmt.Sprintf("%s is set to %q, which is not found: every %s session would fail to start", a.Setting, command, a.display())
			ch.Fix = "session-supervisor settings reset " + a.Setting + "   (or settings set " + a.Setting + " /path/to/" + a.Name + ")"
			return ch
		}
		ch.Status = Warn
		if a.Managed {
			ch.Detail = command + " not found on PATH: the app runs, but cannot start " + a.display() + " sessions"
		} else {
			ch.Detail = command + " not found on PATH (optional: only needed for " + a.Name + " sessions)"
		}
		ch.Fix = a.Install
		return ch
	}
	vctx, cancel := context.WithTimeout(ctx, d.o.VersionTimeout)
	v, err := d.p.Version(vctx, path)
	timedOut := vctx.Err() != nil
	cancel()
	if timedOut {
		err = fmt.Errorf("no answer within %s", d.o.VersionTimeout)
	}
	if err != nil {
		ch.Status = Warn
		ch.Detail = fmt.Sprintf("found %s, but `%s --version` failed: %v", path, filepath.Base(path), err)
		ch.Fix = "reinstall it: " + a.Install
		return ch
	}
	ch.Status, ch.Detail = OK, path+", "+v
	return ch
}

// The D-Bus names the desktop integration needs on Linux.
const (
	NotificationsName = "org.freedesktop.Notifications"
	TrayWatcherName   = "org.kde.StatusNotifierWatcher"
)

// checkDesktopBus checks the session bus for a notification service and a
// tray host (StatusNotifierWatcher). Both only warn: the supervisor works
// without them, you just do not see its notifications or tray icon.
func (d *doctor) checkDesktopBus(ctx context.Context) []Check {
	notif := Check{Name: "notifications"}
	tray := Check{Name: "tray host"}
	addr := d.sessionBusAddress()
	if addr == "" {
		notif.Status = Warn
		notif.Detail = "no D-Bus session bus ($DBUS_SESSION_BUS_ADDRESS is unset and there is no $XDG_RUNTIME_DIR/bus): desktop notifications cannot be shown"
		notif.Fix = "run the app inside your desktop session (the installed service does); from SSH: export DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$(id -u)/bus"
		tray.Status, tray.Detail = Warn, "not checked: no session bus"
		return []Check{notif, tray}
	}
	ctx, cancel := context.WithTimeout(ctx, d.o.BusTimeout)
	defer cancel()
	owned, activatable, err := d.p.BusNames(ctx, addr)
	if err != nil {
		notif.Status, notif.Detail = Warn, "cannot ask the session bus "+addr+": "+err.Error()
		if errors.Is(err, exec.ErrNotFound) {
			notif.Fix = "sudo apt install libglib2.0-bin   (provides gdbus; or dbus-bin for dbus-send)"
		}
		tray.Status, tray.Detail = Warn, "not checked: "+err.Error()
		return []Check{notif, tray}
	}
	switch {
	case slices.Contains(owned, NotificationsName):
		notif.Status, notif.Detail = OK, NotificationsName+" is served on the session bus"
	case slices.Contains(activatable, NotificationsName):
		notif.Status, notif.Detail = OK, NotificationsName+" is started on demand by the session bus"
	default:
		notif.Status = Warn
		notif.Detail = "nothing serves " + NotificationsName + " on the session bus: the app's notifications will not show"
		notif.Fix = "sudo apt install dunst   (or any notification daemon; desktops such as GNOME and KDE have one)"
	}
	if slices.Contains(owned, TrayWatcherName) || slices.Contains(activatable, TrayWatcherName) {
		tray.Status, tray.Detail = OK, TrayWatcherName+" is on the session bus"
	} else {
		tray.Status = Warn
		tray.Detail = "no tray host (" + TrayWatcherName + ") on the session bus: the tray icon will not show; the window and notifications still work"
		tray.Fix = "GNOME: sudo apt install gnome-shell-extension-appindicator, then log in again; other desktops: add a system tray (status notifier) panel item"
	}
	return []Check{notif, tray}
}

// sessionBusAddress is $DBUS_SESSION_BUS_ADDRESS, else the systemd
// per-user bus socket that D-Bus libraries (godbus included) fall back to.
func (d *doctor) sessionBusAddress() string {
	return SessionBusAddress(d.p.Getenv, d.p.Stat)
}

// SessionBusAddress is $DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus
// when that is a socket, else "".
func SessionBusAddress(getenv func(string) string, stat func(string) (fs.FileInfo, error)) string {
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" {
		return a
	}
	if rt := getenv("XDG_RUNTIME_DIR"); rt != "" {
		p := filepath.Join(rt, "bus")
		if fi, err := stat(p); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			return "unix:path=" + p
		}
	}
	return ""
}

// FormatSize is a byte count for people.
func FormatSize(n int64) string {
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

// ShellQuote quotes a path for the fix lines, which users paste into a
// shell.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
