//go:build windows

package codex

// ReapOrphan cannot identify an orphaned Codex process safely on Windows
// (no process groups to check); it leaves it alone.
func ReapOrphan(pid int, stamp string) (bool, error) { return false, nil }
