// Package requiretool finds the outside programs a test needs (dbus-daemon,
// Xvfb, sshd). Where they are required — `make test` sets E2E_REQUIRED, CI
// sets CI, and both install them first — a missing one fails the test, since
// a skip there would hide a broken set-up; elsewhere the test skips, naming
// what is missing.
package requiretool

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Any returns the first of names found on PATH (or a path that exists as
// given); with none, it fails or skips the test.
func Any(t testing.TB, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("none of %v is installed (make test installs them through packaging/install-deps.sh)", names)
	if os.Getenv("E2E_REQUIRED") != "" || os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
