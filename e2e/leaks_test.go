//go:build linux

package e2e

// No end-to-end test leaves a process or a file behind. Everything a test
// starts (the app, the agent CLIs, their tools, which may run in a session
// of their own and outlive a killed CLI) carries one of the test's
// directories in its environment, its working directory or its command
// line: HOME, the data directory, a t.TempDir. So a test's processes are
// found by those directories, not by ancestry (a tool in its own session
// is reparented to init once its CLI dies). TestMain gives the suite a
// temporary directory of its own (TMPDIR, inherited by every child) and,
// at the end, fails the run if any process still names it.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	suiteDir, err := os.MkdirTemp("", "e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: a temporary directory for the suite:", err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", suiteDir)
	code := m.Run()
	if left := reap(suiteDir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the end-to-end tests left %d processes running (killed now):\n  %s\n",
			len(left), strings.Join(left, "\n  "))
		code = 1
	}
	if err := os.RemoveAll(suiteDir); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: the end-to-end tests left files that cannot be removed:", err)
		code = 1
	}
	os.Exit(code)
}

// reapAtCleanup kills, when t ends and before its temporary directories
// are removed, every process that still names one of dirs or t's own
// temporary root: what a killed CLI's tools and a resumed session leave
// running would otherwise write into a directory being removed. Call it
// once the test has made its first t.TempDir (cleanups run last-in
// first-out, so this one runs before that removal).
func reapAtCleanup(t *testing.T, dirs ...string) {
	t.Helper()
	root := filepath.Dir(t.TempDir())
	dirs = append(slices.Clone(dirs), root)
	t.Cleanup(func() {
		if left := reap(dirs...); len(left) > 0 {
			t.Logf("killed %d processes the test left running:\n  %s", len(left), strings.Join(left, "\n  "))
		}
	})
}

// reap kills every process but this one whose environment, working
// directory or command line names one of dirs, until none is left (a
// dying tree may still fork), and returns what it found.
func reap(dirs ...string) []string {
	var found []string
	seen := map[int]bool{}
	for round := 0; round < 100; round++ {
		pids := processesNaming(dirs)
		if len(pids) == 0 {
			return found
		}
		for _, pid := range pids {
			// A process whose command line is already empty is one the
			// kernel is tearing down (its memory is gone, it is not a
			// zombie yet): killed all the same, not reported as left.
			if !seen[pid] && !exiting(pid) {
				seen[pid] = true
				found = append(found, describeProcess(pid))
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond) // the kernel tears them down
	}
	return append(found, "(still there after 5 s of SIGKILL)")
}

// processesNaming lists the live processes (not zombies, not this test
// binary) that name one of dirs.
func processesNaming(dirs []string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || zombie(pid) {
			continue
		}
		if namesAny(pid, dirs) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // gone
	}
	// The state follows the command name's closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// exiting reports a process whose command line reads empty: a user
// process has one until its memory is released on exit.
func exiting(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err != nil || len(b) == 0
}

func namesAny(pid int, dirs []string) bool {
	var hay [][]byte // NUL-terminated values
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
		hay = append(hay, append(b, 0))
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		hay = append(hay, append(b, 0))
	}
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil {
		hay = append(hay, []byte(cwd+"\x00"))
	}
	for _, d := range dirs {
		d = filepath.Clean(d)
		for _, h := range hay {
			// Named when a separator, a list's colon or the value's end
			// follows, never as a prefix of a longer name (/tmp/e2e1 is
			// not /tmp/e2e12).
			for _, end := range []string{"/", ":", "\x00"} {
				if bytes.Contains(h, []byte(d+end)) {
					return true
				}
			}
		}
	}
	return false
}

func describeProcess(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(cmd) > 160 {
		cmd = cmd[:160] + "…"
	}
	return fmt.Sprintf("pid %d: %s", pid, cmd)
}

// The leak check finds what a killed CLI leaves: a tool in a session of its
// own, reparented away from the test, known only by the HOME it inherited.
func TestReapFindsAToolInASessionOfItsOwn(t *testing.T) {
	t.Parallel()
	home, other := t.TempDir(), t.TempDir()
	tool := exec.Command("sleep", "300")
	tool.Env = []string{"HOME=" + home}
	tool.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := tool.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { tool.Wait(); close(exited) }()
	if left := reap(other); len(left) != 0 {
		t.Fatalf("reaped %v for a directory the tool does not name", left)
	}
	left := reap(home)
	if len(left) != 1 || !strings.Contains(left[0], fmt.Sprintf("pid %d: sleep 300", tool.Process.Pid)) {
		t.Fatalf("reaped %v, want the tool (pid %d)", left, tool.Process.Pid)
	}
	<-exited // killed, not left to run out its 300 s
	if pids := processesNaming([]string{home}); len(pids) != 0 {
		t.Fatalf("still running: %v", pids)
	}
}
