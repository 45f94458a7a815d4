package procscan

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// waitExited blocks until the child pid has exited, reaping nothing (its
// Wait still sees the exit).
func waitExited(t *testing.T, pid int) {
	t.Helper()
	if _, err := waitidNoReap(pid, 0); err != nil {
		t.Fatalf("waitid %d: %v", pid, err)
	}
}

// TestProbeChild follows a real child through its life: running, exited
// but not reaped (gone, and its Wait still gets the exit status), reaped
// (gone, read from /proc); a process that is not a child is read from
// /proc.
func TestProbeChild(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read x; exit 7")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	steps := []struct {
		name string
		do   func()
		want State
	}{
		{"running", func() {}, Running},
		{"exited, not reaped", func() { stdin.Close(); waitExited(t, pid) }, Gone},
		{"reaped", func() {
			if err := cmd.Wait(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
				t.Fatalf("the probe took the exit status from Wait: %v, %v", err, cmd.ProcessState)
			}
		}, Gone},
	}
	for _, s := range steps {
		s.do()
		if _, got := ProbeChild(pid); got != s.want {
			t.Fatalf("%s: ProbeChild = %v, want %v", s.name, got, s.want)
		}
	}
	// Not a child of this process: its parent is.
	if p, got := ProbeChild(os.Getppid()); got != Running || p.Stamp == "" {
		t.Fatalf("the parent: %v %+v, want running with its stamp (read from /proc)", got, p)
	}
	if _, got := ProbeChild(0); got != Unknown {
		t.Fatalf("pid 0: %v", got)
	}
}

// BenchmarkProbeChild against BenchmarkProbeOfAChild: the liveness probe of
// a running agent the app started, as a child's waitid and as a read of its
// /proc stat.
func BenchmarkProbeChild(b *testing.B) { benchmarkChild(b, ProbeChild) }

func BenchmarkProbeOfAChild(b *testing.B) { benchmarkChild(b, Probe) }

func benchmarkChild(b *testing.B, probe func(int) (Proc, State)) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for b.Loop() {
		if _, st := probe(cmd.Process.Pid); st != Running {
			b.Fatalf("the child: %v", st)
		}
	}
}

// isProcess tells a process's own pid from its threads' ids, which /proc
// answers for too; NewProcess finds a process started since a LastPID.
func TestIsProcessAndNewProcess(t *testing.T) {
	if !isProcess(os.Getpid()) {
		t.Fatal("this process is not a process")
	}
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	threads := 0
	for _, d := range tids {
		if id, _ := strconv.Atoi(d.Name()); id != os.Getpid() {
			threads++
			if isProcess(id) {
				t.Fatalf("thread %d is taken for a process", id)
			}
		}
	}
	if threads == 0 {
		t.Fatal("no thread to check (the Go runtime starts several)")
	}
	from, ok := LastPID()
	if !ok {
		t.Fatal("no last pid")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	to, _ := LastPID()
	if found, known := NewProcess(from, to); known && !found {
		t.Fatalf("sleep %d started in (%d, %d] is not found", cmd.Process.Pid, from, to)
	} else if !known && to-from <= MaxNewProbe && to >= from {
		t.Fatalf("NewProcess(%d, %d) cannot tell", from, to)
	}
}

// BenchmarkNewProcess looks at the last MaxNewProbe ids handed out (most
// gone or threads, as on a busy machine), against BenchmarkList, the
// listing of the whole table it saves.
func BenchmarkNewProcess(b *testing.B) {
	to, ok := LastPID()
	if !ok {
		b.Fatal("no last pid")
	}
	for b.Loop() {
		NewProcess(to-MaxNewProbe, to)
	}
}

func BenchmarkList(b *testing.B) {
	var l Lister
	for b.Loop() {
		if _, err := l.List(); err != nil {
			b.Fatal(err)
		}
	}
}
