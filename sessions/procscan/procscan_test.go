//go:build linux

package procscan

import (
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// sleeper is a real child process in a directory of its own, with a small
// environment of its own.
func sleeper(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("sleep", "300")
	cmd.Dir = dir
	cmd.Env = []string{"PROCSCAN_TEST=yes", "OTHER=1"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, dir
}

// A real child process: found by its name with its command line, cwd and
// start time; alive while it runs and only for its own start time; gone
// once reaped.
func TestNamedAliveGone(t *testing.T) {
	cmd, dir := sleeper(t)
	procs, err := Named("sleep")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(procs, func(p Proc) bool { return p.PID == cmd.Process.Pid })
	if i < 0 {
		t.Fatalf("pid %d not among %+v", cmd.Process.Pid, procs)
	}
	p := procs[i]
	real, _ := filepath.EvalSymlinks(dir)
	if p.Cwd != real || !slices.Equal(p.Argv, []string{"sleep", "300"}) || p.PPID != os.Getpid() {
		t.Fatalf("got %+v, want cwd %s", p, real)
	}
	if d := time.Since(p.Started); d < -2*time.Second || d > time.Minute {
		t.Fatalf("started %v ago", d)
	}
	if alive, known := Alive(p.PID, p.Started); !alive || !known {
		t.Fatalf("Alive = %v, %v", alive, known)
	}
	if v, ok := Env(p.PID, "PROCSCAN_TEST"); v != "yes" || !ok {
		t.Fatalf("Env = %q, %v", v, ok)
	}
	if _, ok := Env(p.PID, "HOME"); ok {
		t.Fatal("HOME is not in the child's environment")
	}
	// A process that started later under the same pid is another one.
	if alive, known := Alive(p.PID, p.Started.Add(-time.Hour)); alive || !known {
		t.Fatalf("Alive for another start = %v, %v", alive, known)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if alive, known := Alive(p.PID, p.Started); alive || !known {
		t.Fatalf("after the exit Alive = %v, %v", alive, known)
	}
}

// OpenFiles names the files a process holds open by pattern.
func TestOpenFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollout-x-1.jsonl")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	got := OpenFiles(os.Getpid(), "rollout-*.jsonl")
	real, _ := filepath.EvalSymlinks(path)
	if !slices.Contains(got, real) {
		t.Fatalf("got %v, want %s", got, real)
	}
	if got := OpenFiles(os.Getpid(), "nothing-*.x"); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
}

func TestParseStat(t *testing.T) {
	boot := time.Unix(1000, 0)
	// Fields after the name: state, ppid, pgrp, session, tty, tpgid, flags,
	// minflt, cminflt, majflt, cmajflt, utime, stime, cutime, cstime,
	// priority, nice, threads, itrealvalue, starttime, ...
	tail := " 1 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 8192 100"
	for _, tc := range []struct {
		line  string
		state State
		ppid  int
		start time.Time
		stamp string
		comm  string
	}{
		{"12 (co de) (x)) S 1 12 12 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 250 1 1", Running, 1, boot.Add(2500 * time.Millisecond), "250", "co de) (x)"},
		{"12 (codex) Z 1 12 12 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 250 1 1", Gone, 0, time.Time{}, "", ""},
		{"garbage", Unknown, 0, time.Time{}, "", ""},
		// The cases of Claude's own /proc parser, which this one replaced.
		{"42 (claude) S" + tail, Running, 1, boot.Add(1234560 * time.Millisecond), "123456", "claude"},
		{"42 (node) R" + tail, Running, 1, boot.Add(1234560 * time.Millisecond), "123456", "node"},
		{"42 (claude) Z" + tail, Gone, 0, time.Time{}, "", ""},
		{"42 (claude) X" + tail, Gone, 0, time.Time{}, "", ""},
		{"42 (a) Z (b) S" + tail, Running, 1, boot.Add(1234560 * time.Millisecond), "123456", "a) Z (b"},
		{"42 (claude) S 1", Running, 0, time.Time{}, "", "claude"}, // short line: the state only
		{"42 (claude)", Unknown, 0, time.Time{}, "", ""},           // no state
	} {
		p, st := parseStat([]byte(tc.line), boot)
		if st != tc.state || p.PPID != tc.ppid || !p.Started.Equal(tc.start) || p.Stamp != tc.stamp || p.Comm != tc.comm {
			t.Errorf("%q: %+v %v", tc.line, p, st)
		}
	}
}

// The single reads a scan composes, on a real child: its pid is listed,
// its name, command line, cwd and environment read back, and its start
// stamp is the same at every probe (the identity a reused pid changes).
func TestReads(t *testing.T) {
	cmd, dir := sleeper(t)
	pid := cmd.Process.Pid
	pids, err := PIDs()
	if err != nil || !slices.Contains(pids, pid) || !slices.Contains(pids, os.Getpid()) {
		t.Fatalf("PIDs = %d pids (%v), want the child %d and this process", len(pids), err, pid)
	}
	if c, ok := Comm(pid); c != "sleep" || !ok {
		t.Errorf("Comm = %q, %v", c, ok)
	}
	if argv, ok := Cmdline(pid); !slices.Equal(argv, []string{"sleep", "300"}) || !ok {
		t.Errorf("Cmdline = %q, %v", argv, ok)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if cwd, err := Cwd(pid); cwd != real || err != nil {
		t.Errorf("Cwd = %q, %v; want %s", cwd, err, real)
	}
	if env, err := Environ(pid); !slices.Equal(env, []string{"PROCSCAN_TEST=yes", "OTHER=1"}) || err != nil {
		t.Errorf("Environ = %q, %v", env, err)
	}
	a, st1 := Probe(pid)
	b, st2 := Probe(pid)
	if st1 != Running || st2 != Running || a.Stamp == "" || a.Stamp != b.Stamp || !a.Started.Equal(b.Started) {
		t.Errorf("two probes: %+v %v, %+v %v; want the same running process", a, st1, b, st2)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, ok := Comm(pid); ok {
		t.Error("Comm of a reaped process")
	}
	if _, ok := Cmdline(pid); ok {
		t.Error("Cmdline of a reaped process")
	}
	if _, err := Environ(pid); err == nil {
		t.Error("Environ of a reaped process")
	}
}

// A zombie (exited, not yet reaped) is Gone and has no command line: the
// kernel empties it, and an empty one is not a command line to match.
func TestZombie(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Wait() })
	pid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, st := Probe(pid); st == Gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never exited")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if argv, ok := Cmdline(pid); ok {
		t.Errorf("Cmdline of a zombie = %q, true", argv)
	}
	if alive, known := Alive(pid, time.Time{}); alive || !known {
		t.Errorf("Alive of a zombie = %v, %v", alive, known)
	}
}

// startFed starts name with args, its stdin a pipe the test writes to; it
// and what it started are killed, and it is reaped, at the end.
func startFed(t *testing.T, name string, args ...string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(name, args...)
	// A group of its own, killed whole: a shell's child (TestChildren's
	// sleep) would otherwise outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	return cmd, in
}

// Named takes several kernel names (a program that renames its main
// thread shows that name, not its executable's), and StdinTerminal tells a
// process fed by a pipe from one reading a terminal.
func TestNamedSeveralAndStdinTerminal(t *testing.T) {
	cmd, _ := startFed(t, "sleep", "300")
	procs, err := Named("no-such-name", "sleep")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(procs, func(p Proc) bool { return p.PID == cmd.Process.Pid }) {
		t.Fatalf("pid %d not among %+v", cmd.Process.Pid, procs)
	}
	if procs, _ := Named("no-such-name"); slices.ContainsFunc(procs, func(p Proc) bool { return p.PID == cmd.Process.Pid }) {
		t.Fatal("listed under another name")
	}
	if tty, known := StdinTerminal(cmd.Process.Pid); tty || !known {
		t.Fatalf("a pipe: StdinTerminal = %v, %v", tty, known)
	}
	// A terminal: the controlling terminal device when this test has one,
	// else /dev/tty cannot be opened and only the pipe is checked.
	if fh, err := os.Open("/dev/tty"); err == nil {
		fh.Close()
		term := exec.Command("sleep", "300")
		term.Stdin, _ = os.Open("/dev/tty")
		if err := term.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { term.Process.Kill(); term.Wait() })
		if tty, known := StdinTerminal(term.Process.Pid); !tty || !known {
			t.Fatalf("a terminal: StdinTerminal = %v, %v", tty, known)
		}
	}
	if _, known := StdinTerminal(1 << 30); known {
		t.Fatal("a missing process is not known")
	}
}

