//go:build !unix

package packaging

// stderrIdentity: there is no journal off unix.
func stderrIdentity() (dev, ino uint64, ok bool) { return 0, 0, false }
