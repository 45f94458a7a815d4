// Package termloc says where a terminal session lives — its controlling
// tty, the tmux pane holding that tty and the clients attached to its
// server, or else the terminal emulator above the agent — and how to bring
// it to the front. Everything here is pure: the facts come in (parsed
// /proc stat lines or a macOS ps listing, tmux's answers, an emulator's
// variables) and a Location or a focus Plan comes out. Reading the
// process table, running tmux and raising windows live in termsys.
package termloc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is what holds a session's terminal.
type Kind int

const (
	// KindNone: the process has no controlling terminal (or is gone).
	KindNone Kind = iota
	// KindTTY: a terminal whose holder was not recognised.
	KindTTY
	// KindTmux: a tmux pane.
	KindTmux
	// KindScreen: a GNU screen window (located, not focused).
	KindScreen
	// KindSSH: a terminal of a remote login: the emulator is on another
	// machine.
	KindSSH
	// KindEmulator: a terminal emulator window on this machine.
	KindEmulator
)

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindTTY:
		return "tty"
	case KindTmux:
		return "tmux"
	case KindScreen:
		return "screen"
	case KindSSH:
		return "ssh"
	case KindEmulator:
		return "emulator"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// MarshalText makes a Kind its word in JSON.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads the word back.
func (k *Kind) UnmarshalText(b []byte) error {
	for c := KindNone; c <= KindEmulator; c++ {
		if c.String() == string(b) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("termloc: unknown kind %q", b)
}

// Process is a process named by its pid and command name (comm).
type Process struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
}

// Client is a tmux client: the terminal a person looks at tmux through.
type Client struct {
	TTY     string `json:"tty"`
	PID     int    `json:"pid"`
	Session string `json:"session"`
	// Activity is the client's last activity (unix seconds): with no
	// client on the pane's session, the most recently used one is switched.
	Activity int64 `json:"activity,omitempty"`
	// Emulator is the terminal emulator the client runs in, when found.
	Emulator *Process `json:"emulator,omitempty"`
	// Tab is the emulator's tab holding the client, where its remote
	// control is reachable (TabFromEnv of the client's environment).
	Tab *Tab `json:"tab,omitempty"`
}

// Tmux is the tmux pane holding a session's tty.
type Tmux struct {
	Socket  string `json:"socket"`
	Session string `json:"session"`
	Window  int    `json:"window"`
	Pane    int    `json:"pane"`
	PaneID  string `json:"pane_id"`
	// Clients are every client of the pane's server (attached to any of
	// its sessions), so focus can switch one when none shows the pane's.
	Clients []Client `json:"clients,omitempty"`
}

// Target is the pane's address for tmux commands: "work:2.1".
func (t Tmux) Target() string { return fmt.Sprintf("%s:%d.%d", t.Session, t.Window, t.Pane) }

// Location is where a terminal session lives.
type Location struct {
	Kind Kind   `json:"kind"`
	TTY  string `json:"tty,omitempty"`
	Tmux *Tmux  `json:"tmux,omitempty"`
	// Holder is the process above the agent that holds its terminal when it
	// is not tmux: the emulator, sshd or screen.
	Holder *Process `json:"holder,omitempty"`
	// Tab is the holder's tab (KindEmulator), where its remote control is
	// reachable.
	Tab *Tab `json:"tab,omitempty"`
}

// Equal reports whether two locations say the same.
func (l *Location) Equal(o *Location) bool {
	if l == nil || o == nil {
		return l == o
	}
	return l.String() == o.String() && l.TTY == o.TTY && l.detail() == o.detail()
}

// detail is what String leaves out but a change of which matters (pids,
// the socket, each client's session).
func (l *Location) detail() string {
	var b strings.Builder
	if l.Holder != nil {
		fmt.Fprintf(&b, "%d;", l.Holder.PID)
	}
	if l.Tab != nil {
		fmt.Fprintf(&b, "%s;", l.Tab.Socket)
	}
	if t := l.Tmux; t != nil {
		fmt.Fprintf(&b, "%s;%s;", t.Socket, t.PaneID)
		for _, c := range t.Clients {
			fmt.Fprintf(&b, "%s,%d,%s;", c.TTY, c.PID, c.Session)
			if c.Emulator != nil {
				fmt.Fprintf(&b, "%d;", c.Emulator.PID)
			}
			if c.Tab != nil {
				fmt.Fprintf(&b, "%s;", c.Tab)
			}
		}
	}
	return b.String()
}

