// Package testdir holds what tests do with directories: one with a short
// path (Short), and what one holds, to compare before and after (Listing,
// Unchanged).
package testdir

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Short makes a directory named prefix plus a random suffix in the system's
// temporary directory and removes it, whatever is left in it, when the test
// ends; it fails the test when it cannot make one. A unix socket's path is
// bounded (about 108 bytes on Linux, 104 on macOS) and t.TempDir() embeds
// the test's name, so a socket under it (the app's data directory, an
// agent's inbox, a D-Bus address) can pass the bound on a long test name.
func Short(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("a short temporary directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Listing is every path under dir (dir itself is "."), sorted, with its mode
// and, for a regular file, its content: equal listings mean the directory
// holds exactly the same, so a test can check that an uninstall left it as
// it found it.
func Listing(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		entry := fmt.Sprintf("%s %s", rel, info.Mode())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			entry += " " + string(b)
		}
		out = append(out, entry)
		return nil
	})
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	sort.Strings(out)
	return out
}

// Unchanged fails the test (and goes on) when dir no longer holds what its
// listing before said, showing both listings.
func Unchanged(t testing.TB, dir string, before []string) {
	t.Helper()
	if after := Listing(t, dir); !slices.Equal(before, after) {
		t.Errorf("%s differs from before:\nbefore:\n%s\nafter:\n%s", dir, strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
}
