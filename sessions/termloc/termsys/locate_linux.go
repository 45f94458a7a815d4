//go:build linux

package termsys

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// Locate says where the terminal of process pid lives, from /proc. A
// process that is gone is an error; one with no terminal is KindNone.
func Locate(ctx context.Context, pid int) (*termloc.Location, error) {
	return locate(ctx, procFS{}, pid)
}

// procFS is /proc, read as each question is asked.
type procFS struct{}

func (procFS) stat(pid int) (termloc.Stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return termloc.Stat{}, err
	}
	return termloc.ParseStat(string(b))
}

func (procFS) ttyName(nr int) (string, bool) { return termloc.TTYName(nr) }

func (procFS) environ(pid int) []string { return nulSeparated(fmt.Sprintf("/proc/%d/environ", pid)) }

func (procFS) args(pid int) []string { return nulSeparated(fmt.Sprintf("/proc/%d/cmdline", pid)) }

// nulSeparated reads a /proc file of NUL-terminated strings (nil when it
// cannot be read: another user's process, or gone).
func nulSeparated(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}
