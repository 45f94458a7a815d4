package packaging

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// launchd has no restart burst limit; ThrottleInterval is its only brake:
// it waits at least this long between two starts of a job that keeps dying.
const throttleIntervalSec = 10

// LaunchdPlist returns the LaunchAgent property list for spec.
//
// RunAtLoad starts it when launchd loads the agent, which it does for every
// plist in ~/Library/LaunchAgents at login. KeepAlive {SuccessfulExit: false}
// restarts it only when it exits with an error or is killed: quitting from
// the menu (exit 0) must stay quit. LimitLoadToSessionType Aqua keeps a
// windowed agent out of SSH and background sessions, where it has no menu bar.
func LaunchdPlist(spec Spec, home string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by "session-supervisor service install", removed by "session-supervisor service uninstall". -->
<plist version="1.0">
<dict>
`)
	key := func(k string) { fmt.Fprintf(&b, "\t<key>%s</key>\n", xmlText(k)) }
	str := func(k, v string) { key(k); fmt.Fprintf(&b, "\t<string>%s</string>\n", xmlText(v)) }
	boolean := func(k string, v bool) { key(k); fmt.Fprintf(&b, "\t<%t/>\n", v) }
	integer := func(k string, v int) { key(k); fmt.Fprintf(&b, "\t<integer>%d</integer>\n", v) }

	str("Label", AppID)
	key("ProgramArguments")
	b.WriteString("\t<array>\n")
	for _, a := range append([]string{spec.Executable}, spec.Args()...) {
		fmt.Fprintf(&b, "\t\t<string>%s</string>\n", xmlText(a))
	}
	b.WriteString("\t</array>\n")
	boolean("RunAtLoad", true)
	key("KeepAlive")
	b.WriteString("\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
	integer("ThrottleInterval", throttleIntervalSec)
	// launchd sends SIGTERM, then SIGKILL after ExitTimeOut: the same grace
	// as the systemd unit's TimeoutStopSec.
	integer("ExitTimeOut", timeoutStopSec)
	if spec.Headless {
		str("ProcessType", "Background")
	} else {
		// Interactive: scheduled like an app, not throttled like a daemon.
		str("ProcessType", "Interactive")
		str("LimitLoadToSessionType", "Aqua")
	}
	key("EnvironmentVariables")
	b.WriteString("\t<dict>\n")
	if spec.PathEnv != "" {
		// launchd's PATH is /usr/bin:/bin:/usr/sbin:/sbin: without the
		// installing shell's PATH, agent CLIs from Homebrew or npm are not
		// found.
		fmt.Fprintf(&b, "\t\t<key>PATH</key>\n\t\t<string>%s</string>\n", xmlText(spec.PathEnv))
	}
	fmt.Fprintf(&b, "\t\t<key>%s</key>\n\t\t<string>launchd</string>\n", EnvService)
	b.WriteString("\t</dict>\n")
	// The app logs to a rotating file in its data directory; this file only
	// catches what bypasses the logger (a panic's stack trace). ~/Library/Logs
	// exists on every Mac, and launchd does not create directories.
	str("StandardErrorPath", launchdStderrPath(home))
	b.WriteString("</dict>\n</plist>\n")
	return b.String()
}

func launchdStderrPath(home string) string {
	return filepath.Join(home, "Library", "Logs", Name+".stderr.log")
}

func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// LaunchAgent manages the per-user launchd agent.
type LaunchAgent struct {
	spec Spec
	home string
	uid  int
	run  Runner
}

// NewLaunchAgent returns the launchd manager for a home directory, user id
// and command runner (tests pass a temporary home and a fake runner).
func NewLaunchAgent(spec Spec, home string, uid int, run Runner) *LaunchAgent {
	return &LaunchAgent{spec: spec, home: home, uid: uid, run: run}
}

// Kind implements Manager.
func (m *LaunchAgent) Kind() string { return "launchd agent" }

// UnitPath implements Manager: ~/Library/LaunchAgents/<AppID>.plist.
func (m *LaunchAgent) UnitPath() string {
	return filepath.Join(m.home, "Library", "LaunchAgents", AppID+".plist")
}

// domain is the user's GUI launchd domain; target is the job in it.
func (m *LaunchAgent) domain() string { return "gui/" + strconv.Itoa(m.uid) }
func (m *LaunchAgent) target() string { return m.domain() + "/" + AppID }

// Install implements Manager. Writing the plist is what enables it: launchd
// loads every plist in ~/Library/LaunchAgents at login. It is not loaded now
// (that would start it, RunAtLoad): `service start` does that.
func (m *LaunchAgent) Install(ctx context.Context) (InstallResult, error) {
	if err := m.spec.Validate(); err != nil {
		return InstallResult{}, err
	}
	path := m.UnitPath()
	change, err := writeIfChanged(path, []byte(LaunchdPlist(m.spec, m.home)), 0o644)
	res := InstallResult{Path: path, Change: change, Enabled: err == nil}
	if err != nil {
		return res, err
	}
	// A disabled override (launchctl disable) would keep it from loading
	// at login; clearing it is part of "starts at login".
	_, _, _ = m.run(ctx, "launchctl", "enable", m.target())
	if _, running, err := m.loaded(ctx); err == nil {
		res.Running = running
	}
	return res, nil
}

// Uninstall implements Manager.
func (m *LaunchAgent) Uninstall(ctx context.Context) (UninstallResult, error) {
	var res UninstallResult
	path := m.UnitPath()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if loaded, _, err := m.loaded(ctx); err == nil && loaded {
		if _, errOut, err := m.run(ctx, "launchctl", "bootout", m.target()); err != nil {
			res.Note = "launchd could not stop the running agent (" + launchctlMessage(errOut, err) + "); it stops at logout"
		}
	}
	if err := os.Remove(path); err != nil {
		return res, permissionProblem("removing "+path, err)
	}
	res.Removed = append(res.Removed, path)
	return res, nil
}

// Start implements Manager: load the agent (which starts it), or kick it
// if it is loaded but not running.
func (m *LaunchAgent) Start(ctx context.Context) error {
	if _, err := os.Stat(m.UnitPath()); errors.Is(err, os.ErrNotExist) {
		return notInstalled(m.UnitPath())
	}
	loaded, _, err := m.loaded(ctx)
	if err != nil {
		return err
	}
	if loaded {
		return m.launchctl(ctx, "kickstart", m.target())
	}
	return m.launchctl(ctx, "bootstrap", m.domain(), m.UnitPath())
}

// Stop implements Manager: unload the agent. A plain SIGTERM would do too
// (the app exits 0, KeepAlive leaves it alone), but bootout also covers a
// job launchd is about to restart.
func (m *LaunchAgent) Stop(ctx context.Context) error {
	if _, err := os.Stat(m.UnitPath()); errors.Is(err, os.ErrNotExist) {
		return notInstalled(m.UnitPath())
	}
	loaded, _, err := m.loaded(ctx)
	if err != nil || !loaded {
		return err
	}
	return m.launchctl(ctx, "bootout", m.target())
}

// Restart implements Manager: unload and load again, so a plist changed by
// a new install takes effect (kickstart -k would keep the old one).
func (m *LaunchAgent) Restart(ctx context.Context) error {
	if err := m.Stop(ctx); err != nil {
		return err
	}
	return m.launchctl(ctx, "bootstrap", m.domain(), m.UnitPath())
}

// Status implements Manager.
func (m *LaunchAgent) Status(ctx context.Context) (Status, error) {
	st, unit, err := unitStatus(m.Kind(), m.UnitPath())
	if err != nil || !st.Installed {
		return st, err
	}
	st.Enabled = true
	st.Current = unit == LaunchdPlist(m.spec, m.home) || unit == LaunchdPlist(toggleHeadless(m.spec), m.home)
	st.Command = strings.Join(plistArguments(unit), " ")
	_, running, err := m.loaded(ctx)
	switch {
	case err != nil:
		st.State, st.Problem = StateUnknown, asProblem(err)
	case running:
		st.State = StateRunning
	default:
		st.State = StateStopped
	}
	return st, nil
}

var (
	printState = regexp.MustCompile(`(?m)^\s*state = (\S+)`)
	plistArg   = regexp.MustCompile(`<string>([^<]*)</string>`)
)

// loaded asks launchd whether the agent is loaded and running. `launchctl
// print` exits non-zero for a job that is not loaded, which is an answer,
// not an error; a missing launchctl is an error.
func (m *LaunchAgent) loaded(ctx context.Context) (loaded, running bool, err error) {
	out, _, err := m.run(ctx, "launchctl", "print", m.target())
	if err != nil {
		if isNotFound(err) {
			return false, false, &Problem{What: "launchctl is not available", Err: err, Fix: "run this on macOS, in your own login"}
		}
		return false, false, nil
	}
	s := printState.FindStringSubmatch(out)
	return true, s != nil && s[1] == "running", nil
}

func (m *LaunchAgent) launchctl(ctx context.Context, args ...string) error {
	_, errOut, err := m.run(ctx, "launchctl", args...)
	if err != nil {
		return fmt.Errorf("launchctl %s: %s", strings.Join(args, " "), launchctlMessage(errOut, err))
	}
	return nil
}

func launchctlMessage(stderr string, err error) string {
	if s := strings.TrimSpace(stderr); s != "" {
		return s
	}
	return err.Error()
}

// plistArguments extracts ProgramArguments from a plist we wrote.
func plistArguments(plist string) []string {
	start := strings.Index(plist, "<key>ProgramArguments</key>")
	if start < 0 {
		return nil
	}
	rest := plist[start:]
	end := strings.Index(rest, "</array>")
	if end < 0 {
		return nil
	}
	var args []string
	for _, m := range plistArg.FindAllStringSubmatch(rest[:end], -1) {
		args = append(args, html.UnescapeString(m[1]))
	}
	return args
}
