package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/packaging"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
	"github.com/session-supervisor/session-supervisor/settings"
	"github.com/session-supervisor/session-supervisor/storage"
	"github.com/session-supervisor/session-supervisor/supervisor"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// fakeUserSystemctl answers like `systemctl --user` with a user manager:
// every action succeeds, the unit is enabled and not running.
type fakeUserSystemctl struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeUserSystemctl) run(_ context.Context, name string, args ...string) (string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	switch args[1] {
	case "is-active":
		return "inactive\n", "", nil
	case "is-enabled":
		return "enabled\n", "", nil
	}
	return "", "", nil
}

// useServiceManager makes the service commands write a systemd user unit
// into cfg through run. The in-process test binary lives in a temporary
// go-build directory that a real install refuses, so the unit names a
// stand-in binary path instead.
func useServiceManager(t *testing.T, cfg string, run packaging.Runner) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "bin", "session-supervisor")
	old := newServiceManager
	newServiceManager = func(spec packaging.Spec) (packaging.Manager, error) {
		spec.Executable = exe
		return packaging.NewSystemdUser(spec, cfg, run), nil
	}
	t.Cleanup(func() { newServiceManager = old })
	return exe
}

func TestServiceCommands(t *testing.T) {
	cfg := t.TempDir()
	dataDir := t.TempDir()
	fake := &fakeUserSystemctl{}
	exe := useServiceManager(t, cfg, fake.run)
	before := testdir.Listing(t, cfg)
	unit := filepath.Join(cfg, "systemd", "user", packaging.UnitName)

	code, out, errOut := runCLI(t, "--data-dir", dataDir, "service", "install")
	if code != exitOK {
		t.Fatalf("install: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"Installed the systemd user unit " + unit, "starts with your desktop session", "session-supervisor service start"} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	// A data directory given on the command line goes into the unit: the
	// service manager will not pass the flag.
	if want := "ExecStart=" + exe + " run --data-dir " + dataDir + "\n"; !strings.Contains(string(b), want) {
		t.Errorf("unit lacks %q:\n%s", want, b)
	}

	code, out, _ = runCLI(t, "--data-dir", dataDir, "service", "install")
	if code != exitOK || !strings.Contains(out, "Already installed, unchanged") {
		t.Errorf("second install: exit %d, out %q", code, out)
	}

	code, out, _ = runCLI(t, "--data-dir", dataDir, "service", "status")
	if code != exitOK || !strings.Contains(out, "installed, stopped (systemd user unit)") || !strings.Contains(out, unit) || !strings.Contains(out, "at login:  starts") {
		t.Errorf("status: exit %d, out:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "--data-dir", dataDir, "service", "status", "--json")
	var st map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --json: exit %d, out %q", code, out)
	}
	if st["state"] != "stopped" || st["installed"] != true || st["unit_path"] != unit || st["current"] != true {
		t.Errorf("status --json = %v", st)
	}

	// Headless rewrites the unit for default.target.
	code, out, _ = runCLI(t, "--data-dir", dataDir, "service", "install", "--headless")
	if b, _ := os.ReadFile(unit); code != exitOK || !strings.Contains(out, "Updated") || !strings.Contains(string(b), "WantedBy=default.target") {
		t.Errorf("install --headless: exit %d, out %q, unit:\n%s", code, out, b)
	}

	for _, verb := range []string{"start", "stop", "restart"} {
		if code, _, errOut := runCLI(t, "--data-dir", dataDir, "service", verb); code != exitOK {
			t.Errorf("%s: exit %d, stderr %q", verb, code, errOut)
		}
	}

	code, out, _ = runCLI(t, "--data-dir", dataDir, "service", "uninstall")
	if code != exitOK || !strings.Contains(out, "Removed "+unit) {
		t.Errorf("uninstall: exit %d, out %q", code, out)
	}
	testdir.Unchanged(t, cfg, before)
	code, out, _ = runCLI(t, "--data-dir", dataDir, "service", "uninstall")
	if code != exitOK || !strings.Contains(out, "nothing to remove") {
		t.Errorf("second uninstall: exit %d, out %q", code, out)
	}
	code, _, errOut = runCLI(t, "--data-dir", dataDir, "service", "start")
	if code != exitFail || !strings.Contains(errOut, "fix: session-supervisor service install") {
		t.Errorf("start when not installed: exit %d, stderr %q", code, errOut)
	}
}

func TestServiceUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"service"},
		{"service", "frobnicate"},
		{"service", "start", "--headless"},
		{"service", "install", "--json"},
		{"service", "status", "extra"},
	} {
		if code, _, errOut := runCLI(t, args...); code != exitUsage || !strings.Contains(errOut, "usage: session-supervisor service") {
			t.Errorf("%v: exit %d, stderr %q; want usage and exit 2", args, code, errOut)
		}
	}
}

