//go:build unix

package storage

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive advisory lock, failing at once if it is held.
func tryLock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
