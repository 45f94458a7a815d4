package requiretool

import (
	"os"
	"strings"
	"testing"
)

// SessionBus hands back the address of a bus that listens on a socket of
// its own, with a path short enough for a unix socket.
func TestSessionBus(t *testing.T) {
	addr := SessionBus(t)
	socket, ok := strings.CutPrefix(addr, "unix:path=")
	if !ok {
		t.Fatalf("address %q, want unix:path=…", addr)
	}
	socket, _, _ = strings.Cut(socket, ",")
	if fi, err := os.Stat(socket); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the bus's socket %s: %v", socket, err)
	}
	if len(socket) > 100 {
		t.Errorf("socket path of %d bytes: too long for a unix socket", len(socket))
	}
}
