package termloc

import (
	"errors"
	"fmt"
)

// StepKind is one thing focus does.
type StepKind int

const (
	// StepSelectWindow makes the pane's window its session's current one.
	StepSelectWindow StepKind = iota
	// StepSelectPane makes the pane its window's active one.
	StepSelectPane
	// StepSwitchClient shows the pane's session in a client.
	StepSwitchClient
	// StepRaiseWindow raises and activates the X window of a process.
	StepRaiseWindow
	// StepSelectTab selects an emulator's tab through its remote control
	// (kitty, WezTerm), before its window is raised.
	StepSelectTab
)

func (k StepKind) String() string {
	switch k {
	case StepSelectWindow:
		return "select-window"
	case StepSelectPane:
		return "select-pane"
	case StepSwitchClient:
		return "switch-client"
	case StepRaiseWindow:
		return "raise-window"
	case StepSelectTab:
		return "select-tab"
	}
	return fmt.Sprintf("StepKind(%d)", int(k))
}

// Step is one side effect of a focus, with what it needs.
type Step struct {
	Kind StepKind
	// Socket and Target (tmux steps): the server and "session:window.pane".
	Socket, Target string
	// Client is the tmux client to switch (its tty).
	Client string
	// PID and Name are the process whose window is raised; TTY is the
	// terminal it shows (macOS picks Terminal's or iTerm2's tab by it).
	PID  int
	Name string
	TTY  string
	// Tab is the tab to select (StepSelectTab).
	Tab *Tab
}

// ErrCannotFocus is wrapped by every error saying focus cannot be done; its
// text names the terminal's address so the person can go there by hand.
var ErrCannotFocus = errors.New("cannot focus the terminal")

// Plan is the steps that bring loc to the front. A location that cannot be
// focused at all (no terminal, a remote one, screen, an unrecognised holder)
// is an error wrapping ErrCannotFocus that says why and where it is. A tmux
// pane with no client anywhere is selected, and the plan says so with
// partial: the pane is ready, but no one sees it until a client attaches.
func Plan(loc *Location) (steps []Step, partial error, err error) {
	if loc == nil || loc.Kind == KindNone {
		return nil, nil, fmt.Errorf("%w: the session has no terminal (its process is gone or was not started in one)", ErrCannotFocus)
	}
	switch loc.Kind {
	case KindTmux:
		t := loc.Tmux
		steps = []Step{
			{Kind: StepSelectWindow, Socket: t.Socket, Target: fmt.Sprintf("%s:%d", t.Session, t.Window)},
			{Kind: StepSelectPane, Socket: t.Socket, Target: t.Target()},
		}
		c, ok := pickClient(t)
		if !ok {
			return steps, fmt.Errorf("%w: no tmux client is attached to the server; attach with: tmux -S %s attach -t %s",
				ErrCannotFocus, t.Socket, t.Target()), nil
		}
		if c.Session != t.Session {
			steps = append(steps, Step{Kind: StepSwitchClient, Socket: t.Socket, Target: t.Target(), Client: c.TTY})
		}
		if c.Emulator == nil {
			return steps, fmt.Errorf("%w: tmux %s is shown on %s, but no terminal window on this machine holds that client (over ssh?)",
				ErrCannotFocus, t.Target(), c.TTY), nil
		}
		return append(steps, raise(*c.Emulator, c.TTY, c.Tab)...), nil, nil
	case KindEmulator:
		return raise(*loc.Holder, loc.TTY, loc.Tab), nil, nil
	case KindSSH:
		return nil, nil, fmt.Errorf("%w: %s is a remote login's terminal; its window is on the machine it was opened from", ErrCannotFocus, loc.TTY)
	case KindScreen:
		return nil, nil, fmt.Errorf("%w: GNU screen is not supported yet; the session runs in screen on %s", ErrCannotFocus, loc.TTY)
	}
	return nil, nil, fmt.Errorf("%w: nothing recognisable holds %s", ErrCannotFocus, loc.TTY)
}

// raise is the steps that bring an emulator's window forward: its tab
// first, where it is known and belongs to that emulator.
func raise(emulator Process, tty string, tab *Tab) []Step {
	var steps []Step
	if tab.Fits(emulator.Name) {
		steps = append(steps, Step{Kind: StepSelectTab, Tab: tab, PID: emulator.PID, Name: emulator.Name})
	}
	return append(steps, Step{Kind: StepRaiseWindow, PID: emulator.PID, Name: emulator.Name, TTY: tty})
}

// pickClient is the client to show the pane in: one already on the pane's
// session (the most recently active), else the server's most recently
// active client.
func pickClient(t *Tmux) (Client, bool) {
	var best Client
	found, onSession := false, false
	for _, c := range t.Clients {
		on := c.Session == t.Session
		switch {
		case !found, on && !onSession, on == onSession && c.Activity > best.Activity:
			best, found, onSession = c, true, on
		}
	}
	return best, found
}
