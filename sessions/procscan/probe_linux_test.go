package procscan

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestProbeRealChild probes a real child: running with a start time,
// then a zombie (killed, not reaped: the case kill(pid, 0) calls alive),
// then reaped.
func TestProbeRealChild(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := false
	t.Cleanup(func() {
		if !reaped {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	pid := cmd.Process.Pid
	first, st := Probe(pid)
	if st != Running || first.Stamp == "" {
		t.Fatalf("running child: %+v, want running with a start time", first)
	}
	if again, _ := Probe(pid); again.Stamp != first.Stamp || !again.Started.Equal(first.Started) {
		t.Errorf("second probe %+v differs from the first %+v", again, first)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, st := Probe(pid); st != Gone; _, st = Probe(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("killed, unreaped child still probes %v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the zombie should still answer kill(pid, 0), which is why it is not the probe: %v", err)
	}
	_ = cmd.Wait()
	reaped = true
	if _, got := Probe(pid); got != Gone {
		t.Errorf("reaped child: %v, want gone", got)
	}
	if _, got := Probe(0); got != Unknown {
		t.Errorf("pid 0: %v, want unknown", got)
	}
}

// The last pid handed out, from /proc/loadavg's fifth field: a line cut
// short or not a pid is unknown; on this machine it moves when a process
// starts.
func TestLastPID(t *testing.T) {
	for _, c := range []struct {
		line string
		want int
		ok   bool
	}{
		{"0.52 0.58 0.59 1/467 12345\n", 12345, true},
		{"0.52 0.58 0.59 1/467\n", 0, false},
		{"0.52 0.58 0.59 1/467 x\n", 0, false},
		{"", 0, false},
	} {
		if got, ok := parseLastPID([]byte(c.line)); got != c.want || ok != c.ok {
			t.Errorf("parseLastPID(%q) = %d, %v, want %d, %v", c.line, got, ok, c.want, c.ok)
		}
	}
	before, ok := LastPID()
	if !ok {
		t.Fatal("the last pid is not read")
	}
	if err := exec.Command("true").Run(); err != nil {
		t.Fatal(err)
	}
	if after, ok := LastPID(); !ok || after == before {
		t.Fatalf("a process started, the last pid stayed %d (%v)", after, ok)
	}
}
