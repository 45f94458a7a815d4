//go:build windows

package opencode

// ReapOrphan cannot identify an orphaned OpenCode server safely on Windows
// (no process groups to check); it leaves it alone.
func ReapOrphan(int, string) (bool, error) { return false, nil }
