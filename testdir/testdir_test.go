package testdir

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestShortIsShortUsableAndRemoved: the directory exists under the prefix, a
// unix socket fits in it whatever the test's name, and it is gone, with what
// was left in it, once the test ends.
func TestShortIsShortUsableAndRemoved(t *testing.T) {
	long := strings.Repeat("a_test_name_long_enough_to_push_t_TempDir_past_the_bound_", 3)
	for _, name := range []string{"short", long} {
		var dir string
		t.Run(name, func(t *testing.T) {
			dir = Short(t, "sd")
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

// TestListingSeesEveryChange: a listing equals the one before only when
// nothing under the directory changed: not a file's content, its mode, a
// file or an empty directory added, nor a file removed.
func TestListingSeesEveryChange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(dir string) error
		same   bool
	}{
		{"nothing", func(string) error { return nil }, true},
		{"content", func(dir string) error { return os.WriteFile(filepath.Join(dir, "a", "f"), []byte("y"), 0o600) }, false},
		{"mode", func(dir string) error { return os.Chmod(filepath.Join(dir, "a", "f"), 0o644) }, false},
		{"file added", func(dir string) error { return os.WriteFile(filepath.Join(dir, "g"), nil, 0o600) }, false},
		{"empty directory added", func(dir string) error { return os.Mkdir(filepath.Join(dir, "e"), 0o700) }, false},
		{"file removed", func(dir string) error { return os.Remove(filepath.Join(dir, "a", "f")) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "a"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "a", "f"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			before := Listing(t, dir)
			if len(before) != 3 || !strings.HasPrefix(before[0], ". d") || before[2] != "a/f -rw------- x" {
				t.Fatalf("listing %q, want the directory, a and a/f with its mode and content", before)
			}
			if err := tc.change(dir); err != nil {
				t.Fatal(err)
			}
			if after := Listing(t, dir); slices.Equal(before, after) != tc.same {
				t.Errorf("before %q, after %q: same = %v, want %v", before, after, !tc.same, tc.same)
			}
		})
	}
}
