//go:build linux

package termsys

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// raiseWindow activates the X window whose _NET_WM_PID is pid, through the
// window manager (EWMH: a _NET_ACTIVE_WINDOW client message, sent by
// wmctrl). Wayland without an X display, no wmctrl, no EWMH window manager
// and no such window each say so.
func raiseWindow(ctx context.Context, s termloc.Step) error {
	pid, name := s.PID, s.Name
	if os.Getenv("DISPLAY") == "" {
		if os.Getenv("WAYLAND_DISPLAY") != "" {
			return fmt.Errorf("raising the %s window: not supported yet on Wayland (no X display)", name)
		}
		return fmt.Errorf("raising the %s window: no X display (DISPLAY is unset)", name)
	}
	if _, err := exec.LookPath("wmctrl"); err != nil {
		return fmt.Errorf("raising the %s window needs wmctrl (apt install wmctrl): %w", name, err)
	}
	out, err := run(ctx, "wmctrl", "-l", "-p")
	if err != nil {
		return fmt.Errorf("listing the X windows (does the window manager implement EWMH?): %w", err)
	}
	win, ok := termloc.WindowOfPID(out, pid)
	if !ok {
		return fmt.Errorf("no X window of the %s process (pid %d) is managed by the window manager", name, pid)
	}
	if _, err := run(ctx, "wmctrl", "-i", "-a", win); err != nil {
		return fmt.Errorf("activating window %s: %w", win, err)
	}
	return nil
}
