//go:build !linux && !darwin && !windows

package termsys

import (
	"context"
	"fmt"
	"runtime"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// Locate is not written for this platform (the BSDs and others).
func Locate(ctx context.Context, pid int) (*termloc.Location, error) {
	return nil, fmt.Errorf("locating the terminal of pid %d on %s: %w", pid, runtime.GOOS, ErrUnsupported)
}

func raiseWindow(ctx context.Context, s termloc.Step) error {
	return fmt.Errorf("raising the %s window (pid %d) on %s: %w", s.Name, s.PID, runtime.GOOS, ErrUnsupported)
}
