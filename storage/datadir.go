package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// EnvHome names the environment variable that overrides the data directory.
// It wins over the per-OS default so tests, packaging and a second install
// can point the app somewhere else without a flag.
const EnvHome = "SESSION_SUPERVISOR_HOME"

// dirMode is the data directory's mode: the database holds working
// directories, failure messages and the timeline of every session, which is
// nobody else's business on a shared machine.
const dirMode os.FileMode = 0o700

// DataDir returns the directory the app keeps its database in, without
// creating it: $SESSION_SUPERVISOR_HOME if set, else the per-OS default
// (Linux and other unixes: $XDG_DATA_HOME/session-supervisor, falling back to
// ~/.local/share/session-supervisor; macOS: ~/Library/Application
// Support/Session Supervisor; Windows: %LocalAppData%\Session Supervisor).
// The result is absolute, because the app may run as a service whose working
// directory is not the user's.
func DataDir() (string, error) {
	return dataDir(runtime.GOOS, os.Getenv, os.UserHomeDir)
}

// dataDir is DataDir with its inputs passed in, so every OS's rule can be
// table-tested on any OS.
func dataDir(goos string, getenv func(string) string, homeDir func() (string, error)) (string, error) {
	if d := getenv(EnvHome); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", fmt.Errorf("resolve %s=%q: %w", EnvHome, d, err)
		}
		return abs, nil
	}
	home := func() (string, error) {
		h, err := homeDir()
		if err != nil {
			return "", fmt.Errorf("find the data directory (set %s to choose one): %w", EnvHome, err)
		}
		if h == "" {
			return "", errors.New("find the data directory: the home directory is unknown (set " + EnvHome + " to choose one)")
		}
		return h, nil
	}
	switch goos {
	case "windows":
		// LocalAppData, not AppData (Roaming): the database is machine-local
		// state and must not be synced between machines by a roaming profile.
		if d := getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "Session Supervisor"), nil
		}
		h, err := home()
		if err != nil {
			return "", err
		}
		return filepath.Join(h, "AppData", "Local", "Session Supervisor"), nil
	case "darwin", "ios":
		h, err := home()
		if err != nil {
			return "", err
		}
		return filepath.Join(h, "Library", "Application Support", "Session Supervisor"), nil
	default:
		// The XDG base-directory spec says a relative $XDG_DATA_HOME is
		// invalid and must be ignored, so it cannot make the data move with
		// the working directory.
		if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
			return filepath.Join(d, "session-supervisor"), nil
		}
		h, err := home()
		if err != nil {
			return "", err
		}
		return filepath.Join(h, ".local", "share", "session-supervisor"), nil
	}
}

// EnsureDir creates dir (and any missing parents) with mode 0700 and, on
// unix, tightens an existing dir to 0700: a directory created earlier by hand
// or by an older build with a looser umask must not keep exposing the
// database. Windows has no unix modes; there the directory gets an ACL of
// its own (the user and SYSTEM only, nothing inherited: checkOwner).
func EnsureDir(dir string) error {
	if dir == "" {
		return errors.New("ensure data directory: empty path")
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("create data directory %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat data directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data directory %s exists and is not a directory", dir)
	}
	if err := checkOwner(dir, fi); err != nil {
		return err
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o022 != 0 {
		// Another user could already have planted a file (a database, a
		// socket) in it: tightening now would not undo that.
		return fmt.Errorf("data directory %s is writable by group or others (mode %04o): another user could have placed files in it; check what it holds, then run `chmod 700 %s`",
			dir, fi.Mode().Perm(), dir)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != dirMode {
		if err := os.Chmod(dir, dirMode); err != nil {
			return fmt.Errorf("restrict data directory %s to mode 0700: %w", dir, err)
		}
	}
	return nil
}