// String is the location in a few words: "tmux work:2.1, attached in
// xterm", "xterm (pid 4242)", "/dev/pts/3 (held by sshd)".
func (l *Location) String() string {
	if l == nil {
		return "no terminal"
	}
	switch l.Kind {
	case KindTmux:
		s := "tmux " + l.Tmux.Target()
		var in []string
		for _, c := range l.Tmux.Clients {
			if c.Session != l.Tmux.Session {
				continue
			}
			name := "a terminal"
			if c.Emulator != nil {
				name = c.Emulator.Name
			}
			if !containsStr(in, name) {
				in = append(in, name)
			}
		}
		if len(in) == 0 {
			return s + ", not attached"
		}
		return s + ", attached in " + strings.Join(in, ", ")
	case KindEmulator:
		if l.Tab.Fits(l.Holder.Name) {
			return fmt.Sprintf("%s (pid %d) on %s, %s", l.Holder.Name, l.Holder.PID, l.TTY, l.Tab)
		}
		return fmt.Sprintf("%s (pid %d) on %s", l.Holder.Name, l.Holder.PID, l.TTY)
	case KindSSH:
		return fmt.Sprintf("%s over ssh (a remote terminal)", l.TTY)
	case KindScreen:
		return fmt.Sprintf("GNU screen on %s", l.TTY)
	case KindTTY:
		return l.TTY + " (terminal not recognised)"
	}
	return "no terminal"
}

// Address is where to find the terminal by hand: the pane and its server
// for tmux (what a client would attach to), else String.
func (l *Location) Address() string {
	if l != nil && l.Kind == KindTmux && l.Tmux != nil {
		return fmt.Sprintf("tmux pane %s on the server %s", l.Tmux.Target(), l.Tmux.Socket)
	}
	return l.String()
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Stat is what a /proc/PID/stat line says that locating needs.
type Stat struct {
	PID   int
	Comm  string
	PPID  int
	TTYNr int
}

// ParseStat reads a /proc/PID/stat line. The command name is in
// parentheses and may itself hold spaces and parentheses, so the fields
// are read after the last ')'.
func ParseStat(line string) (Stat, error) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("termloc: stat line without a command name: %q", line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return Stat{}, fmt.Errorf("termloc: stat pid: %w", err)
	}
	// After ")": state ppid pgrp session tty_nr …
	f := strings.Fields(line[end+1:])
	if len(f) < 5 {
		return Stat{}, fmt.Errorf("termloc: short stat line for pid %d", pid)
	}
	ppid, err1 := strconv.Atoi(f[1])
	tty, err2 := strconv.Atoi(f[4])
	if err1 != nil || err2 != nil {
		return Stat{}, fmt.Errorf("termloc: stat fields of pid %d: %q", pid, f[:5])
	}
	return Stat{PID: pid, Comm: line[open+1 : end], PPID: ppid, TTYNr: tty}, nil
}

// TTYName is the device of a stat tty_nr (major in bits 8–15, minor in
// bits 0–7 and 20–31): pseudo-terminals (majors 136–143) are
// /dev/pts/N, virtual consoles (major 4) /dev/ttyN. ok is false for no
// terminal (0) or a device this does not name.
func TTYName(nr int) (string, bool) {
	if nr == 0 {
		return "", false
	}
	major := (nr >> 8) & 0xfff
	minor := (nr & 0xff) | ((nr >> 12) & 0xfff00)
	switch {
	case major >= 136 && major <= 143:
		return fmt.Sprintf("/dev/pts/%d", (major-136)*256+minor), true
	case major == 4 && minor < 64:
		return fmt.Sprintf("/dev/tty%d", minor), true
	}
	return "", false
}

// PaneFormat is the list-panes -F format ParsePanes reads; tabs, because a
// session name may hold spaces.
const PaneFormat = "#{pane_tty}\t#{session_name}\t#{window_index}\t#{pane_index}\t#{pane_id}"

// ClientFormat is the list-clients -F format ParseClients reads.
const ClientFormat = "#{client_tty}\t#{client_pid}\t#{client_session}\t#{client_activity}"

// Pane is one line of list-panes.
type Pane struct {
	TTY     string
	Session string
	Window  int
	Pane    int
	PaneID  string
}