// TestServiceInstallWithoutSystemd is a login with no user systemd (here:
// no systemctl at all): install still writes the unit, says it could not
// enable it and how to fix that, exits 1, and uninstall removes it cleanly.
func TestServiceInstallWithoutSystemd(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systemd is Linux only")
	}
	cfg := t.TempDir()
	useServiceManager(t, cfg, packaging.ExecRunner)
	t.Setenv("PATH", t.TempDir())
	before := testdir.Listing(t, cfg)

	code, out, errOut := runCLI(t, "service", "install")
	if code != exitFail {
		t.Fatalf("install: exit %d, want 1", code)
	}
	unit := filepath.Join(cfg, "systemd", "user", packaging.UnitName)
	if !strings.Contains(out, "Installed the systemd user unit "+unit) {
		t.Errorf("install does not say it wrote the unit:\n%s", out)
	}
	if !strings.Contains(errOut, "could not enable it: systemctl is not installed") || !strings.Contains(errOut, "fix: ") {
		t.Errorf("install does not explain the failure with a fix:\n%s", errOut)
	}
	if _, err := os.Stat(unit); err != nil {
		t.Fatalf("the unit was not written: %v", err)
	}
	if code, out, _ := runCLI(t, "service", "status"); code != exitOK || !strings.Contains(out, "installed, unknown") || !strings.Contains(out, "fix: ") {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	code, out, errOut = runCLI(t, "service", "uninstall")
	if code != exitOK || !strings.Contains(out, "Removed "+unit) {
		t.Errorf("uninstall: exit %d, out %q, stderr %q", code, out, errOut)
	}
	testdir.Unchanged(t, cfg, before)
}

func TestServiceSpec(t *testing.T) {
	t.Setenv(storage.EnvHome, "")
	c := &cli{}
	spec, err := c.serviceSpec(false)
	if err != nil || spec.DataDir != "" || !filepath.IsAbs(spec.Executable) || spec.Args()[0] != "run" {
		t.Errorf("default spec = %+v, %v; want no data directory", spec, err)
	}
	c.dataDir = "relative/data"
	spec, _ = c.serviceSpec(true)
	if !filepath.IsAbs(spec.DataDir) || !strings.HasSuffix(spec.DataDir, filepath.FromSlash("relative/data")) || !spec.Headless {
		t.Errorf("--data-dir spec = %+v; want the absolute directory", spec)
	}
	c.dataDir = ""
	home := t.TempDir()
	t.Setenv(storage.EnvHome, home)
	if spec, _ = c.serviceSpec(false); spec.DataDir != home {
		t.Errorf("$%s spec = %+v", storage.EnvHome, spec)
	}
}

func TestServiceStableExecutable(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs symlinks, which Windows grants only to administrators and developer mode")
	}
	dir := t.TempDir()
	real := filepath.Join(dir, "Cellar", "1.2.3", "session-supervisor")
	link := filepath.Join(dir, "bin", "session-supervisor")
	other := filepath.Join(dir, "other")
	for _, p := range []string{real, other} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if got := stableExecutable(real, link); got != link {
		t.Errorf("invoked through a package manager's link: %s, want the link %s (it survives upgrades)", got, link)
	}
	if got := stableExecutable(real, other); got != real {
		t.Errorf("argv[0] is another file: %s, want %s", got, real)
	}
	if got := stableExecutable(real, "no-such-command-here"); got != real {
		t.Errorf("argv[0] not found: %s, want %s", got, real)
	}
}

