//go:build darwin

package termsys

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// Locate says where the terminal of process pid lives, from one `ps`
// listing (macOS has no /proc). A process that is gone is an error; one
// with no terminal is KindNone. Environments are not read (another
// process's is not readable without privileges), so a tmux server's
// socket comes from its command line or the default.
func Locate(ctx context.Context, pid int) (*termloc.Location, error) {
	out, err := run(ctx, "ps", "-A", "-o", termloc.PSFormat)
	if err != nil {
		return nil, fmt.Errorf("locating the terminal of pid %d: listing the processes: %w", pid, err)
	}
	return locate(ctx, psTable{ctx: ctx, t: termloc.ParsePS(out)}, pid)
}

// psTable is a `ps` listing, with a process's command line asked of ps
// when needed (a tmux server's socket).
type psTable struct {
	ctx context.Context
	t   termloc.PSTable
}

func (p psTable) stat(pid int) (termloc.Stat, error) {
	st, ok := p.t.Stats[pid]
	if !ok {
		return termloc.Stat{}, fmt.Errorf("pid %d: %w", pid, fs.ErrNotExist)
	}
	return st, nil
}

func (p psTable) ttyName(nr int) (string, bool) {
	name, ok := p.t.TTYs[nr]
	return name, ok
}

func (psTable) environ(int) []string { return nil }

func (p psTable) args(pid int) []string {
	out, err := run(p.ctx, "ps", "-ww", "-o", "args=", "-p", strconv.Itoa(pid))
	if err != nil {
		return nil
	}
	return strings.Fields(out)
}

// raiseWindow brings forward the Terminal or iTerm2 tab showing the
// step's terminal, through AppleScript (osascript); the first run asks
// the user to let this app control that one (macOS Automation).
func raiseWindow(ctx context.Context, s termloc.Step) error {
	script, err := termloc.AppleScript(s.Name, s.TTY)
	if err != nil {
		return err
	}
	out, err := run(ctx, "osascript", "-e", script)
	if err != nil {
		return fmt.Errorf("asking %s for the tab on %s (is this app allowed to control it? System Settings → Privacy & Security → Automation): %w", s.Name, s.TTY, err)
	}
	if strings.TrimSpace(out) != "found" {
		return fmt.Errorf("%s has no tab on %s", s.Name, s.TTY)
	}
	return nil
}
