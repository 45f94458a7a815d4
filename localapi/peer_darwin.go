package localapi

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// peerCred reads the peer's uid (LOCAL_PEERCRED) and pid (LOCAL_PEERPID).
func peerCred(fd int) (Peer, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return Peer{}, fmt.Errorf("reading the peer (LOCAL_PEERCRED): %w", err)
	}
	pid, err := unix.GetsockoptInt(fd, unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	if err != nil {
		pid = 0 // the uid still decides; no ancestry without a pid
	}
	return Peer{PID: pid, UID: int(cred.Uid), Known: true}, nil
}
