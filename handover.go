package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/localapi"
	"github.com/session-supervisor/session-supervisor/sessions/termloc"
	"github.com/session-supervisor/session-supervisor/sessions/termloc/termsys"
	"github.com/session-supervisor/session-supervisor/ui/model"
)

// desktopTerminalSetting names the emulator a hand-over opens when no tmux
// server runs.
const desktopTerminalSetting = "desktop.terminal"

// handoverer is what a hand-over asks of the supervisor (the local API's
// client, the desktop's backend).
type handoverer interface {
	Handover(ctx context.Context, id string, req localapi.HandoverRequest) (localapi.Handover, error)
}

// handoverSession continues managed session id in a terminal: the `handover`
// command, the tray's and the window's "Continue in terminal". Where it
// opens is decided first, here, where the person is (their tmux, their
// display): with nowhere to open, the session is not touched. Then the
// supervisor waits for the turn (or interrupts it) and stops the process,
// and the agent's resume opens here. What it did comes back in one line.
func handoverSession(ctx context.Context, b handoverer, id string, interrupt bool, terminal string) (string, error) {
	if machine, _ := model.SplitKey(id); machine != "" {
		return "", fmt.Errorf("session %s runs on machine %s: it cannot be continued in a terminal from here (run `session-supervisor handover` on %s)", id, machine, machine)
	}
	where, err := termloc.Where(termsys.OpenFacts(ctx, terminal))
	if err != nil {
		return "", fmt.Errorf("session %s was left as it was: %w", id, err)
	}
	h, err := b.Handover(ctx, id, localapi.HandoverRequest{Interrupt: interrupt})
	if err != nil {
		return "", err
	}
	did, err := termsys.Open(ctx, where, h.Cwd, h.Argv)
	if err != nil {
		// The process is stopped already: say how to go on by hand (the
		// app takes that process as this session too) or in the background.
		return "", fmt.Errorf("session %s was stopped (%s), but %w; continue it yourself: cd %s && %s (the app takes it as this session), or send it a prompt to go on in the background",
			h.Session.DisplayName(), h.Stopped, err, h.Cwd, strings.Join(h.Argv, " "))
	}
	return fmt.Sprintf("%s: %s; %s", h.Session.DisplayName(), h.Stopped, did), nil
}

func cmdHandover(c *cli, args []string) error {
	fs := c.newFlags("handover")
	interrupt := fs.Bool("interrupt", false, "interrupt the turn in flight instead of waiting for it to end")
	id, err := parseSessionID(fs, args)
	if err != nil {
		return err
	}
	if c.machine != "" {
		return fmt.Errorf("a session of machine %s cannot be continued in a terminal from here: its terminal would open there (run `session-supervisor handover %s` on %s)", c.machine, id, c.machine)
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	// Bounded by the supervisor's own wait for the turn, with room for the
	// stop's graces.
	ctx, cancel := context.WithTimeout(context.Background(), localapi.DefaultHandoverWait+time.Minute)
	defer cancel()
	terminal := ""
	if vals, err := cl.Settings(ctx); err == nil {
		for _, v := range vals {
			if v.Key == desktopTerminalSetting {
				terminal = v.Value
			}
		}
	}
	did, err := handoverSession(ctx, cl, id, *interrupt, terminal)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.human(), did)
	return nil
}
