package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// doctorMachine isolates doctor from the machine running the tests: a PATH
// holding only the given fake agent CLIs (shell scripts), a temporary XDG
// config home (no service installed), no session bus. It returns a data
// directory path that does not exist yet.
func doctorMachine(t *testing.T, agents map[string]string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake agents are shell scripts")
	}
	bin := t.TempDir()
	for name, script := range agents {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", "")
	old := doctorVersionTimeout
	doctorVersionTimeout = 500 * time.Millisecond
	t.Cleanup(func() { doctorVersionTimeout = old })
	return filepath.Join(shortDir(t), "data")
}

// doctorLines maps each check name to its line and fix line.
func doctorLines(out string) map[string]string {
	m := map[string]string{}
	var last string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "ok", "warn", "fail":
			name := f[1]
			if name == "agent" || name == "data" || name == "tray" {
				name += " " + f[2]
			}
			m[name] = l
			last = name
		case "fix:":
			if last != "" {
				m[last] += "\n" + l
			}
		}
	}
	return m
}

func TestDoctorHealthyDataDirectory(t *testing.T) {
	sleep := requireAnyTool(t, "sleep")
	dir := doctorMachine(t, map[string]string{
		"claude":   `echo "2.1.197 (Claude Code)"`,
		"codex":    `echo "codex-cli 0.50.0"`,
		"gemini":   "exec " + sleep + " 5",    // never answers in time
		"opencode": `echo "boom" >&2; exit 3`, // broken install
		// copilot: absent
	})
	// A healthy database, created the normal way.
	if code, _, errOut := runCLI(t, "--data-dir", dir, "settings", "set", "supervisor.tick_seconds", "20"); code != 0 {
		t.Fatalf("settings set: %s", errOut)
	}
	code, out, errOut := runCLI(t, "--data-dir", dir, "doctor")
	if code != exitOK {
		t.Fatalf("doctor on a healthy directory: exit %d\n%s\n%s", code, out, errOut)
	}
	lines := doctorLines(out)
	want := map[string][]string{
		"data directory": {"ok", dir, "mode 0700"},
		"database":       {"ok", "schema version", "integrity ok"},
		"app":            {"warn", "not running", "fix: session-supervisor service start"},
		"service":        {"warn", "not installed", "fix: session-supervisor service install"},
		"agent claude":   {"ok", "2.1.197 (Claude Code)"},
		"agent codex":    {"ok", "codex-cli 0.50.0"},
		"agent gemini":   {"warn", "no answer within"},
		"agent opencode": {"warn", "exit status 3: boom", "fix: reinstall it: npm install -g opencode-ai"},
		"agent copilot":  {"warn", "not found on PATH (optional", "fix: npm install -g @github/copilot"},
	}
	if hasFreedesktop(runtime.GOOS) {
		want["notifications"] = []string{"warn", "no D-Bus session bus", "fix: "}
		want["tray host"] = []string{"warn", "not checked"}
	}
	for name, parts := range want {
		l, ok := lines[name]
		if !ok {
			t.Errorf("no %q check in:\n%s", name, out)
			continue
		}
		if !strings.HasPrefix(l, parts[0]+" ") {
			t.Errorf("%s: %q, want status %s", name, l, parts[0])
		}
		for _, p := range parts[1:] {
			if !strings.Contains(l, p) {
				t.Errorf("%s: %q lacks %q", name, l, p)
			}
		}
	}
	if !strings.Contains(out, "Nothing is broken") {
		t.Errorf("summary:\n%s", out)
	}
}

func TestDoctorCorruptDatabase(t *testing.T) {
	dir := doctorMachine(t, nil)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "supervisor.db")
	junk := bytes.Repeat([]byte("not a database "), 500)
	if err := os.WriteFile(db, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "--data-dir", dir, "doctor")
	if code != exitFail {
		t.Fatalf("doctor on a corrupt database: exit %d, want 1\n%s", code, out)
	}
	l := doctorLines(out)["database"]
	for _, want := range []string{"fail ", "corrupt", "fix: stop the app", "mv " + db + " " + db + ".corrupt"} {
		if !strings.Contains(l, want) {
			t.Errorf("database check %q lacks %q", l, want)
		}
	}
	if !strings.Contains(errOut, "1 check(s) failed") {
		t.Errorf("stderr %q does not say a check failed", errOut)
	}
	if b, _ := os.ReadFile(db); !bytes.Equal(b, junk) {
		t.Error("doctor changed the corrupt file")
	}
}

