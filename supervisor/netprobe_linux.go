package supervisor

import "os"

// ProbeConnectivity tells whether this machine has a route off itself,
// from the kernel's routing tables. Two small /proc reads: cheap enough for
// every tick. A table that cannot be read counts as not read, never as
// empty.
func ProbeConnectivity() Connectivity {
	return connectivityFromRoutes(readTable("/proc/net/route"), readTable("/proc/net/ipv6_route"))
}

func readTable(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	if b == nil {
		b = []byte{} // read, and empty: no routes at all
	}
	return b
}