// serveFakeApp holds the data directory and serves the local API the way
// `run` does, with the window callback under the test's control.
func serveFakeApp(t *testing.T, dir string) (*localapi.API, *storage.Lock) {
	t.Helper()
	app := serveApp(t, dir, nil)
	return app.api, app.lock
}

// servedApp is what serveApp started: the runtime, the local API, the
// settings service behind it and the data directory's lock.
type servedApp struct {
	rt       *supervisor.Runtime
	api      *localapi.API
	settings *settings.Service
	lock     *storage.Lock
}

// serveApp is serveFakeApp with what the store holds before the runtime
// boots (prepare, when set), and all it started.
func serveApp(t *testing.T, dir string, prepare func(*storage.Store)) servedApp {
	t.Helper()
	lock, err := storage.AcquireLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if prepare != nil {
		prepare(st)
	}
	rt := supervisor.New(supervisor.Options{Store: st})
	if err := rt.Boot(context.Background()); err != nil {
		t.Fatal(err)
	}
	svc := mustSettingsService(t, st)
	api, err := localapi.Listen(rt, svc, dir, version)
	if err != nil {
		t.Fatal(err)
	}
	go api.Serve()
	t.Cleanup(func() { api.Close(); lock.Release() })
	return servedApp{rt: rt, api: api, settings: svc, lock: lock}
}

func TestServiceSecondRunShowsTheFirst(t *testing.T) {
	old := handOverWait
	handOverWait = 300 * time.Millisecond
	t.Cleanup(func() { handOverWait = old })
	dir := testdir.Short(t, "ss")
	api, _ := serveFakeApp(t, dir)
	shown := make(chan struct{}, 1)
	api.SetShowWindow(func() { shown <- struct{}{} })

	code, _, errOut := runCLI(t, "--data-dir", dir, "run")
	if code != exitOK || !strings.Contains(errOut, "brought its window forward") || !strings.Contains(errOut, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("second run: exit %d, stderr %q; want exit 0 after showing the window", code, errOut)
	}
	select {
	case <-shown:
	default:
		t.Error("the first instance was not asked to show its window")
	}

	// Headless: nothing to show, still exit 0.
	api.SetShowWindow(nil)
	code, _, errOut = runCLI(t, "--data-dir", dir, "run", "--headless")
	if code != exitOK || !strings.Contains(errOut, "without a window") {
		t.Errorf("second run, headless first: exit %d, stderr %q", code, errOut)
	}
	res, err := localapi.NewClient(dir).Show(context.Background())
	if err != nil || res.Shown {
		t.Errorf("POST /v1/show headless = %+v, %v; want shown false", res, err)
	}

	// Started by a service manager (systemd at login, say) the second run
	// does not pop the window up: it checks the first answers and exits 0.
	api.SetShowWindow(func() { shown <- struct{}{} })
	t.Setenv(packaging.EnvService, "systemd")
	code, _, errOut = runCLI(t, "--data-dir", dir, "run")
	if code != exitOK || !strings.Contains(errOut, "already running on") {
		t.Errorf("second run under systemd: exit %d, stderr %q", code, errOut)
	}
	select {
	case <-shown:
		t.Error("a service-started second run asked for the window")
	default:
	}
	t.Setenv(packaging.EnvService, "")

	// The holder stops answering: exit 1 naming its pid.
	api.Close()
	code, _, errOut = runCLI(t, "--data-dir", dir, "run", "--headless")
	if code != exitFail || !strings.Contains(errOut, fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(errOut, "does not answer") {
		t.Errorf("holder not answering: exit %d, stderr %q; want exit 1 naming the pid", code, errOut)
	}
}

// builtAppStamp is the version builtApp stamps into the app.
const builtAppStamp = "9.8.7-stamped"

// builtApp is the real binary built the way the Makefile does (-ldflags -X
// main.version, stamped builtAppStamp) into a directory whose name has a
// space, once per test binary (agenttest.BuiltWith): each build is a link
// of the whole app (~8 s on two shared cores), and the tests that run it as
// a user would only read it. TestMain removes it (agenttest.RunTests).
func builtApp(t *testing.T) string {
	t.Helper()
	return agenttest.BuiltWith(t, ".", "bin dir/session-supervisor", "-ldflags", "-X main.version="+builtAppStamp)
}

// TestServiceWithStampedBinary runs the real binary built the way the
// Makefile does (builtApp) and checks that `version` prints the stamp
// and that `service install` writes the binary's own absolute path into the
// unit, then removes it cleanly. systemctl here behaves like one in a login
// without a user manager.
func TestServiceWithStampedBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systemd is Linux only")
	}
	tmp := t.TempDir()
	bin := builtApp(t)
	fakeBin := filepath.Join(tmp, "fakebin")
	if err := os.MkdirAll(fakeBin, 0o755); err != nil {
		t.Fatal(err)
	}
	systemctl := "#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(fakeBin, "systemctl"), []byte(systemctl), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(tmp, "config")
	dataDir := filepath.Join(tmp, "data")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	before := testdir.Listing(t, cfg)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+cfg, "PATH="+fakeBin, "LANG=en_US.UTF-8", storage.EnvHome+"=")
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errOut.String()
	}

	if code, out, _ := run("version"); code != 0 || out != "session-supervisor "+builtAppStamp+"\n" {
		t.Errorf("version: exit %d, %q; want the stamped %s", code, out, builtAppStamp)
	}
	code, _, errOut := run("--data-dir", dataDir, "service", "install")
	if code != 1 || !strings.Contains(errOut, "loginctl enable-linger") {
		t.Errorf("install without a user manager: exit %d, stderr %q", code, errOut)
	}
	unit, err := os.ReadFile(filepath.Join(cfg, "systemd", "user", packaging.UnitName))
	if err != nil {
		t.Fatal(err)
	}
	if want := `ExecStart="` + bin + `" run --data-dir ` + dataDir + "\n"; !strings.Contains(string(unit), want) {
		t.Errorf("unit lacks %q:\n%s", want, unit)
	}
	if want := "Environment=PATH=" + fakeBin + "\n"; !strings.Contains(string(unit), want) {
		t.Errorf("unit lacks the installing shell's PATH %q", want)
	}
	if code, _, errOut := run("--data-dir", dataDir, "service", "uninstall"); code != 0 {
		t.Errorf("uninstall: exit %d, stderr %q", code, errOut)
	}
	testdir.Unchanged(t, cfg, before)
}