// Children counts a real process's live children: none, then one.
func TestChildren(t *testing.T) {
	cmd, in := startFed(t, "sh", "-c", "read line; sleep 300")
	if n, known := Children(cmd.Process.Pid); n != 0 || !known {
		t.Fatalf("before: %d, %v", n, known)
	}
	if _, err := in.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if n, _ := Children(cmd.Process.Pid); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sleep child was never counted")
		}
	}
	if n, known := Children(-1); n != 0 || known {
		t.Fatalf("no pid: %d, %v", n, known)
	}
}

// List names every pid of the table with its inode number; the parser
// takes only the names that are pids, and stops at a record cut short.
func TestList(t *testing.T) {
	cmd, _ := sleeper(t)
	got, err := List()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(got, func(l Listed) bool { return l.PID == cmd.Process.Pid })
	if i < 0 || got[i].Ino == 0 {
		t.Fatalf("pid %d not listed with an inode: %v", cmd.Process.Pid, got)
	}
	// The same process keeps its inode from one listing to the next.
	again, _ := List()
	j := slices.IndexFunc(again, func(l Listed) bool { return l.PID == cmd.Process.Pid })
	if j < 0 || again[j].Ino != got[i].Ino {
		t.Fatalf("inode %d then %v", got[i].Ino, again)
	}

	rec := func(ino uint64, name string) []byte {
		n := (19 + len(name) + 1 + 7) &^ 7
		b := make([]byte, n)
		binary.NativeEndian.PutUint64(b, ino)
		binary.NativeEndian.PutUint16(b[16:], uint16(n))
		copy(b[19:], name)
		return b
	}
	var buf []byte
	for _, r := range [][]byte{rec(5, "1"), rec(6, "self"), rec(7, "4194303"), rec(8, "12a"), rec(9, "1234567890")} {
		buf = append(buf, r...)
	}
	buf = append(buf, rec(10, "77")[:12]...) // cut short
	want := []Listed{{1, 5}, {4194303, 7}}
	if got := appendDirents(nil, buf); !slices.Equal(got, want) {
		t.Fatalf("parsed %v, want %v", got, want)
	}
}

