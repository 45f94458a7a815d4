//go:build unix

package claudeterm

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// checkInboxSocket refuses an inbox socket the peer token must not reach: a
// session file can name any path, and whoever listens there gets the token
// that lets it speak to the CLI as the user. The socket must be the user's,
// in a directory of the user (or root's) that others cannot write to
// without the sticky bit (or they could replace the socket), and others may
// not connect to it: a socket they may write to, in a directory they may
// search. A group-writable socket is refused only when its group is not the
// user's own (a umask of 002 with per-user groups is common).
func checkInboxSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("checking the inbox socket: %w", err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("the inbox %s is not a socket (%v); not sending the session's token", path, fi.Mode().Type())
	}
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("checking the inbox socket's directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	dst, dok := di.Sys().(*syscall.Stat_t)
	if !ok || !dok {
		return nil
	}
	uid := os.Getuid()
	sock, dmode := fi.Mode().Perm(), di.Mode()
	switch {
	case int(st.Uid) != uid:
		return fmt.Errorf("the inbox socket %s belongs to uid %d, not to you; not sending the session's token", path, st.Uid)
	case int(dst.Uid) != uid && dst.Uid != 0:
		return fmt.Errorf("the inbox socket's directory %s belongs to uid %d; not sending the session's token", dir, dst.Uid)
	case dmode.Perm()&0o022 != 0 && dmode&os.ModeSticky == 0:
		return fmt.Errorf("the inbox socket's directory %s is writable by others (mode %04o) and could hold a replaced socket; not sending the session's token", dir, dmode.Perm())
	case sock&0o002 != 0 && dmode.Perm()&0o001 != 0,
		sock&0o020 != 0 && dmode.Perm()&0o010 != 0 && int(st.Gid) != os.Getgid():
		return fmt.Errorf("the inbox socket %s is writable by other users (mode %04o, directory %04o); not sending the session's token", path, sock, dmode.Perm())
	}
	return nil
}
