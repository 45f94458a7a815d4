// Package termsys is termloc's side effects: reading the process table
// for an agent's terminal and its ancestors (/proc on Linux, `ps` on
// macOS), asking tmux for the pane and its clients, and running a focus
// plan (tmux commands, an emulator's remote control for its tab, raising
// an X window through EWMH, AppleScript for Terminal and iTerm2 on macOS).
// The decisions stay in termloc.
package termsys

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// commandTimeout bounds one tmux or wmctrl run: a wedged server must not
// hold a tick or a click.
const commandTimeout = 3 * time.Second

// remoteControlTimeout bounds one run of an emulator's remote control:
// `kitty @` is kitty's Python starting up, measured at 1.1 s on a loaded
// two-core machine (and over 3 s with a test suite beside it).
const remoteControlTimeout = 10 * time.Second

// run runs a command and returns its stdout, its stderr in the error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	return runEnv(ctx, commandTimeout, nil, name, args...)
}

// runEnv is run with its own bound and env added to the inherited
// environment.
func runEnv(ctx context.Context, bound time.Duration, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errb.String()); msg != "" {
			return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
		}
		return out.String(), fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// Result is what a focus did, one line per step, for the person.
type Result struct {
	Did []string
}

// Focus brings the terminal at loc to the front. It runs the plan's steps
// in order and stops at the first that fails; an error always names the
// terminal's address (loc), so the person can go there by hand.
func Focus(ctx context.Context, loc *termloc.Location) (Result, error) {
	steps, partial, err := termloc.Plan(loc)
	if err != nil {
		return Result{}, err
	}
	var res Result
	for _, s := range steps {
		err := runStep(ctx, s)
		if err != nil && s.Kind == termloc.StepSelectTab {
			// The window is still worth raising: the person then
			// picks the tab, told which.
			partial = fmt.Errorf("%w: the %s was not selected (%w)", termloc.ErrCannotFocus, s.Tab, err)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("%w (%s): %w", termloc.ErrCannotFocus, loc.Address(), err)
		}
		res.Did = append(res.Did, describe(s))
	}
	if partial != nil {
		return res, partial
	}
	return res, nil
}

func describe(s termloc.Step) string {
	switch s.Kind {
	case termloc.StepSelectWindow:
		return "selected tmux window " + s.Target
	case termloc.StepSelectPane:
		return "selected tmux pane " + s.Target
	case termloc.StepSwitchClient:
		return fmt.Sprintf("switched tmux client %s to %s", s.Client, s.Target)
	case termloc.StepRaiseWindow:
		return fmt.Sprintf("raised the %s window (pid %d)", s.Name, s.PID)
	case termloc.StepSelectTab:
		return "selected " + s.Tab.String()
	}
	return s.Kind.String()
}

func runStep(ctx context.Context, s termloc.Step) error {
	switch s.Kind {
	case termloc.StepSelectWindow:
		_, err := run(ctx, "tmux", "-S", s.Socket, "select-window", "-t", s.Target)
		return err
	case termloc.StepSelectPane:
		_, err := run(ctx, "tmux", "-S", s.Socket, "select-pane", "-t", s.Target)
		return err
	case termloc.StepSwitchClient:
		_, err := run(ctx, "tmux", "-S", s.Socket, "switch-client", "-c", s.Client, "-t", s.Target)
		return err
	case termloc.StepRaiseWindow:
		return raiseWindow(ctx, s)
	case termloc.StepSelectTab:
		return selectTab(ctx, s.Tab)
	}
	return fmt.Errorf("unknown step %s", s.Kind)
}

// selectTab selects an emulator's tab through its remote control: kitty's
// `kitty @ --to SOCKET focus-window --match id:ID` (which also switches to
// the window's tab), WezTerm's `wezterm cli activate-pane --pane-id ID`
// over the mux socket the pane's environment named.
func selectTab(ctx context.Context, t *termloc.Tab) error {
	switch t.Emulator {
	case termloc.EmulatorKitty:
		_, err := runEnv(ctx, remoteControlTimeout, nil, "kitty", "@", "--to", t.Socket, "focus-window", "--match", "id:"+t.ID)
		return err
	case termloc.EmulatorWezTerm:
		_, err := runEnv(ctx, remoteControlTimeout, []string{"WEZTERM_UNIX_SOCKET=" + t.Socket}, "wezterm", "cli", "activate-pane", "--pane-id", t.ID)
		return err
	}
	return fmt.Errorf("no remote control is known for %s", t.Emulator)
}

// ErrGone is wrapped when the process to locate no longer runs.
var ErrGone = errors.New("the process is gone")

// ErrUnsupported is wrapped where this platform cannot locate or focus yet.
var ErrUnsupported = errors.New("not supported yet on this platform")
