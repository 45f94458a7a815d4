//go:build windows

package gemini

// ReapOrphan cannot identify an orphaned Gemini CLI process safely on
// Windows (no process groups to check); it leaves it alone.
func ReapOrphan(pid int, stamp string) (bool, error) { return false, nil }
