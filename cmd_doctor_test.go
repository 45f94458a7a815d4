package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/doctor"
	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/testdir"
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
	return filepath.Join(testdir.Short(t, "ss"), "data")
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

// TestDoctorHealthyDataDirectory runs doctor through the CLI over the real
// probes: a database made by the app, fake agent CLIs on PATH. (An agent
// that never answers --version is tested in the doctor package, with a
// short timeout.)
func TestDoctorHealthyDataDirectory(t *testing.T) {
	dir := doctorMachine(t, map[string]string{
		"claude":   `echo "2.1.197 (Claude Code)"`,
		"codex":    `echo "codex-cli 0.50.0"`,
		"opencode": `echo "boom" >&2; exit 3`, // broken install
		// gemini, copilot: absent
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
		"agent gemini":   {"warn", "not found on PATH: the app runs, but cannot start Gemini CLI sessions", "fix: npm install -g @google/gemini-cli"},
		"agent opencode": {"warn", "exit status 3: boom", "fix: reinstall it: npm install -g opencode-ai"},
		"agent copilot":  {"warn", "not found on PATH: the app runs, but cannot start Copilot CLI sessions", "fix: npm install -g @github/copilot"},
	}
	if doctor.HasFreedesktop(runtime.GOOS) {
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
	dir := testdir.Short(t, "ss")
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

// TestDoctorAppStalled: an app that answers /v1/health with 503 because its
// supervision loop stopped ticking fails the app check, through the CLI's
// real wiring (the socket in the data directory).
func TestDoctorAppStalled(t *testing.T) {
	doctorMachine(t, nil)
	dir := testdir.Short(t, "ss")
	ln, err := net.Listen("unix", filepath.Join(dir, localapi.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	last := time.Now().Add(-2 * time.Minute).UTC().Format(time.RFC3339Nano)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"pid":4242,"version":%q,"status":"stalled","last_tick":%q,"tick_lag_seconds":120}`, version, last)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	code, out, _ := runCLI(t, "--data-dir", dir, "doctor")
	l := doctorLines(out)["app"]
	for _, want := range []string{"fail ", "pid 4242", "supervision loop has stopped", "no tick for 2m", "fix: session-supervisor service restart"} {
		if !strings.Contains(l, want) {
			t.Errorf("app check %q lacks %q", l, want)
		}
	}
	if code != exitFail {
		t.Errorf("exit %d, want %d", code, exitFail)
	}
}

// TestDoctorQuarantinedSession: a stored session a newer build wrote (a
// state this build does not know) turns the database check into a warning
// that names it, in a real database, and doctor leaves the row untouched.
func TestDoctorQuarantinedSession(t *testing.T) {
	dir := doctorMachine(t, nil)
	if code, _, errOut := runCLI(t, "--data-dir", dir, "settings", "set", "supervisor.tick_seconds", "20"); code != 0 {
		t.Fatalf("settings set: %s", errOut)
	}
	st, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.SaveSession(ctx, sessions.Session{ID: "s-newer", Agent: "claude", UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", filepath.Join(dir, storage.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const data = `{"id":"s-newer","agent":"claude","state":"hibernating"}`
	if _, err := db.Exec(`UPDATE sessions SET state = 'hibernating', data = ? WHERE id = 's-newer'`, data); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "--data-dir", dir, "doctor")
	l := doctorLines(out)["database"]
	for _, want := range []string{"warn ", "1 stored session(s) cannot be read", `s-newer (written by a newer build: unknown state "hibernating"`, "fix: install the newer Session Supervisor"} {
		if !strings.Contains(l, want) {
			t.Errorf("database check %q lacks %q", l, want)
		}
	}
	if code != exitOK {
		t.Errorf("exit %d: a session this build cannot read is a warning", code)
	}
	var got string
	if err := db.QueryRow(`SELECT data FROM sessions WHERE id = 's-newer'`).Scan(&got); err != nil || got != data {
		t.Errorf("the row is now %q, %v", got, err)
	}
}
