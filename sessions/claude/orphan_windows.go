//go:build windows

package claude

// ReapOrphan cannot identify an orphaned Claude Code process safely on
// Windows (no process groups to check); it leaves it alone.
func ReapOrphan(pid int, stamp string) (bool, error) { return false, nil }
