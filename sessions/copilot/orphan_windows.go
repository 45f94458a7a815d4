package copilot

// ReapOrphan is not implemented on Windows: the app cannot tell its turn's
// process from another that reused the pid, so it leaves it alone.
func ReapOrphan(int, string) (bool, error) { return false, nil }
