package shortdir

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewIsShortUsableAndRemoved: the directory exists under the prefix, a
// unix socket fits in it whatever the test's name, and it is gone, with what
// was left in it, once the test ends.
func TestNewIsShortUsableAndRemoved(t *testing.T) {
	long := strings.Repeat("a_test_name_long_enough_to_push_t_TempDir_past_the_bound_", 3)
	for _, name := range []string{"short", long} {
		var dir string
		t.Run(name, func(t *testing.T) {
			dir = New(t, "sd")
			if !strings.HasPrefix(filepath.Base(dir), "sd") {
				t.Errorf("%s does not start with the prefix", dir)
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				t.Fatalf("%s: not a directory (%v)", dir, err)
			}
			sock := filepath.Join(dir, "s.sock")
			if len(sock) >= 104 { // macOS's bound, the tighter one
				t.Errorf("%s: %d bytes, too long for a socket", sock, len(sock))
			}
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatalf("a socket in %s: %v", dir, err)
			}
			t.Cleanup(func() { l.Close() })
			if err := os.WriteFile(filepath.Join(dir, "left"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s after its test ended: %v, want it removed", dir, err)
		}
	}
}
