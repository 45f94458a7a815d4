// Package shortdir gives a test a temporary directory with a short path. A
// unix socket's path is bounded (about 108 bytes on Linux, 104 on macOS), and
// t.TempDir() embeds the test's name, so a socket under it (the app's data
// directory, an agent's inbox, a D-Bus address) can pass the bound on a long
// test name.
package shortdir

import (
	"os"
	"testing"
)

// New makes a directory named prefix plus a random suffix in the system's
// temporary directory and removes it, whatever is left in it, when the test
// ends; it fails the test when it cannot make one.
func New(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("a short temporary directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