func TestDoctorJSON(t *testing.T) {
	dir := doctorMachine(t, map[string]string{"claude": `echo 2.1.197`})
	code, out, _ := runCLI(t, "--data-dir", dir, "doctor", "--json")
	if code != exitOK {
		t.Fatalf("doctor --json: exit %d\n%s", code, out)
	}
	var rep map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"status", "version", "data_dir", "checks"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("report lacks %q", k)
		}
	}
	var checks []map[string]string
	if err := json.Unmarshal(rep["checks"], &checks); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, ch := range checks {
		names[ch["name"]] = true
		switch ch["status"] {
		case "ok", "warn", "fail":
		default:
			t.Errorf("check %v has status %q", ch, ch["status"])
		}
		if ch["detail"] == "" {
			t.Errorf("check %v has no detail", ch)
		}
		for k := range ch {
			if k != "name" && k != "status" && k != "detail" && k != "fix" {
				t.Errorf("check %v has an undocumented key %q", ch, k)
			}
		}
	}
	for _, n := range []string{"data directory", "database", "app", "service", "agent claude", "agent codex", "agent gemini", "agent opencode", "agent copilot"} {
		if !names[n] {
			t.Errorf("no %q check", n)
		}
	}
	// A fresh machine: nothing broken, so "warn" overall and exit 0.
	if string(rep["status"]) != `"warn"` {
		t.Errorf("status %s, want warn", rep["status"])
	}
}

// TestDoctorConfiguredClaudeMissing: a Claude command the user set on
// purpose that does not exist breaks every Claude session, so it fails,
// unlike a missing default `claude`, which only warns.
func TestDoctorConfiguredClaudeMissing(t *testing.T) {
	dir := doctorMachine(t, nil)
	if code, _, errOut := runCLI(t, "--data-dir", dir, "settings", "set", "agents.claude.command", "/nowhere/claude"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, _ := runCLI(t, "--data-dir", dir, "doctor")
	l := doctorLines(out)["agent claude"]
	if code != exitFail || !strings.HasPrefix(l, "fail ") || !strings.Contains(l, "fix: session-supervisor settings reset agents.claude.command") {
		t.Errorf("exit %d, claude check %q", code, l)
	}
}

func TestDoctorAppRunningThenStuck(t *testing.T) {
	doctorMachine(t, nil)
	dir := shortDir(t)
	api, _ := serveFakeApp(t, dir)
	code, out, _ := runCLI(t, "--data-dir", dir, "doctor")
	if l := doctorLines(out)["app"]; code != exitOK || !strings.HasPrefix(l, "ok ") || !strings.Contains(l, "running (pid") {
		t.Errorf("app running: exit %d, %q", code, l)
	}
	// Still holding the data directory, no longer answering.
	api.Close()
	code, out, _ = runCLI(t, "--data-dir", dir, "doctor")
	if l := doctorLines(out)["app"]; code != exitFail || !strings.HasPrefix(l, "fail ") || !strings.Contains(l, "does not answer") || !strings.Contains(l, "fix: ") {
		t.Errorf("app stuck: exit %d, %q", code, l)
	}
}

func TestDoctorDataDirectoryMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no unix modes")
	}
	dir := doctorMachine(t, nil)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ch, ok := checkDataDir(dir)
	if !ok || ch.Status != checkWarn || !strings.Contains(ch.Detail, "0755") || ch.Fix != "chmod 700 "+dir {
		t.Errorf("a 0755 data directory: %+v", ch)
	}
}

