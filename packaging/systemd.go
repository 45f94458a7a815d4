package packaging

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Restart policy of the user unit. StartLimitIntervalSec/StartLimitBurst
// are what make "restarted on failure" end: a crash loop gives up after the
// burst and the unit shows as failed (service status, doctor) instead of
// spinning forever.
const (
	restartSec            = 5
	startLimitBurst       = 5
	startLimitIntervalSec = 600
	// TimeoutStopSec is how long systemd waits after SIGTERM before killing
	// what is left. StopGrace (launch.go) is shorter so the app finishes its
	// own shutdown first.
	timeoutStopSec = 60
)

// SystemdUnit returns the user unit for spec. The app's window and tray need
// the desktop's display and session bus, so by default the unit is part of
// graphical-session.target: started when the desktop session is, stopped with
// it. A headless spec has no such need and is wanted by default.target, which
// also starts without a desktop (with `loginctl enable-linger`, at boot).
//
// The unit is built line by line rather than from text/template: every value
// needs systemd's own quoting, which a template would only hide in helper
// functions, and text/template's reflection keeps the linker from dropping
// unused methods from the binary (kardianos/service removed it for the same
// reason).
func SystemdUnit(spec Spec) string {
	var b strings.Builder
	line := func(s ...string) {
		for _, x := range s {
			b.WriteString(x)
			b.WriteByte('\n')
		}
	}
	target := "graphical-session.target"
	if spec.Headless {
		target = "default.target"
	}
	line(
		"# Session Supervisor as a per-user service.",
		"# Written by `session-supervisor service install`, removed by `session-supervisor service uninstall`.",
		"# A new install overwrites this file: put local changes in a drop-in instead",
		"# (systemctl --user edit "+UnitName+").",
		"",
		"[Unit]",
		"Description="+DisplayName+": "+strings.ToLower(Description[:1])+Description[1:],
		"Documentation=https://github.com/session-supervisor/session-supervisor#readme",
	)
	if !spec.Headless {
		line(
			"# Started and stopped with the desktop session: the window, the tray and",
			"# notifications need its display and session bus.",
			"PartOf=graphical-session.target",
			"After=graphical-session.target",
		)
	}
	line(
		fmt.Sprintf("# Restarted after a crash, but at most %d times in %d minutes: a crash loop", startLimitBurst, startLimitIntervalSec/60),
		"# then stops and shows as failed (session-supervisor service status).",
		fmt.Sprintf("StartLimitIntervalSec=%d", startLimitIntervalSec),
		fmt.Sprintf("StartLimitBurst=%d", startLimitBurst),
		"",
		"[Service]",
		"Type=simple",
		"ExecStart="+systemdCommand(append([]string{spec.Executable}, spec.Args()...)),
	)
	if spec.PathEnv != "" {
		line(
			"# The PATH of the shell that installed the service, so the agent CLIs",
			"# (often in ~/.local/bin or an npm prefix) are found.",
			"Environment="+systemdQuote("PATH="+spec.PathEnv, false),
		)
	}
	line(
		"# Tells `run` it is under systemd: it logs to stderr, which goes to the journal.",
		"Environment="+EnvService+"=systemd",
		"Restart=on-failure",
		fmt.Sprintf("RestartSec=%ds", restartSec),
		"# SIGTERM to the app alone: it lets the agents' turns in flight finish, then",
		"# exits; systemd kills whatever is left after TimeoutStopSec.",
		"KillMode=mixed",
		fmt.Sprintf("TimeoutStopSec=%ds", timeoutStopSec),
		"",
		"[Install]",
		"WantedBy="+target,
	)
	return b.String()
}

// systemdCommand renders an ExecStart command line.
func systemdCommand(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = systemdQuote(a, true)
	}
	return strings.Join(q, " ")
}

// systemdQuote quotes one word for a unit file: double quotes when it holds
// anything systemd would split or unescape, backslash escapes inside them,
// %% for the specifier character, and in a command line $$ for the variable
// character (systemd expands $VAR in ExecStart, not in Environment=).
func systemdQuote(s string, command bool) string {
	var b strings.Builder
	needQuotes := s == ""
	for _, r := range s {
		switch r {
		case '%':
			b.WriteString("%%")
		case '$':
			if command {
				b.WriteString("$$")
			} else {
				b.WriteRune(r)
			}
		case '\\':
			b.WriteString(`\\`)
			needQuotes = true
		case '"':
			b.WriteString(`\"`)
			needQuotes = true
		case '\'', ' ', '\t', ';':
			b.WriteRune(r)
			needQuotes = true
		case '\n':
			b.WriteString(`\n`)
			needQuotes = true
		default:
			b.WriteRune(r)
		}
	}
	if needQuotes {
		return `"` + b.String() + `"`
	}
	return b.String()
}

