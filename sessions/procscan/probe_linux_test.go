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
