package requiretool

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/testdir"
)

// SessionBus starts a private D-Bus session bus for the test (dbus-daemon,
// found as Any finds it) and returns its address; the daemon ends with the
// test. Its socket is in a short temporary directory of its own
// (testdir.Short).
func SessionBus(t testing.TB) string {
	t.Helper()
	daemon := Any(t, "dbus-daemon")
	dir := testdir.Short(t, "bus")
	cmd := exec.Command(daemon, "--session", "--nofork", "--nopidfile", "--print-address=1",
		"--address=unix:path="+filepath.Join(dir, "bus"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the bus address: %v", err)
	}
	return strings.TrimSpace(addr)
}