func TestDoctorDesktopBus(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	withBus := env(map[string]string{"DBUS_SESSION_BUS_ADDRESS": "unix:path=/x"})
	cases := []struct {
		name             string
		getenv           func(string) string
		owned, activ     []string
		err              error
		notif, tray, fix string
	}{
		{"full desktop", withBus, []string{notificationsName, trayWatcherName}, nil, nil, "ok", "ok", ""},
		{"notifications on demand", withBus, nil, []string{notificationsName}, nil, "ok", "warn", "gnome-shell-extension-appindicator"},
		{"bare window manager", withBus, []string{"org.freedesktop.DBus"}, nil, nil, "warn", "warn", "dunst"},
		{"no dbus tools", withBus, nil, nil, exec.ErrNotFound, "warn", "warn", "libglib2.0-bin"},
		{"no bus", env(nil), nil, nil, nil, "warn", "warn", "DBUS_SESSION_BUS_ADDRESS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := busNamesFunc
			busNamesFunc = func(context.Context, string) ([]string, []string, error) { return tc.owned, tc.activ, tc.err }
			defer func() { busNamesFunc = old }()
			got := checkDesktopBus(context.Background(), tc.getenv)
			if len(got) != 2 || got[0].Status != tc.notif || got[1].Status != tc.tray {
				t.Fatalf("checks = %+v, want notifications %s, tray %s", got, tc.notif, tc.tray)
			}
			if tc.fix != "" && !strings.Contains(got[0].Fix+got[1].Fix, tc.fix) {
				t.Errorf("fixes %q / %q lack %q", got[0].Fix, got[1].Fix, tc.fix)
			}
		})
	}
}

func TestDoctorParsesBusNames(t *testing.T) {
	gdbus := `(['org.freedesktop.DBus', ':1.7', 'org.freedesktop.Notifications'],)`
	dbusSend := "method return time=1.2 sender=org.freedesktop.DBus -> destination=:1.9 serial=3 reply_serial=2\n   array [\n      string \"org.freedesktop.DBus\"\n      string \"org.kde.StatusNotifierWatcher\"\n   ]\n"
	if got := parseBusNames(gdbus); strings.Join(got, ",") != "org.freedesktop.DBus,:1.7,org.freedesktop.Notifications" {
		t.Errorf("gdbus: %q", got)
	}
	if got := parseBusNames(dbusSend); strings.Join(got, ",") != "org.freedesktop.DBus,org.kde.StatusNotifierWatcher" {
		t.Errorf("dbus-send: %q", got)
	}
}

// TestDoctorRealSessionBus asks a private dbus-daemon through the real
// gdbus/dbus-send: a bus that can start a notification daemon on demand
// but has no tray host.
func TestDoctorRealSessionBus(t *testing.T) {
	daemon := requireAnyTool(t, "dbus-daemon")
	requireAnyTool(t, "gdbus", "dbus-send")
	dir := shortDir(t)
	services := filepath.Join(dir, "services")
	if err := os.MkdirAll(services, 0o755); err != nil {
		t.Fatal(err)
	}
	svc := "[D-BUS Service]\nName=org.freedesktop.Notifications\nExec=/bin/false\n"
	if err := os.WriteFile(filepath.Join(services, "org.freedesktop.Notifications.service"), []byte(svc), 0o644); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "bus")
	conf := `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=` + socket + `</listen>
  <servicedir>` + services + `</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>`
	if err := os.WriteFile(filepath.Join(dir, "bus.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(daemon, "--config-file="+filepath.Join(dir, "bus.conf"), "--nofork")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("dbus-daemon did not create its socket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	env := map[string]string{"DBUS_SESSION_BUS_ADDRESS": "unix:path=" + socket}
	got := checkDesktopBus(context.Background(), func(k string) string { return env[k] })
	if got[0].Status != checkOK || !strings.Contains(got[0].Detail, "on demand") {
		t.Errorf("notifications: %+v", got[0])
	}
	if got[1].Status != checkWarn || !strings.Contains(got[1].Detail, "no tray host") {
		t.Errorf("tray host: %+v", got[1])
	}
	// The XDG_RUNTIME_DIR/bus fallback finds the same bus.
	if a := sessionBusAddress(func(k string) string {
		return map[string]string{"XDG_RUNTIME_DIR": dir}[k]
	}); a != "unix:path="+socket {
		t.Errorf("fallback address %q", a)
	}
}
