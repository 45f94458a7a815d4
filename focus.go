package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/termloc"
	"github.com/session-supervisor/session-supervisor/sessions/termloc/termsys"
)

// focusSession brings the terminal a session runs in to the front: the
// `focus` command, the tray's and the window's "Go to terminal" and the
// notification's action. It runs where the person is (the CLI's or the
// desktop's process: their display, their tmux), locating the process
// afresh; the session only says which process. Every failure says what
// could not be done and where the terminal is (or was).
func focusSession(ctx context.Context, s sessions.Session) (termsys.Result, error) {
	if s.Source == sessions.Managed {
		return termsys.Result{}, fmt.Errorf("%w: %s is a managed session: it runs in the background, in no terminal", termloc.ErrCannotFocus, s.DisplayName())
	}
	where := ""
	if s.Terminal != nil {
		where = " (it was in " + s.Terminal.String() + ")"
	}
	gone := fmt.Errorf("%w: the terminal of %s is gone: its process (pid %d) has exited%s", termloc.ErrCannotFocus, s.DisplayName(), s.PID, where)
	if s.PID <= 0 || !s.ProcessAlive {
		return termsys.Result{}, gone
	}
	loc, err := termsys.Locate(ctx, s.PID)
	switch {
	case errors.Is(err, termsys.ErrGone):
		// Exited since the app last looked.
		return termsys.Result{}, gone
	case loc == nil:
		return termsys.Result{}, fmt.Errorf("%w: %w%s", termloc.ErrCannotFocus, err, where)
	}
	return termsys.Focus(ctx, loc)
}

// focusSummary is a focus's outcome in one line for the person.
func focusSummary(res termsys.Result, err error) string {
	did := strings.Join(res.Did, "; ")
	switch {
	case err != nil && did != "":
		return did + "; but " + err.Error()
	case err != nil:
		return err.Error()
	}
	return did
}

// focusTerminal is focusSession for the desktop: what it did in one line,
// or an error saying also what it did before it failed.
func focusTerminal(ctx context.Context, s sessions.Session) (string, error) {
	res, err := focusSession(ctx, s)
	if err != nil {
		return "", errors.New(focusSummary(res, err))
	}
	return focusSummary(res, nil), nil
}

func cmdFocus(c *cli, args []string) error {
	fs := c.newFlags("focus")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	s, err := c.oneSession("focus", pos)
	if err != nil {
		return err
	}
	ctx, cancel := requestContext()
	defer cancel()
	res, err := focusSession(ctx, s)
	for _, d := range res.Did {
		fmt.Fprintln(c.human(), d)
	}
	return err
}
