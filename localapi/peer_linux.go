package localapi

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// peerCred reads the peer's pid and uid (SO_PEERCRED).
func peerCred(fd int) (Peer, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return Peer{}, fmt.Errorf("reading the peer (SO_PEERCRED): %w", err)
	}
	return Peer{PID: int(cred.Pid), UID: int(cred.Uid), Known: true}, nil
}
