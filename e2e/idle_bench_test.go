//go:build linux && benchidle

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/session-supervisor/session-supervisor/requiretool"
	"github.com/session-supervisor/session-supervisor/sessions"
)

// TestBenchIdle measures what the app costs while nothing happens: the app
// with BENCH_IDLE_SESSIONS idle managed sessions (the scripted fakeclaude,
// its turn done) and BENCH_IDLE_PROCS unrelated `sleep` processes on the
// machine, its CPU (utime+stime from /proc/PID/stat) over
// BENCH_IDLE_SECONDS and its RSS (VmRSS from /proc/PID/status) at the end;
// with the window open, the window's process's too, summed and each.
// BENCH_IDLE_MODE picks the app: headless (`run --headless`, the default),
// tray (`run --tray`: the desktop with its window never opened) or window
// (`run`: the window open, the sessions added while it is); the desktop
// runs under Xvfb on a private session bus that has a tray watcher and a
// notification service, as a desktop's would. It prints one line to
// compare run to run, as ratios: the figures depend on the machine.
// BENCH_IDLE_APP runs another build of the app (an older commit's, for a
// before and after). BENCH_IDLE_PROFILE=DIR has the app write a CPU
// profile of the measured window and its heap at the end there (the
// app's opt-in profile hook), in a run of its own: the profiler's cost is
// not in the figures of a run without it. It is a measurement, not a
// check: built only with the benchidle tag (`make bench-idle`), never in
// `make test`.
func TestBenchIdle(t *testing.T) {
	n, m, secs := envInt(t, "BENCH_IDLE_SESSIONS", 100), envInt(t, "BENCH_IDLE_PROCS", 400), envInt(t, "BENCH_IDLE_SECONDS", 60)
	h := newAppE2E(t, `{"turns": [[`+ae2eLines+`]]}`)
	if app := os.Getenv("BENCH_IDLE_APP"); app != "" {
		h.bin = app
	}
	for range m {
		c := exec.Command("sleep", "3600")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	profile := os.Getenv("BENCH_IDLE_PROFILE")
	if profile != "" {
		h.env = append(h.env, "SESSION_SUPERVISOR_PROFILE="+profile)
	}
	mode := os.Getenv("BENCH_IDLE_MODE")
	switch mode {
	case "", "headless":
		mode = "headless"
		h.start()
	case "tray", "window":
		d := benchDesktop(t)
		h.env = append(h.env, "DISPLAY="+d.display, "DBUS_SESSION_BUS_ADDRESS="+d.busAddr, "LANG=en_US.UTF-8")
		args := []string{"run"}
		if mode == "tray" {
			args = append(args, "--tray")
		}
		h.startWith(args...)
		eventually(t, "the desktop's tray registration", 30*time.Second, func() bool { return d.sni.first() != "" })
	default:
		t.Fatalf("BENCH_IDLE_MODE=%q: headless, tray or window", mode)
	}
	var ids []string
	for i := range n {
		ids = append(ids, strings.TrimSpace(h.mustCLI("new", "--cwd", h.work, "--name", fmt.Sprint("idle-", i), "say", "done")))
	}
	for _, id := range ids {
		h.waitSession(id, "the turn done", func(s sessions.Session) bool { return s.State == sessions.WaitingOnUser })
	}
	// Let the start settle (the sessions' last rows written, the first
	// full scans done) before the window opens. BENCH_IDLE_SETTLE (seconds,
	// default 5) waits longer: past 60 s every session's age is shown in
	// minutes, so the list's texts move once a minute, as on a desktop whose
	// sessions have been idle a while, not every second as in the first
	// minute after a burst of turns.
	time.Sleep(time.Duration(envInt(t, "BENCH_IDLE_SETTLE", 5)) * time.Second)
	// The desktop's processes: the app and, the window open, the window's
	// own process; the figures are their sum, then each one's.
	pids := append([]int{h.app.Process.Pid}, windowProcesses(t, h.app.Process.Pid)...)
	if profile != "" {
		// The app's opt-in hook: SIGUSR1 starts the CPU profile, SIGUSR2
		// stops it and writes the heap (the window's under window/).
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGUSR1)
		}
	}
	var cpu, rss float64
	var parts []string
	for i, c := range idleCosts(t, secs, pids) {
		cpu += c.cpu
		rss += c.rssMB
		part := "app"
		if i > 0 {
			part = "window"
		}
		parts = append(parts, fmt.Sprintf("%s=%.3f%%/%.1fMB", part, c.cpu, c.rssMB))
	}
	fmt.Printf("bench-idle: mode=%s sessions=%d procs=%d window=%ds cpu=%.3f%% rss=%.1fMB (%s)\n", mode, n, m, secs, cpu, rss, strings.Join(parts, " "))
	if profile != "" {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGUSR2)
		}
		eventually(t, "the heap profile", 30*time.Second, func() bool {
			_, err := os.Stat(filepath.Join(profile, "heap.pprof"))
			return err == nil
		})
		fmt.Printf("bench-idle: profiles in %s (go tool pprof -top %s/cpu.pprof)\n", profile, profile)
	}
	h.interrupt()
}

// benchDesktop is the desktop's surroundings without the app: a virtual
// display and a private session bus with a tray watcher and a notification
// service (what e2e's GUI tests give the app).
func benchDesktop(t *testing.T) *desktopWorld {
	t.Helper()
	requireTools(t, "Xvfb", "dbus-daemon")
	d := &desktopWorld{t: t, busAddr: requiretool.SessionBus(t), display: startXvfb(t)}
	conn, err := dbus.Connect(d.busAddr)
	if err != nil {
		t.Fatalf("connecting to the test bus: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	d.conn, d.notes, d.sni = conn, &notifications{}, &watcher{}
	if err := conn.Export(d.notes, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	ownName(t, conn, "org.freedesktop.Notifications")
	if err := conn.Export(d.sni, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
	ownName(t, conn, "org.kde.StatusNotifierWatcher")
	return d
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q is not a count", name, v)
	}
	return n
}

// idleCost is what the desktop of process pid costs: the CPU of pid and of
// its window process, if one runs (the desktop's processes), over the next
// secs seconds, in percent of one core, and their RSS in MB at the end.
func idleCost(t *testing.T, pid, secs int) (cpu, rssMB float64) {
	t.Helper()
	for _, c := range idleCosts(t, secs, append([]int{pid}, windowProcesses(t, pid)...)) {
		cpu += c.cpu
		rssMB += c.rssMB
	}
	return cpu, rssMB
}

// processCost is one process's part of an idle cost.
type processCost struct {
	pid        int
	cpu, rssMB float64
}

// idleCosts is each of pids' CPU over the next secs seconds, in percent of
// one core, and its RSS in MB at the end.
func idleCosts(t *testing.T, secs int, pids []int) []processCost {
	t.Helper()
	before := make([]int64, len(pids))
	for i, pid := range pids {
		before[i] = cpuTicks(t, pid)
	}
	at := time.Now()
	time.Sleep(time.Duration(secs) * time.Second)
	took := time.Since(at)
	out := make([]processCost, len(pids))
	for i, pid := range pids {
		// USER_HZ is 100 on every Linux this runs on.
		out[i] = processCost{pid: pid, cpu: float64(cpuTicks(t, pid)-before[i]) / 100 / took.Seconds() * 100, rssMB: float64(rssKB(t, pid)) / 1024}
	}
	return out
}

// cpuTicks is the process's user and system time in clock ticks
// (/proc/PID/stat fields 14 and 15, after the parenthesised name).
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// rssKB is the process's resident set (/proc/PID/status VmRSS).
func rssKB(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