// ParsePanes reads list-panes -a -F PaneFormat.
func ParsePanes(out string) ([]Pane, error) {
	return parseRows(out, "list-panes", 5, func(f []string) (Pane, error) {
		w, err1 := strconv.Atoi(f[2])
		p, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil {
			return Pane{}, errors.New("window or pane not a number")
		}
		return Pane{TTY: f[0], Session: f[1], Window: w, Pane: p, PaneID: f[4]}, nil
	})
}

// ParseClients reads list-clients -F ClientFormat.
func ParseClients(out string) ([]Client, error) {
	return parseRows(out, "list-clients", 4, func(f []string) (Client, error) {
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			return Client{}, fmt.Errorf("pid: %w", err)
		}
		act, _ := strconv.ParseInt(f[3], 10, 64) // absent on old tmux: 0
		return Client{TTY: f[0], PID: pid, Session: f[2], Activity: act}, nil
	})
}

// parseRows reads the output of a tmux list command (what) given a -F
// format of n tab-separated fields: one row a line, blank lines skipped,
// each made a T by row. A line of another width, or one row refuses, fails
// the whole list: a format tmux did not fill as asked is not guessed at.
func parseRows[T any](out, what string, n int, row func(f []string) (T, error)) ([]T, error) {
	var rows []T
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != n {
			return nil, fmt.Errorf("termloc: %s line %q: want %d fields", what, line, n)
		}
		r, err := row(f)
		if err != nil {
			return nil, fmt.Errorf("termloc: %s line %q: %w", what, line, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// PaneOf is the pane whose tty is tty.
func PaneOf(panes []Pane, tty string) (Pane, bool) {
	for _, p := range panes {
		if p.TTY == tty {
			return p, true
		}
	}
	return Pane{}, false
}

// HolderKind classifies the first process above the agent that is not on
// the agent's terminal: it holds the terminal's other end.
func HolderKind(comm string) Kind {
	c := strings.ToLower(comm)
	switch {
	case strings.HasPrefix(c, "tmux"):
		return KindTmux
	case c == "screen":
		return KindScreen
	case strings.HasPrefix(c, "sshd"), c == "mosh-server", c == "dropbear":
		return KindSSH
	case c == "systemd", c == "init", c == "login", c == "agetty", c == "getty":
		return KindTTY // a console, or nothing recognisable above
	}
	return KindEmulator
}

// Holder walks chain — the agent's ancestors, nearest first, each with
// its stat — to the first process not on the agent's terminal, and says
// what it is. An empty chain, or one that stays on the tty to the end, is
// KindTTY with no holder.
func Holder(tty int, chain []Stat) (Kind, *Process) {
	for _, st := range chain {
		if st.TTYNr == tty {
			continue
		}
		return HolderKind(st.Comm), &Process{PID: st.PID, Name: st.Comm}
	}
	return KindTTY, nil
}

// Emulator is the terminal emulator a tmux client runs in: the first
// process above it that is not on its terminal and is neither an ssh
// server nor another multiplexer. chain is the client's ancestors,
// nearest first.
func Emulator(tty int, chain []Stat) *Process {
	if k, p := Holder(tty, chain); k == KindEmulator {
		return p
	}
	return nil
}

// SocketFromArgs is the socket a tmux command line names: -S PATH, or -L
// NAME under TMUX_TMPDIR (tmpdir, default /tmp)/tmux-UID; "" when neither.
func SocketFromArgs(args []string, tmpdir string, uid int) string {
	if tmpdir == "" {
		tmpdir = "/tmp"
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-S" && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "-S") && len(a) > 2:
			return a[2:]
		case a == "-L" && i+1 < len(args):
			return fmt.Sprintf("%s/tmux-%d/%s", strings.TrimRight(tmpdir, "/"), uid, args[i+1])
		case strings.HasPrefix(a, "-L") && len(a) > 2:
			return fmt.Sprintf("%s/tmux-%d/%s", strings.TrimRight(tmpdir, "/"), uid, a[2:])
		}
	}
	return ""
}

// WindowOfPID is the id of the first window in `wmctrl -l -p` output (id,
// desktop, pid, host, title) whose pid is pid.
func WindowOfPID(out string, pid int) (string, bool) {
	want := strconv.Itoa(pid)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[2] == want {
			return f[0], true
		}
	}
	return "", false
}
