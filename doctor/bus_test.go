package doctor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/session-supervisor/session-supervisor/requiretool"
	"github.com/session-supervisor/session-supervisor/testdir"
)

// TestRealSessionBus asks a private dbus-daemon through the real probes
// (gdbus or dbus-send): a bus that can start a notification daemon on
// demand but has no tray host, found through $XDG_RUNTIME_DIR/bus.
func TestRealSessionBus(t *testing.T) {
	daemon := requiretool.Any(t, "dbus-daemon")
	requiretool.Any(t, "gdbus", "dbus-send")
	dir := testdir.Short(t, "bus")
	services := filepath.Join(dir, "services")
	if err := os.MkdirAll(services, 0o755); err != nil {
		t.Fatal(err)
	}
	svc := "[D-BUS Service]\nName=org.freedesktop.Notifications\nExec=/bin/false\n"
	if err := os.WriteFile(filepath.Join(services, "org.freedesktop.Notifications.service"), []byte(svc), 0o644); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "bus")
	conf := `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=` + socket + `</listen>
  <servicedir>` + services + `</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>`
	if err := os.WriteFile(filepath.Join(dir, "bus.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(daemon, "--config-file="+filepath.Join(dir, "bus.conf"), "--nofork")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("dbus-daemon did not create its socket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := newMachine(t)
	real := Real()
	m.probes.BusNames = real.BusNames
	m.probes.Getenv = func(k string) string { return map[string]string{"XDG_RUNTIME_DIR": dir}[k] }
	notif, tray := m.check(t, "notifications"), m.check(t, "tray host")
	if notif.Status != OK || !strings.Contains(notif.Detail, "on demand") {
		t.Errorf("notifications: %+v", notif)
	}
	if tray.Status != Warn || !strings.Contains(tray.Detail, "no tray host") {
		t.Errorf("tray host: %+v", tray)
	}
}