// SystemdUser manages the per-user systemd unit.
type SystemdUser struct {
	spec       Spec
	configHome string
	run        Runner
}

// NewSystemdUser returns the systemd manager for a given XDG config home
// and command runner (tests pass a temporary directory and a fake).
func NewSystemdUser(spec Spec, configHome string, run Runner) *SystemdUser {
	return &SystemdUser{spec: spec, configHome: configHome, run: run}
}

// Kind implements Manager.
func (m *SystemdUser) Kind() string { return "systemd user unit" }

// UnitPath implements Manager: $XDG_CONFIG_HOME/systemd/user/session-supervisor.service.
func (m *SystemdUser) UnitPath() string {
	return filepath.Join(m.configHome, "systemd", "user", UnitName)
}

// Install implements Manager.
func (m *SystemdUser) Install(ctx context.Context) (InstallResult, error) {
	if err := m.spec.Validate(); err != nil {
		return InstallResult{}, err
	}
	path := m.UnitPath()
	change, err := writeIfChanged(path, []byte(SystemdUnit(m.spec)), 0o644)
	res := InstallResult{Path: path, Change: change}
	if err != nil {
		return res, err
	}
	cannot := func(err error) error {
		return withWhat(err, fmt.Sprintf("wrote %s, but could not enable it", path))
	}
	if _, err := m.systemctl(ctx, "daemon-reload"); err != nil {
		return res, cannot(err)
	}
	// reenable (disable, then enable) after an update: the [Install]
	// target may have changed (headless or not), and its old wants link
	// must not stay behind.
	verb := "enable"
	if change == Updated {
		verb = "reenable"
	}
	if _, err := m.systemctl(ctx, verb, UnitName); err != nil {
		return res, cannot(err)
	}
	res.Enabled = true
	if state, err := m.query(ctx, "is-active"); err == nil {
		res.Running = isActive(state)
	}
	return res, nil
}

// Uninstall implements Manager.
func (m *SystemdUser) Uninstall(ctx context.Context) (UninstallResult, error) {
	var res UninstallResult
	path := m.UnitPath()
	_, err := os.Lstat(path)
	installed := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("looking for %s: %w", path, err)
	}
	links := m.wantsLinks()
	if !installed && len(links) == 0 {
		return res, nil
	}
	// disable --now stops a running instance and removes the links enable
	// made; without a user manager it cannot, and the links are removed
	// below by hand.
	if _, err := m.systemctl(ctx, "disable", "--now", UnitName); err != nil {
		res.Note = "systemd could not be told, so an instance already running keeps running until you log out: " + err.Error()
	}
	for _, l := range links {
		if err := os.Remove(l); err == nil {
			res.Removed = append(res.Removed, l)
		} else if !errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("removing %s: %w", l, err)
		}
		// enable created the .wants directory if it was missing; disable
		// leaves it behind, empty.
		removeIfEmpty(filepath.Dir(l))
	}
	if installed {
		if err := os.Remove(path); err != nil {
			return res, permissionProblem("removing "+path, err)
		}
		res.Removed = append(res.Removed, path)
	}
	if res.Note == "" {
		_, _ = m.systemctl(ctx, "daemon-reload")
	}
	// The directories Install may have created, only if nothing else is in
	// them.
	userDir := filepath.Dir(path)
	if removeIfEmpty(userDir) {
		removeIfEmpty(filepath.Dir(userDir))
	}
	return res, nil
}

// wantsLinks are the symlinks to the unit in the .wants/.requires
// directories: what `systemctl --user enable` wrote on Install's behalf.
func (m *SystemdUser) wantsLinks() []string {
	dir := filepath.Dir(m.UnitPath())
	var links []string
	for _, pattern := range []string{"*.wants", "*.requires"} {
		dirs, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, d := range dirs {
			l := filepath.Join(d, UnitName)
			if fi, err := os.Lstat(l); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				links = append(links, l)
			}
		}
	}
	return links
}

// Start implements Manager.
func (m *SystemdUser) Start(ctx context.Context) error { return m.control(ctx, "start") }

// Stop implements Manager.
func (m *SystemdUser) Stop(ctx context.Context) error { return m.control(ctx, "stop") }

// Restart implements Manager.
func (m *SystemdUser) Restart(ctx context.Context) error { return m.control(ctx, "restart") }

