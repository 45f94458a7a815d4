//go:build unix

package agenttest

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/sessions/proctree"
)

// StartLookalike starts cmd, a stand-in for an agent's process (by its
// program's name or its arguments), in a process group of its own when
// group is set, and stops it, its group and its descendants when t ends.
// With ready set it then waits, 5 s at most, until the process table shows
// a command line that satisfies ready: Start returns once the exec began,
// before the kernel has set up the new command line, and an orphan is long
// past that.
func StartLookalike(t testing.TB, cmd *exec.Cmd, group bool, ready func(args []string) bool) *exec.Cmd {
	t.Helper()
	if group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		// Stopped before its descendants are listed: a shell that had not
		// yet started its sleep when the test ended would otherwise fork it
		// between the listing and the kill, and leave it running. A fork
		// the stop races with either completes before the signal is queued
		// (the child is listed) or is abandoned by the kernel.
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP)
		for _, pid := range proctree.Descendants(cmd.Process.Pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if group {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		<-done
	})
	if ready == nil {
		return cmd
	}
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	limit := time.After(5 * time.Second)
	for {
		if args, ok := procscan.Cmdline(cmd.Process.Pid); ok && ready(args) {
			return cmd
		}
		select {
		case <-poll.C:
		case <-limit:
			t.Fatal("the lookalike never started")
		}
	}
}

// ReapCase is one process an orphan reaper is shown.
type ReapCase struct {
	Name string
	// Start starts the process (StartLookalike).
	Start func(t *testing.T) *exec.Cmd
	// Reaped: the reaper must stop it; else it must leave it running.
	Reaped bool
}

// CheckReap runs each case as a subtest: given the process's pid and its
// start stamp, reap answers Reaped without an error, and the process is gone
// (within settle; 0: at once) when it was reaped and still runs when it was
// not. First, the same live process with another start stamp recorded (the
// pid reused by a later process) must be left alone, and with no stamp
// recorded (a session saved before stamps were kept) the pid alone decides.
// A pid that runs nothing (0, and one above every pid in use) is not reaped
// either.
func CheckReap(t *testing.T, reap func(pid int, stamp string) (bool, error), settle time.Duration, cases []ReapCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			pid := c.Start(t).Process.Pid
			args, _ := procscan.Cmdline(pid)
			stamp := StartStamp(t, pid)
			if got, err := reap(pid, stamp+"1"); got || err != nil || !proctree.Alive(pid) {
				t.Fatalf("ReapOrphan(%q) with another start stamp = %v, %v (alive afterwards: %v); want it left alone",
					strings.Join(args, " "), got, err, proctree.Alive(pid))
			}
			if c.Reaped && c.Name == cases[0].Name {
				stamp = "" // once per reaper: nothing recorded, the pid decides
			}
			got, err := reap(pid, stamp)
			if err != nil || got != c.Reaped {
				t.Fatalf("ReapOrphan(%q) = %v, %v; want %v", strings.Join(args, " "), got, err, c.Reaped)
			}
			switch {
			case c.Reaped && !proctree.WaitGone(pid, settle, proctree.Alive):
				t.Error("the process still runs")
			case !c.Reaped && !proctree.Alive(pid):
				t.Error("a process left alone was stopped")
			}
		})
	}
	for _, pid := range []int{0, 1 << 22} {
		if got, err := reap(pid, ""); got || err != nil {
			t.Errorf("ReapOrphan(%d) = %v, %v; want nothing to reap", pid, got, err)
		}
	}
}

// StartStamp is the live process pid's start stamp (procscan.Proc.Stamp),
// what the app records with its session for the orphan reaper.
func StartStamp(t testing.TB, pid int) string {
	t.Helper()
	p, st := procscan.Probe(pid)
	if st != procscan.Running || p.Stamp == "" {
		t.Fatalf("probe of the live process %d: %v, stamp %q", pid, st, p.Stamp)
	}
	return p.Stamp
}
