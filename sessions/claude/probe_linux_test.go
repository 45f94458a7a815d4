package claude

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestProbeProcessRealChild probes a real child: running with a start time,
// then a zombie (killed, not reaped: the case kill(pid, 0) calls alive),
// then reaped.
func TestProbeProcessRealChild(t *testing.T) {
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
	first := probeProcess(pid)
	if first.state != livenessRunning || first.ident == 0 {
		t.Fatalf("running child: %+v, want running with a start time", first)
	}
	if again := probeProcess(pid); again != first {
		t.Errorf("second probe %+v differs from the first %+v", again, first)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for probeProcess(pid).state != livenessGone {
		if time.Now().After(deadline) {
			t.Fatalf("killed, unreaped child still probes %+v", probeProcess(pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the zombie should still answer kill(pid, 0), which is why it is not the probe: %v", err)
	}
	_ = cmd.Wait()
	reaped = true
	if got := probeProcess(pid); got.state != livenessGone {
		t.Errorf("reaped child: %+v, want gone", got)
	}
	if got := probeProcess(0); got.state != livenessUnknown {
		t.Errorf("pid 0: %+v, want unknown", got)
	}
}
