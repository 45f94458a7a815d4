package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/leakcheck"
	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/requiretool"
	"github.com/session-supervisor/session-supervisor/testdir"
	"github.com/session-supervisor/session-supervisor/testproc"
)

// The daemon's services (loop, local API, settings publisher, the terminal
// sources under the loop) all end with stop: nothing of the module is left
// running, and the socket is gone.
func TestDaemonStopLeavesNothingRunning(t *testing.T) {
	before := leakcheck.Take()
	t.Setenv("HOME", t.TempDir())  // the terminal sources watch the agents' homes
	dir := testdir.Short(t, "dmn") // short: the socket's path
	d, err := startDaemon(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := localapi.NewClient(dir).Health(ctx); err != nil {
		t.Fatalf("the API does not answer: %v", err)
	}
	if err := d.stop(ctx); err != nil {
		t.Fatal(err)
	}
	if left := before.Leaked(5 * time.Second); len(left) > 0 {
		t.Fatalf("%d goroutines outlived stop:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
	if _, err := localapi.NewClient(dir).Health(ctx); err == nil {
		t.Fatal("the API still answers after stop")
	}
}

// The desktop's quit leaves nothing behind: the tray (fyne.io/systray on a
// private session bus), the notifier and the model's loops end, and the
// window process the tray started (this test binary standing in for it,
// see TestMain) is gone. A second show while the window lives goes to the
// same process.
func TestDesktopQuitLeavesNothingRunning(t *testing.T) {
	// fyne.io/systray runs once per process (its quit is final, its
	// session bus connection process-wide): the test runs in a process of
	// its own, so -count=N runs it N times.
	if !testproc.Own(t) {
		return
	}
	// The tray's session bus, private to the test.
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", requiretool.SessionBus(t))
	t.Setenv("HOME", t.TempDir())
	told := filepath.Join(t.TempDir(), "told")
	t.Setenv(windowProcChildEnv, told)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	before := leakcheck.Take()
	dir := testdir.Short(t, "dsk") // short: the socket's path
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := startDaemon(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	q := newQuitter()
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		runDesktop(guiDeps{windowArgv: []string{exe}, stderr: io.Discard, src: d.rt, settings: d.settings, dataDir: dir,
			setShowWindow: d.api.SetShowWindow, log: log, quit: q.quit, requestQuit: q.request, showAtStart: true})
	}()
	lines := func() []string {
		b, _ := os.ReadFile(told)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	waitFor(t, "the window process shown at start", func() bool { return lines()[0] != "" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, err := localapi.NewClient(dir).Show(ctx); err != nil || !res.Shown {
		t.Fatalf("a second run's show: %+v, %v", res, err)
	}
	waitFor(t, "the second show told", func() bool { return len(lines()) == 2 })
	got := lines()
	pid, _, _ := strings.Cut(got[0], " ")
	if second, _, _ := strings.Cut(got[1], " "); second != pid || !strings.HasSuffix(got[1], " show") {
		t.Fatalf("told %q: want both shows in one process", got)
	}

	q.request()
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatal("the desktop did not return after the quit")
	}
	if n, _ := strconv.Atoi(pid); processAlive(n) {
		t.Fatalf("the window process %s outlived the desktop", pid)
	}
	if err := d.stop(ctx); err != nil {
		t.Fatal(err)
	}
	if left := before.Leaked(5 * time.Second); len(left) > 0 {
		t.Fatalf("%d goroutines outlived the quit:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
}
