//go:build !unix

package claudeterm

// checkInboxSocket: on Windows the socket lives in the user's profile,
// whose ACL keeps other users out.
func checkInboxSocket(string) error { return nil }
