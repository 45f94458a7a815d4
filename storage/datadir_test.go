package storage

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDataDir(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	okHome := func() (string, error) { return "/home/u", nil }
	noHome := func() (string, error) { return "", errors.New("$HOME is not defined") }
	tests := []struct {
		name    string
		goos    string
		env     map[string]string
		home    func() (string, error)
		want    string
		wantErr string
	}{
		{name: "override wins on linux", goos: "linux",
			env:  map[string]string{EnvHome: "/srv/ss", "XDG_DATA_HOME": "/xdg"},
			home: okHome, want: "/srv/ss"},
		{name: "override wins on windows", goos: "windows",
			env:  map[string]string{EnvHome: "/srv/ss", "LocalAppData": `C:\Users\u\AppData\Local`},
			home: okHome, want: "/srv/ss"},
		{name: "relative override is made absolute", goos: "linux",
			env:  map[string]string{EnvHome: "rel/dir"},
			home: okHome, want: filepath.Join(cwd, "rel", "dir")},
		{name: "override needs no home", goos: "darwin",
			env:  map[string]string{EnvHome: "/srv/ss"},
			home: noHome, want: "/srv/ss"},
		{name: "linux XDG_DATA_HOME", goos: "linux",
			env:  map[string]string{"XDG_DATA_HOME": "/xdg/data"},
			home: okHome, want: filepath.Join("/xdg/data", "session-supervisor")},
		{name: "linux relative XDG_DATA_HOME is ignored", goos: "linux",
			env:  map[string]string{"XDG_DATA_HOME": "xdg/data"},
			home: okHome, want: filepath.Join("/home/u", ".local", "share", "session-supervisor")},
		{name: "linux fallback", goos: "linux",
			home: okHome, want: filepath.Join("/home/u", ".local", "share", "session-supervisor")},
		{name: "freebsd follows XDG too", goos: "freebsd",
			env:  map[string]string{"XDG_DATA_HOME": "/xdg"},
			home: okHome, want: filepath.Join("/xdg", "session-supervisor")},
		{name: "macOS", goos: "darwin",
			env:  map[string]string{"XDG_DATA_HOME": "/xdg"},
			home: okHome, want: filepath.Join("/home/u", "Library", "Application Support", "Session Supervisor")},
		{name: "windows LocalAppData", goos: "windows",
			env:  map[string]string{"LocalAppData": "/c/Users/u/AppData/Local"},
			home: okHome, want: filepath.Join("/c/Users/u/AppData/Local", "Session Supervisor")},
		{name: "windows without LocalAppData", goos: "windows",
			home: okHome, want: filepath.Join("/home/u", "AppData", "Local", "Session Supervisor")},
		{name: "no home says how to fix it", goos: "linux",
			home: noHome, wantErr: EnvHome},
		{name: "empty home says how to fix it", goos: "darwin",
			home: func() (string, error) { return "", nil }, wantErr: EnvHome},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			got, err := dataDir(tt.goos, getenv, tt.home)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("dataDir() = %q, %v; want an error mentioning %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("dataDir(): %v", err)
			}
			if got != tt.want {
				t.Errorf("dataDir() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDataDirUsesEnv checks the exported function reads the real
// environment, which the table above replaces.
func TestDataDirUsesEnv(t *testing.T) {
	want := filepath.Join(t.TempDir(), "ss")
	t.Setenv(EnvHome, want)
	got, err := DataDir()
	if err != nil || got != want {
		t.Fatalf("DataDir() = %q, %v; want %q", got, err, want)
	}
}

// EnsureDir makes a 0700 data directory (tightening a readable one), and
// refuses one others may write to, or one of another user, with the fix:
// a file planted in it (a database, a socket) would survive a chmod.
func TestEnsureDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix modes and owners; Windows relies on the profile's ACLs")
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		// refused is what the error says; "" when the directory is used.
		refused string
	}{
		{name: "creates missing parents", setup: func(t *testing.T, dir string) {}},
		{name: "tightens an existing 0755 dir", setup: func(t *testing.T, dir string) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			mustChmod(t, dir, 0o755) // MkdirAll is subject to umask
		}},
		{"refuses a dir writable by others", func(t *testing.T, dir string) { mkdir(t, dir); mustChmod(t, dir, 0o777) }, "chmod 700"},
		{"refuses a dir writable by group", func(t *testing.T, dir string) { mkdir(t, dir); mustChmod(t, dir, 0o770) }, "writable by group or others (mode 0770)"},
		{"refuses another user's dir", func(t *testing.T, dir string) {
			if os.Getuid() != 0 {
				t.Skip("needs root to give a directory to another user")
			}
			mkdir(t, dir)
			if err := os.Chown(dir, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}, "belongs to uid 4242"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "a", "b", "data")
			tt.setup(t, dir)
			err := EnsureDir(dir)
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("EnsureDir = %v, want an error naming %s and %q", err, dir, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("EnsureDir: %v", err)
			}
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("mode = %v, want a 0700 directory", fi.Mode())
			}
		})
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

func mustChmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureDirRefusesAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := EnsureDir(f)
	if err == nil || !strings.Contains(err.Error(), f) {
		t.Fatalf("EnsureDir(file) = %v, want an error naming %s", err, f)
	}
	if err := EnsureDir(""); err == nil {
		t.Error("EnsureDir(\"\") succeeded")
	}
}
