//go:build unix

package packaging

import (
	"os"
	"syscall"
)

// stderrIdentity returns stderr's device and inode, what JOURNAL_STREAM
// names when stderr is connected to the journal.
func stderrIdentity() (dev, ino uint64, ok bool) {
	fi, err := os.Stderr.Stat()
	if err != nil {
		return 0, 0, false
	}
	st, isStat := fi.Sys().(*syscall.Stat_t)
	if !isStat {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true
}
