// Package termsys is termloc's side effects: reading /proc for an agent's
// terminal and its ancestors, asking tmux for the pane and its clients,
// and running a focus plan (tmux commands, raising an X window through
// EWMH). The decisions stay in termloc.
package termsys

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// commandTimeout bounds one tmux or wmctrl run: a wedged server must not
// hold a tick or a click.
const commandTimeout = 3 * time.Second

// run runs a command and returns its stdout, its stderr in the error.
func run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
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
		if err := runStep(ctx, s); err != nil {
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
		return raiseWindow(ctx, s.PID, s.Name)
	}
	return fmt.Errorf("unknown step %s", s.Kind)
}

// ErrGone is wrapped when the process to locate no longer runs.
var ErrGone = errors.New("the process is gone")

// ErrUnsupported is wrapped where this platform cannot locate or focus yet.
var ErrUnsupported = errors.New("not supported yet on this platform")
