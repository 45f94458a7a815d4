//go:build !linux

package procscan

// Named cannot read the process table on this platform yet: the source
// that asks finds no process (and says so), rather than guessing.
func Named(comms ...string) ([]Proc, error) { return nil, nil }

// OpenFiles cannot tell on this platform.
func OpenFiles(pid int, pattern string) []string { return nil }

// Probe cannot tell on this platform: Unknown, never a guess of alive.
func Probe(pid int) (Proc, State) { return Proc{PID: pid}, Unknown }

// Env cannot tell on this platform.
func Env(pid int, name string) (string, bool) { return "", false }

// StdinTerminal cannot tell on this platform.
func StdinTerminal(pid int) (bool, bool) { return false, false }

// Children cannot tell on this platform.
func Children(pid int) (int, bool) { return 0, false }