// readSmall reads a /proc file whole in one read when it fits the buffer,
// through os.ReadFile when it does not, and says a missing one is missing.
func TestReadSmall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	content := []byte("12 (x) S 1 2 3\n")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		size int
	}{
		{"fits", 64},
		{"exactly the buffer: read again whole", len(content)},
		{"longer than the buffer", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readSmall(path, make([]byte, tc.size))
			if err != nil || string(got) != string(content) {
				t.Fatalf("got %q, %v; want %q", got, err, content)
			}
		})
	}
	if _, err := readSmall(filepath.Join(t.TempDir(), "missing"), make([]byte, 8)); !os.IsNotExist(err) {
		t.Fatalf("a missing file: %v", err)
	}
	if _, st := Probe(1 << 30); st != Gone {
		t.Fatalf("a pid beyond the table: %v, want gone", st)
	}
}

// A Lister lists the same table as List, again and again on its own
// buffers: a process started between two listings is in the second.
func TestListerReuse(t *testing.T) {
	var l Lister
	first, err := l.List()
	if err != nil {
		t.Fatal(err)
	}
	n := len(first)
	cmd, _ := sleeper(t)
	again, err := l.List()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(again, func(x Listed) bool { return x.PID == cmd.Process.Pid }) || len(again) < n {
		t.Fatalf("second listing: %d pids (first %d), the new child %d in it: false", len(again), n, cmd.Process.Pid)
	}
}

// BenchmarkProbe is one process's stat read: a scan makes one per new
// process, the runtime's tick one per agent.
func BenchmarkProbe(b *testing.B) {
	b.ReportAllocs()
	pid := os.Getpid()
	for b.Loop() {
		Probe(pid)
	}
}
