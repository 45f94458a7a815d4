//go:build linux || darwin

package localapi

import (
	"fmt"
	"net"
)

// peerOf asks the kernel who is at the other end of c (peerCred, per
// platform): its word, which the client cannot forge.
func peerOf(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("not a unix socket: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("reading the peer: %w", err)
	}
	var (
		p    Peer
		perr error
	)
	if err := raw.Control(func(fd uintptr) { p, perr = peerCred(int(fd)) }); err != nil {
		return Peer{}, fmt.Errorf("reading the peer: %w", err)
	}
	return p, perr
}
