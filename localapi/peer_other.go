//go:build !linux && !darwin

package localapi

import (
	"errors"
	"net"
)

// peerOf: this platform's socket does not name its peer here (Windows'
// AF_UNIX has no SO_PEERCRED); the owner-only data directory keeps other
// users out, and the request is served as the user's.
func peerOf(net.Conn) (Peer, error) {
	return Peer{}, errors.New("the peer of a local socket is not read on this platform")
}