// TestServiceWindowsStandBy: the Windows service finding the data directory
// held waits for the lock (exiting would make the service control manager
// restart it every 10 s) and takes it when the holder quits, or gives up
// when the service is stopped.
func TestServiceWindowsStandBy(t *testing.T) {
	old := standByPoll
	standByPoll = 10 * time.Millisecond
	t.Cleanup(func() { standByPoll = old })
	dir := t.TempDir()
	holder, err := storage.AcquireLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var errOut strings.Builder
	c := &cli{stdout: io.Discard, stderr: &errOut, interrupt: stop}
	type result struct {
		lock *storage.Lock
		err  error
	}
	got := make(chan result, 1)
	go func() {
		lock, _, err := c.handOver(dir, &storage.LockedError{PID: 1}, packaging.LaunchWindowsService, false, false)
		got <- result{lock, err}
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case r := <-got:
		t.Fatalf("stand-by returned while the lock was held: %+v", r)
	default:
	}
	holder.Release()
	r := <-got
	if r.err != nil || r.lock == nil {
		t.Fatalf("stand-by after the holder quit: %+v", r)
	}
	r.lock.Release()
	if !strings.Contains(errOut.String(), "waiting to take over") {
		t.Errorf("stand-by did not say so: %q", errOut.String())
	}

	// Stopped while standing by: no lock, no error.
	holder, err = storage.AcquireLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	go func() {
		lock, _, err := c.handOver(dir, &storage.LockedError{PID: 1}, packaging.LaunchWindowsService, false, false)
		got <- result{lock, err}
	}()
	close(stop)
	if r := <-got; r.lock != nil || r.err != nil {
		t.Errorf("stand-by stopped: %+v", r)
	}
}
