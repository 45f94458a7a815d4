package termloc

import (
	"fmt"
	"strings"
)

// Tab is the tab of a terminal emulator that holds many (kitty's window,
// WezTerm's pane), where the emulator's remote control can be reached
// from outside it: focus selects it before raising the emulator's window,
// which alone would show whichever tab was last active.
type Tab struct {
	// Emulator is "kitty" or "wezterm".
	Emulator string `json:"emulator"`
	// Socket is where the emulator's remote control listens: kitty's
	// --listen-on address ("unix:/path"), WezTerm's mux socket path.
	Socket string `json:"socket"`
	// ID is kitty's window id or WezTerm's pane id.
	ID string `json:"id"`
}

// The emulators whose tabs focus can select.
const (
	EmulatorKitty   = "kitty"
	EmulatorWezTerm = "wezterm"
)

// TabFromEnv reads a tab from the environment (KEY=VALUE entries) an
// emulator gives the processes it starts in one: kitty sets
// KITTY_WINDOW_ID, and KITTY_LISTEN_ON when its remote control listens on
// a socket (allow_remote_control and --listen-on); WezTerm sets
// WEZTERM_PANE and WEZTERM_UNIX_SOCKET. Nil when neither is there whole:
// kitty's remote control without a socket answers only from inside its
// own windows. Only unix sockets are used, and only numeric ids.
func TabFromEnv(env []string) *Tab {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			switch k {
			case "KITTY_WINDOW_ID", "KITTY_LISTEN_ON", "WEZTERM_PANE", "WEZTERM_UNIX_SOCKET":
				vars[k] = v
			}
		}
	}
	if id, sock := vars["KITTY_WINDOW_ID"], vars["KITTY_LISTEN_ON"]; digits(id) && strings.HasPrefix(sock, "unix:") && len(sock) > len("unix:") {
		return &Tab{Emulator: EmulatorKitty, Socket: sock, ID: id}
	}
	if id, sock := vars["WEZTERM_PANE"], vars["WEZTERM_UNIX_SOCKET"]; digits(id) && strings.HasPrefix(sock, "/") {
		return &Tab{Emulator: EmulatorWezTerm, Socket: sock, ID: id}
	}
	return nil
}

func digits(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Fits says whether the tab belongs to the emulator process named comm.
// The variables are inherited: an xterm started from a kitty window
// passes that window's KITTY_WINDOW_ID on to its own shell, so a tab is
// believed only where its emulator holds the terminal.
func (t *Tab) Fits(comm string) bool {
	if t == nil {
		return false
	}
	c := strings.ToLower(comm)
	switch t.Emulator {
	case EmulatorKitty:
		return c == "kitty"
	case EmulatorWezTerm:
		return strings.HasPrefix(c, "wezterm")
	}
	return false
}

// String names the tab as its emulator does: "kitty window 3",
// "wezterm pane 7".
func (t *Tab) String() string {
	if t == nil {
		return ""
	}
	word := "window"
	if t.Emulator == EmulatorWezTerm {
		word = "pane"
	}
	return fmt.Sprintf("%s %s %s", t.Emulator, word, t.ID)
}
