//go:build unix

package storage

import (
	"fmt"
	"os"
	"syscall"
)

// checkOwner refuses a data directory of another user: its owner could read
// every session and timeline and replace the socket the CLI talks to.
func checkOwner(dir string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Errorf("data directory %s belongs to uid %d, not to you (uid %d): its owner could read your sessions and impersonate the app; use a directory of your own (--data-dir or $%s)",
			dir, st.Uid, uid, EnvHome)
	}
	return nil
}
