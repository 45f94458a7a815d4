//go:build !linux

package procscan

// PIDs cannot read the process table on this platform yet.
func PIDs() ([]int, error) { return nil, ErrNotProbed }

// Comm cannot tell on this platform.
func Comm(pid int) (string, bool) { return "", false }

// Cmdline cannot tell on this platform.
func Cmdline(pid int) ([]string, bool) { return nil, false }

// Cwd cannot tell on this platform.
func Cwd(pid int) (string, error) { return "", ErrNotProbed }

// Environ cannot tell on this platform.
func Environ(pid int) ([]string, error) { return nil, ErrNotProbed }

// Named cannot read the process table on this platform yet: the source
// that asks finds no process (and says so), rather than guessing.
func Named(comm string) ([]Proc, error) { return nil, nil }

// OpenFiles cannot tell on this platform.
func OpenFiles(pid int, pattern string) []string { return nil }

// Probe cannot tell on this platform: Unknown, never a guess of alive.
func Probe(pid int) (Proc, State) { return Proc{PID: pid}, Unknown }

// Env cannot tell on this platform.
func Env(pid int, name string) (string, bool) { return "", false }
