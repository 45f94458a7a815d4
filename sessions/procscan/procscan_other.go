//go:build !linux

package procscan

import (
	"os/exec"
	"strconv"
	"strings"
)

// PIDs cannot read the process table on this platform yet.
func PIDs() ([]int, error) { return nil, ErrNotProbed }

// List cannot read the process table on this platform yet.
func List() ([]Listed, error) { return nil, ErrNotProbed }

// LastPID is not read on this platform: a table lists at every look.
func LastPID() (int, bool) { return 0, false }

// NewProcess cannot tell on this platform.
func NewProcess(from, to int) (found, known bool) { return false, false }

// Lister lists the process table again and again (List; nothing on this
// platform yet).
type Lister struct{}

// List is List.
func (*Lister) List() ([]Listed, error) { return List() }

// Comm cannot tell on this platform.
func Comm(pid int) (string, bool) { return "", false }

// Cmdline asks ps where there is no /proc (macOS, the BSDs): ps joins the
// arguments with spaces, so they come back split on white space (an
// argument with a space in it is two). ok is false where ps cannot tell
// (no such process, or no ps: Windows).
func Cmdline(pid int) ([]string, bool) {
	out, err := exec.Command("ps", "-o", "args=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return nil, false
	}
	argv := strings.Fields(string(out))
	return argv, len(argv) > 0
}

// Cwd cannot tell on this platform.
func Cwd(pid int) (string, error) { return "", ErrNotProbed }

// Environ cannot tell on this platform.
func Environ(pid int) ([]string, error) { return nil, ErrNotProbed }

// Named cannot read the process table on this platform yet: the source
// that asks finds no process (and says so), rather than guessing.
func Named(comms ...string) ([]Proc, error) { return nil, nil }

// OpenFiles cannot tell on this platform.
func OpenFiles(pid int, pattern string) []string { return nil }

// Env cannot tell on this platform.
func Env(pid int, name string) (string, bool) { return "", false }

// StdinTerminal cannot tell on this platform.
func StdinTerminal(pid int) (bool, bool) { return false, false }

// Children cannot tell on this platform.
func Children(pid int) (int, bool) { return 0, false }
