//go:build !linux

package termsys

import (
	"context"
	"fmt"
	"runtime"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// Locate is not written yet for this platform: no /proc, and macOS's and
// Windows' ways to a process's terminal (AppleScript over Terminal.app and
// iTerm2, the console window) are still to do.
func Locate(ctx context.Context, pid int) (*termloc.Location, error) {
	return nil, fmt.Errorf("locating the terminal of pid %d on %s: %w", pid, runtime.GOOS, ErrUnsupported)
}

func raiseWindow(ctx context.Context, pid int, name string) error {
	return fmt.Errorf("raising the %s window (pid %d) on %s: %w", name, pid, runtime.GOOS, ErrUnsupported)
}
