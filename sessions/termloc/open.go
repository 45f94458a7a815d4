package termloc

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// This file is "Continue in terminal"'s decision, pure: where the agent's
// own resume of a managed session opens (a new window of the user's tmux
// server, else a terminal emulator), and how that emulator is told to run
// it. termsys reads the facts and carries it out.

// OpenKind is where a hand-over opens.
type OpenKind int

const (
	// OpenTmux is a new window of the running tmux server.
	OpenTmux OpenKind = iota + 1
	// OpenEmulator is a new terminal emulator window.
	OpenEmulator
)

func (k OpenKind) String() string {
	switch k {
	case OpenTmux:
		return "tmux"
	case OpenEmulator:
		return "emulator"
	}
	return fmt.Sprintf("OpenKind(%d)", int(k))
}

// ErrCannotOpen is wrapped by every error saying no terminal can be opened
// here; the managed session is then left as it was.
var ErrCannotOpen = errors.New("cannot open a terminal")

// DefaultEmulators are the terminal emulators looked for on PATH, in order,
// after $TERMINAL and Debian's x-terminal-emulator, when desktop.terminal
// is empty.
var DefaultEmulators = []string{"gnome-terminal", "konsole", "xfce4-terminal", "kitty", "alacritty", "wezterm", "foot", "xterm"}

// OpenFacts is what the machine offers a hand-over, as termsys reads it.
type OpenFacts struct {
	// TmuxRunning: a tmux server answers (the one $TMUX names, else the
	// user's default socket).
	TmuxRunning bool
	// Setting is desktop.terminal: the emulator's command, with any
	// options ("" finds one).
	Setting string
	// TerminalEnv is $TERMINAL, the emulator the desktop names.
	TerminalEnv string
	// Display: an X or Wayland display to open a window on.
	Display bool
	// OnPath is each program (the setting's, $TERMINAL's, the defaults')
	// found on PATH.
	OnPath map[string]bool
}

// Opening is where a hand-over opens: a tmux window, or Emulator (its
// command and options, as the setting gives them).
type Opening struct {
	Kind     OpenKind
	Emulator []string
}

func (o Opening) String() string {
	if o.Kind == OpenEmulator {
		return "a new " + filepath.Base(o.Emulator[0]) + " window"
	}
	return "a new tmux window"
}

// Where decides where a hand-over opens: a new window of a running tmux
// server first (the person is at home there), else the emulator the
// setting names, else the desktop's ($TERMINAL, x-terminal-emulator, then
// DefaultEmulators found on PATH). Nothing to open is an error wrapping
// ErrCannotOpen that says what was looked for.
func Where(f OpenFacts) (Opening, error) {
	if f.TmuxRunning {
		return Opening{Kind: OpenTmux}, nil
	}
	if !f.Display {
		return Opening{}, fmt.Errorf("%w: no tmux server runs and there is no display to open a terminal window on (start tmux, or run this from your desktop)", ErrCannotOpen)
	}
	if set := strings.Fields(f.Setting); len(set) > 0 {
		if !f.OnPath[set[0]] {
			return Opening{}, fmt.Errorf("%w: no tmux server runs, and the terminal desktop.terminal names (%s) is not on PATH", ErrCannotOpen, set[0])
		}
		return Opening{Kind: OpenEmulator, Emulator: set}, nil
	}
	candidates := append([]string{}, strings.Fields(f.TerminalEnv)...)
	if len(candidates) > 1 {
		// $TERMINAL with options is taken whole, as the desktop gave it.
		if f.OnPath[candidates[0]] {
			return Opening{Kind: OpenEmulator, Emulator: candidates}, nil
		}
		candidates = nil
	}
	candidates = append(candidates, "x-terminal-emulator")
	candidates = append(candidates, DefaultEmulators...)
	for _, c := range candidates {
		if f.OnPath[c] {
			return Opening{Kind: OpenEmulator, Emulator: []string{c}}, nil
		}
	}
	return Opening{}, fmt.Errorf("%w: no tmux server runs and no terminal emulator was found ($TERMINAL, x-terminal-emulator, %s); set desktop.terminal",
		ErrCannotOpen, strings.Join(DefaultEmulators, ", "))
}

// EmulatorArgv is the command line that opens emulator (its command and
// options) running argv: each emulator's own way to take a command (after
// -e for most; gnome-terminal after --, wezterm `start --`, xfce4-terminal
// and terminator -x, kitty and foot the command itself).
func EmulatorArgv(emulator, argv []string) []string {
	out := append([]string{}, emulator...)
	switch filepath.Base(emulator[0]) {
	case "gnome-terminal", "kgx", "ptyxis":
		out = append(out, "--")
	case "wezterm":
		out = append(out, "start", "--")
	case "xfce4-terminal", "terminator":
		out = append(out, "-x")
	case "kitty", "foot":
	default:
		// xterm, x-terminal-emulator (Debian's alternatives all take -e
		// with the command's words), konsole, alacritty, urxvt, st.
		out = append(out, "-e")
	}
	return append(out, argv...)
}
