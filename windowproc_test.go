package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit/agenttest"
)

// TestMain lets this test binary stand in for the window process
// (windowProcChildEnv): it reads the protocol from stdin like the real one,
// writes each command it understood to the file named, one line each with
// its pid, and exits at EOF; with windowProcStubbornEnv it then stays until
// killed. Everything else (the pipes, the exits, the reaping) is a real
// process's.
func TestMain(m *testing.M) {
	if out := os.Getenv(windowProcChildEnv); out != "" {
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			os.Exit(2)
		}
		readWindowCommands(os.Stdin, slog.New(slog.DiscardHandler), func(c windowCommand) {
			if c.Verb == winError && c.Arg == "exit" {
				// The window closed by the user.
				os.Exit(0)
			}
			f.WriteString(strconv.Itoa(os.Getpid()) + " " + c.line())
		})
		if os.Getenv(windowProcStubbornEnv) != "" {
			select {}
		}
		os.Exit(0)
	}
	// RunTests removes what the tests built (builtApp).
	os.Exit(agenttest.RunTests(m))
}

const (
	windowProcChildEnv    = "SS_TEST_WINDOW_CHILD_OUT"
	windowProcStubbornEnv = "SS_TEST_WINDOW_CHILD_STUBBORN"
)

func TestWindowCommandLines(t *testing.T) {
	cases := []struct {
		line    string
		want    windowCommand
		wantErr string
	}{
		{"show", windowCommand{Verb: winShow}, ""},
		{"settings\r\n", windowCommand{Verb: winSettings}, ""},
		{"session 0c4f", windowCommand{Verb: winSession, Arg: "0c4f"}, ""},
		{"error nudge: session busy", windowCommand{Verb: winError, Arg: "nudge: session busy"}, ""},
		{"session", windowCommand{}, "needs an argument"},
		{"show now", windowCommand{}, "takes no argument"},
		{"open", windowCommand{}, "unknown window command"},
		{"", windowCommand{}, "unknown window command"},
	}
	for _, tc := range cases {
		got, err := parseWindowCommand(tc.line)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parse %q: err %v, want one saying %q", tc.line, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parse %q = %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
		// What is sent reads back as itself.
		if back, err := parseWindowCommand(got.line()); err != nil || back != got {
			t.Errorf("%+v sent as %q reads back as %+v, %v", got, got.line(), back, err)
		}
	}
	// An error of several lines is sent as one.
	c := windowCommand{Verb: winError, Arg: "answering:\n  refused\n"}
	if l := c.line(); l != "error answering: refused\n" {
		t.Errorf("a multi-line error is sent as %q", l)
	}
	// Malformed lines are skipped and counted, the rest done.
	var done []windowCommand
	skipped := readWindowCommands(strings.NewReader("show\nbogus\nsession\nsettings\n"), slog.New(slog.DiscardHandler), func(c windowCommand) { done = append(done, c) })
	if skipped != 2 || len(done) != 2 || done[0].Verb != winShow || done[1].Verb != winSettings {
		t.Errorf("read %+v, skipped %d; want show and settings, 2 skipped", done, skipped)
	}
}

// windowTestProc is a windowProc that starts this test binary as its
// window process, which records what it is told in the returned file.
func windowTestProc(t *testing.T, stubborn bool) (*windowProc, func() [][2]string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "told")
	env := append(os.Environ(), windowProcChildEnv+"="+out)
	if stubborn {
		env = append(env, windowProcStubbornEnv+"=1")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := newWindowProc([]string{exe}, env, io.Discard, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { w.Stop(windowStopGrace) })
	// told is each command the window processes were told: the pid that
	// read it and the line.
	told := func() (lines [][2]string) {
		b, _ := os.ReadFile(out)
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if pid, cmd, ok := strings.Cut(l, " "); ok {
				lines = append(lines, [2]string{pid, cmd})
			}
		}
		return lines
	}
	return w, told
}

// waitFor polls cond for a child process's doing (another process's
// progress: no fake clock reaches it).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// One window process at a time: the first command starts it, the next go
// to the same process; once it exited (its window closed) the next command
// starts another; Stop ends it and starts none after.
func TestWindowProcOneChildAtATime(t *testing.T) {
	w, told := windowTestProc(t, false)
	if w.Running() {
		t.Fatal("a window process runs before any was asked for")
	}
	for _, c := range []windowCommand{{Verb: winShow}, {Verb: winSession, Arg: "abc"}, {Verb: winSettings}} {
		if err := w.Send(c); err != nil {
			t.Fatalf("send %s: %v", c.Verb, err)
		}
	}
	waitFor(t, "three commands told", func() bool { return len(told()) == 3 })
	got := told()
	if got[0][0] != got[1][0] || got[0][0] != got[2][0] {
		t.Fatalf("the commands went to more than one process: %q", got)
	}
	if got[0][1] != "show" || got[1][1] != "session abc" || got[2][1] != "settings" {
		t.Fatalf("told %q", got)
	}
	first := got[0][0]

	// The user closes the window: the process exits; the next open starts
	// a new one.
	if err := w.Send(windowCommand{Verb: winError, Arg: "exit"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the window process to exit", func() bool { return !w.Running() })
	if err := w.Send(windowCommand{Verb: winShow}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new process told", func() bool { return len(told()) == 4 })
	if second := told()[3][0]; second == first {
		t.Fatalf("the show after the exit went to pid %s, the exited one", second)
	}
	pid, _ := strconv.Atoi(told()[3][0])

	w.Stop(windowStopGrace)
	if w.Running() {
		t.Fatal("a window process runs after Stop")
	}
	if err := w.Send(windowCommand{Verb: winShow}); err != errWindowStopped {
		t.Fatalf("send after Stop: %v, want errWindowStopped", err)
	}
	if processAlive(pid) {
		t.Fatalf("the window process %d outlived Stop", pid)
	}
}

// A window process that does not exit when its stdin closes is killed
// after the grace: the desktop's quit never waits on it for long.
func TestWindowProcStopKillsAStubbornChild(t *testing.T) {
	w, told := windowTestProc(t, true)
	if err := w.Send(windowCommand{Verb: winShow}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the window process told", func() bool { return len(told()) == 1 })
	pid, _ := strconv.Atoi(told()[0][0])
	start := time.Now()
	w.Stop(200 * time.Millisecond)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Stop took %s", took)
	}
	if processAlive(pid) {
		t.Fatalf("the stubborn window process %d outlived Stop", pid)
	}
}

// processAlive reports whether pid still exists (and is not a zombie: a
// reaped child's pid is gone).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}
