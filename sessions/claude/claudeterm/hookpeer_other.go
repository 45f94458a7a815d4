//go:build !linux

package claudeterm

import "net"

// peerPID: the standard library reads a socket's peer on Linux only here;
// elsewhere the owner-only socket is the guard.
func peerPID(net.Conn) (int, bool) { return 0, false }