func (m *SystemdUser) control(ctx context.Context, verb string) error {
	if _, err := os.Stat(m.UnitPath()); errors.Is(err, os.ErrNotExist) {
		return notInstalled(m.UnitPath())
	}
	if verb != "stop" {
		// A unit that hit its start limit refuses start and restart until
		// its failed state is reset; asking to start it is that reset.
		_, _ = m.systemctl(ctx, "reset-failed", UnitName)
	}
	if _, err := m.systemctl(ctx, verb, UnitName); err != nil {
		return withWhat(err, "could not "+verb+" "+UnitName)
	}
	return nil
}

// Status implements Manager.
func (m *SystemdUser) Status(ctx context.Context) (Status, error) {
	st, unit, err := unitStatus(m.Kind(), m.UnitPath())
	if err != nil || !st.Installed {
		return st, err
	}
	st.Current = unit == SystemdUnit(m.spec) || unit == SystemdUnit(toggleHeadless(m.spec))
	st.Command = unitValue(unit, "ExecStart")
	state, err := m.query(ctx, "is-active")
	if err != nil {
		st.State = StateUnknown
		st.Problem = asProblem(err)
		return st, nil
	}
	switch {
	case isActive(state):
		st.State = StateRunning
	case state == "failed":
		st.State = StateFailed
		st.Problem = &Problem{
			What: "the service failed: it exited with an error more often than its restart limit allows, or could not start",
			Fix:  "journalctl --user -u " + UnitName + " -e   # see why, then: session-supervisor service restart",
		}
	default:
		st.State = StateStopped
	}
	if enabled, err := m.query(ctx, "is-enabled"); err == nil {
		st.Enabled = strings.HasPrefix(enabled, "enabled")
	}
	return st, nil
}

func isActive(state string) bool {
	switch state {
	case "active", "activating", "reloading", "deactivating", "refreshing":
		return true
	}
	return false
}

// query runs a systemctl query (is-active, is-enabled) and returns its
// one-word answer. Those exit non-zero for "inactive" or "disabled", so an
// answer on stdout wins over the exit status.
func (m *SystemdUser) query(ctx context.Context, verb string) (string, error) {
	out, errOut, err := m.run(ctx, "systemctl", "--user", verb, UnitName)
	if ans := strings.TrimSpace(out); ans != "" {
		return ans, nil
	}
	if err == nil {
		return "", fmt.Errorf("systemctl --user %s %s answered nothing", verb, UnitName)
	}
	return "", systemctlError([]string{verb, UnitName}, errOut, err)
}

func (m *SystemdUser) systemctl(ctx context.Context, args ...string) (string, error) {
	out, errOut, err := m.run(ctx, "systemctl", append([]string{"--user"}, args...)...)
	if err != nil {
		return out, systemctlError(args, errOut, err)
	}
	return out, nil
}

// systemctlError explains the two failures users actually meet: no
// systemd at all, and no user manager for this login (sudo, su, a container,
// an SSH login without lingering).
func systemctlError(args []string, stderr string, err error) error {
	msg := strings.TrimSpace(stderr)
	if errors.Is(err, exec.ErrNotFound) {
		return &Problem{
			What: "systemctl is not installed: this system does not run systemd",
			Err:  err,
			Fix:  "start the app with your desktop session instead: mkdir -p ~/.config/autostart && cp ~/.local/share/applications/" + Name + ".desktop ~/.config/autostart/",
		}
	}
	for _, sign := range []string{"Failed to connect to bus", "No medium found", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "Failed to connect to user scope bus"} {
		if strings.Contains(msg, sign) {
			return &Problem{
				What: "systemctl --user is not available: there is no systemd user manager for this login",
				Err:  errors.New(msg),
				Fix:  "run it as yourself in your desktop or SSH login (not with sudo or su); for a login without a desktop run `loginctl enable-linger $USER`, log in again and retry",
			}
		}
	}
	if msg == "" {
		return fmt.Errorf("systemctl --user %s: %w", strings.Join(args, " "), err)
	}
	return fmt.Errorf("systemctl --user %s: %s: %w", strings.Join(args, " "), msg, err)
}

// withWhat puts a headline on err, keeping a Problem's fix.
func withWhat(err error, what string) error {
	var p *Problem
	if errors.As(err, &p) {
		return &Problem{What: what + ": " + p.What, Err: p.Err, Fix: p.Fix}
	}
	return fmt.Errorf("%s: %w", what, err)
}

func asProblem(err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	return &Problem{What: "the service manager could not be asked", Err: err}
}

func notInstalled(path string) error {
	return &Problem{What: "the service is not installed (no " + path + ")", Fix: "session-supervisor service install"}
}

// unitValue returns the first value of key in a unit file.
func unitValue(unit, key string) string {
	sc := bufio.NewScanner(strings.NewReader(unit))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+"="); ok {
			return v
		}
	}
	return ""
}
