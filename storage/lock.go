package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockName is the instance lock file in the data directory.
const LockName = "supervisor.lock"

// LockedError says another app instance holds the data directory.
type LockedError struct {
	Path string
	PID  int
}

func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("another session-supervisor (pid %d) is already running on this data directory (lock %s)", e.PID, e.Path)
	}
	return fmt.Sprintf("another session-supervisor is already running on this data directory (lock %s)", e.Path)
}

// Lock is the held instance lock; the OS releases it if the process dies.
type Lock struct {
	f *os.File
}

// AcquireLock takes the data directory's instance lock without waiting.
func AcquireLock(dir string) (*Lock, error) {
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the instance lock %s: %w", path, err)
	}
	if err := tryLock(f); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return nil, &LockedError{Path: path, PID: pid}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock up.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
