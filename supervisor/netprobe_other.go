//go:build !linux

package supervisor

// ProbeConnectivity cannot tell on this platform yet: unknown, which never
// holds a session (it is retried as if online).
func ProbeConnectivity() Connectivity { return ConnUnknown }
