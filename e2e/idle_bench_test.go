//go:build linux && benchidle

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// TestBenchIdle measures what the app costs while nothing happens: `run
// --headless` with BENCH_IDLE_SESSIONS idle managed sessions (the scripted
// fakeclaude, its turn done) and BENCH_IDLE_PROCS unrelated `sleep`
// processes on the machine, its CPU (utime+stime from /proc/PID/stat) over
// BENCH_IDLE_SECONDS and its RSS (VmRSS from /proc/PID/status) at the end.
// It prints one line to compare run to run, as ratios: the figures depend
// on the machine. BENCH_IDLE_APP runs another build of the app (an older
// commit's, for a before and after). It is a measurement, not a check:
// built only with the benchidle tag (`make bench-idle`), never in `make
// test`.
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
	h.start()
	var ids []string
	for i := range n {
		ids = append(ids, strings.TrimSpace(h.mustCLI("new", "--cwd", h.work, "--name", fmt.Sprint("idle-", i), "say", "done")))
	}
	for _, id := range ids {
		h.waitSession(id, "the turn done", func(s sessions.Session) bool { return s.State == sessions.WaitingOnUser })
	}
	// Let the start settle (the sessions' last rows written, the first
	// full scans done) before the window opens.
	time.Sleep(5 * time.Second)
	cpu, rss := idleCost(t, h.app.Process.Pid, secs)
	fmt.Printf("bench-idle: sessions=%d procs=%d window=%ds cpu=%.3f%% rss=%.1fMB\n", n, m, secs, cpu, rss)
	h.interrupt()
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

// idleCost is process pid's CPU over the next secs seconds, in percent of
// one core, and its RSS in MB at the end.
func idleCost(t *testing.T, pid, secs int) (cpu, rssMB float64) {
	t.Helper()
	before, at := cpuTicks(t, pid), time.Now()
	time.Sleep(time.Duration(secs) * time.Second)
	after, took := cpuTicks(t, pid), time.Since(at)
	// USER_HZ is 100 on every Linux this runs on.
	return float64(after-before) / 100 / took.Seconds() * 100, float64(rssKB(t, pid)) / 1024
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
