package termloc

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Stat
		bad  bool
	}{
		{line: "4242 (claude) S 4200 4242 4200 34818 4242 4194560 0 0", want: Stat{PID: 4242, Comm: "claude", PPID: 4200, TTYNr: 34818}},
		// A name with spaces and a ')' of its own.
		{line: "17 (tmux: server) S 1 17 17 0 -1 0", want: Stat{PID: 17, Comm: "tmux: server", PPID: 1}},
		{line: "9 (a) b) R 3 9 9 1025 9", want: Stat{PID: 9, Comm: "a) b", PPID: 3, TTYNr: 1025}},
		{line: "9 no name here", bad: true},
		{line: "9 (x) S 1", bad: true},
		{line: "x (y) S 1 2 3 4", bad: true},
	} {
		got, err := ParseStat(tc.line)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseStat(%q) = %+v, %v; want %+v (error: %t)", tc.line, got, err, tc.want, tc.bad)
		}
	}
}

func TestTTYName(t *testing.T) {
	for _, tc := range []struct {
		nr   int
		want string
	}{
		{0, ""},
		{136<<8 | 2, "/dev/pts/2"},   // 34818
		{137<<8 | 5, "/dev/pts/261"}, // second pts major
		{136<<8 | (300&0xff | (300&^0xff)<<12), "/dev/pts/300"},
		{4<<8 | 1, "/dev/tty1"},
		{4<<8 | 64, ""}, // a serial port, not a console
		{5 << 8, ""},    // /dev/tty itself
	} {
		got, ok := TTYName(tc.nr)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("TTYName(%d) = %q, %t; want %q", tc.nr, got, ok, tc.want)
		}
	}
}

func TestHolder(t *testing.T) {
	const tty = 34818
	shell := Stat{PID: 10, Comm: "bash", TTYNr: tty}
	for _, tc := range []struct {
		name  string
		chain []Stat
		kind  Kind
		pid   int
	}{
		{"xterm", []Stat{shell, {PID: 9, Comm: "xterm"}}, KindEmulator, 9},
		{"tmux pane", []Stat{shell, {PID: 8, Comm: "tmux: server"}}, KindTmux, 8},
		{"ssh", []Stat{shell, {PID: 7, Comm: "sshd-session"}}, KindSSH, 7},
		{"screen", []Stat{shell, {PID: 6, Comm: "SCREEN"}}, KindScreen, 6},
		{"console", []Stat{shell, {PID: 5, Comm: "login"}}, KindTTY, 5},
		// An emulator started from another terminal has that one as its own.
		{"nested emulator", []Stat{shell, {PID: 4, Comm: "kitty", TTYNr: 34819}}, KindEmulator, 4},
		{"all on the tty", []Stat{shell}, KindTTY, 0},
		{"no ancestors", nil, KindTTY, 0},
	} {
		kind, p := Holder(tty, tc.chain)
		pid := 0
		if p != nil {
			pid = p.PID
		}
		if kind != tc.kind || pid != tc.pid {
			t.Errorf("%s: Holder = %s, pid %d; want %s, pid %d", tc.name, kind, pid, tc.kind, tc.pid)
		}
	}
	if e := Emulator(tty, []Stat{shell, {PID: 7, Comm: "sshd"}}); e != nil {
		t.Errorf("a tmux client over ssh has no emulator here, got %+v", e)
	}
}

func TestParseTmux(t *testing.T) {
	panes, err := ParsePanes("/dev/pts/1\tmy work\t0\t0\t%0\n/dev/pts/4\tmy work\t2\t1\t%5\n")
	if err != nil {
		t.Fatal(err)
	}
	p, ok := PaneOf(panes, "/dev/pts/4")
	if !ok || p != (Pane{TTY: "/dev/pts/4", Session: "my work", Window: 2, Pane: 1, PaneID: "%5"}) {
		t.Fatalf("PaneOf = %+v, %t", p, ok)
	}
	if _, ok := PaneOf(panes, "/dev/pts/9"); ok {
		t.Error("found a pane for a tty no pane has")
	}
	clients, err := ParseClients("/dev/pts/7\t99\twork\t1700000000\n/dev/pts/8\t98\tother\t\n")
	if err != nil || len(clients) != 2 || clients[0] != (Client{TTY: "/dev/pts/7", PID: 99, Session: "work", Activity: 1700000000}) || clients[1].Activity != 0 {
		t.Fatalf("ParseClients = %+v, %v", clients, err)
	}
	panesErr := func(out string) error { _, err := ParsePanes(out); return err }
	clientsErr := func(out string) error { _, err := ParseClients(out); return err }
	// A malformed line fails the whole list, and the error names the
	// command, the line and what is wrong with it.
	for _, tc := range []struct {
		name  string
		parse func(string) error
		out   string
		says  string
	}{
		{"a pane line short of a field", panesErr, "/dev/pts/1\tw\t0\t0", `list-panes line "/dev/pts/1\tw\t0\t0": want 5 fields`},
		{"a window that is not a number", panesErr, "/dev/pts/1\tw\tx\t0\t%1", `list-panes line "/dev/pts/1\tw\tx\t0\t%1": window or pane not a number`},
		{"a client line short of a field", clientsErr, "/dev/pts/7\t99\tw", `list-clients line "/dev/pts/7\t99\tw": want 4 fields`},
		{"a pid that is not a number", clientsErr, "/dev/pts/8\t98\tw\t1\n/dev/pts/7\tx\tw\t1", `list-clients line "/dev/pts/7\tx\tw\t1": pid:`},
	} {
		if err := tc.parse(tc.out); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: err %v, want one saying %q", tc.name, err, tc.says)
		}
	}
}

func TestSocketFromArgs(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		tmpdir string
		want   string
	}{
		{[]string{"tmux", "-S", "/run/x.sock", "new"}, "", "/run/x.sock"},
		{[]string{"tmux", "-S/run/y"}, "", "/run/y"},
		{[]string{"tmux", "-L", "work"}, "", "/tmp/tmux-1000/work"},
		{[]string{"tmux", "-Lwork"}, "/var/t/", "/var/t/tmux-1000/work"},
		{[]string{"tmux", "new", "-d"}, "", ""},
	} {
		if got := SocketFromArgs(tc.args, tc.tmpdir, 1000); got != tc.want {
			t.Errorf("SocketFromArgs(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestWindowOfPID(t *testing.T) {
	out := "0x00400007  0 311    host xterm\n0x00600007  0 3112   host xterm two\n0x00800001 -1 0      host panel\n"
	for _, tc := range []struct {
		pid  int
		want string
	}{{311, "0x00400007"}, {3112, "0x00600007"}, {31, ""}} {
		if got, ok := WindowOfPID(out, tc.pid); got != tc.want || ok != (tc.want != "") {
			t.Errorf("WindowOfPID(%d) = %q, %t; want %q", tc.pid, got, ok, tc.want)
		}
	}
}

func tmuxLoc(clients ...Client) *Location {
	return &Location{Kind: KindTmux, TTY: "/dev/pts/4", Tmux: &Tmux{Socket: "/s", Session: "work", Window: 2, Pane: 1, PaneID: "%5", Clients: clients}}
}

func TestString(t *testing.T) {
	xterm := &Process{PID: 9, Name: "xterm"}
	for _, tc := range []struct {
		loc  *Location
		want string
	}{
		{nil, "no terminal"},
		{&Location{Kind: KindNone}, "no terminal"},
		{tmuxLoc(), "tmux work:2.1, not attached"},
		{tmuxLoc(Client{TTY: "/dev/pts/7", Session: "other", Emulator: xterm}), "tmux work:2.1, not attached"},
		{tmuxLoc(Client{TTY: "/dev/pts/7", Session: "work", Emulator: xterm}), "tmux work:2.1, attached in xterm"},
		{tmuxLoc(Client{Session: "work", Emulator: xterm}, Client{Session: "work", Emulator: xterm}, Client{Session: "work"}), "tmux work:2.1, attached in xterm, a terminal"},
		{&Location{Kind: KindEmulator, TTY: "/dev/pts/3", Holder: xterm}, "xterm (pid 9) on /dev/pts/3"},
		{&Location{Kind: KindEmulator, TTY: "/dev/pts/3", Holder: kitty, Tab: kittyTab}, "kitty (pid 11) on /dev/pts/3, kitty window 2"},
		{&Location{Kind: KindEmulator, TTY: "/dev/pts/3", Holder: xterm, Tab: kittyTab}, "xterm (pid 9) on /dev/pts/3"},
		{&Location{Kind: KindSSH, TTY: "/dev/pts/3", Holder: &Process{PID: 7, Name: "sshd"}}, "/dev/pts/3 over ssh (a remote terminal)"},
		{&Location{Kind: KindTTY, TTY: "/dev/tty1"}, "/dev/tty1 (terminal not recognised)"},
	} {
		if got := tc.loc.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestEqualAndJSON(t *testing.T) {
	a := tmuxLoc(Client{TTY: "/dev/pts/7", PID: 3, Session: "work"})
	b := tmuxLoc(Client{TTY: "/dev/pts/7", PID: 3, Session: "work"})
	if !a.Equal(b) {
		t.Error("equal locations differ")
	}
	b.Tmux.Clients[0].Session = "other"
	if a.Equal(b) {
		t.Error("a client switched away is no change")
	}
	if (*Location)(nil).Equal(a) || !(*Location)(nil).Equal(nil) {
		t.Error("nil compares wrong")
	}
	if got := a.Address(); got != "tmux pane work:2.1 on the server /s" {
		t.Errorf("Address() = %q", got)
	}
	raw, err := json.Marshal(a)
	if err != nil || !strings.Contains(string(raw), `"kind":"tmux"`) {
		t.Fatalf("JSON %s, %v", raw, err)
	}
	var back Location
	if err := json.Unmarshal(raw, &back); err != nil || !back.Equal(a) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"kind":"bogus"}`), &back); err == nil {
		t.Error("an unknown kind was read")
	}
}

// kitty and kittyTab are a kitty process and one of its windows whose
// remote control listens on a socket.
var (
	kitty    = &Process{PID: 11, Name: "kitty"}
	kittyTab = &Tab{Emulator: EmulatorKitty, Socket: "unix:/tmp/kitty-11", ID: "2"}
)

func TestPlan(t *testing.T) {
	xterm := &Process{PID: 9, Name: "xterm"}
	sel := []StepKind{StepSelectWindow, StepSelectPane}
	for _, tc := range []struct {
		name    string
		loc     *Location
		steps   []StepKind
		client  string
		partial string
		err     string
	}{
		{name: "gone", loc: nil, err: "no terminal"},
		{name: "none", loc: &Location{Kind: KindNone}, err: "no terminal"},
		{name: "emulator", loc: &Location{Kind: KindEmulator, TTY: "/dev/pts/3", Holder: xterm}, steps: []StepKind{StepRaiseWindow}},
		{name: "ssh", loc: &Location{Kind: KindSSH, TTY: "/dev/pts/3"}, err: "remote login"},
		{name: "screen", loc: &Location{Kind: KindScreen, TTY: "/dev/pts/3"}, err: "screen"},
		{name: "unknown holder", loc: &Location{Kind: KindTTY, TTY: "/dev/tty1"}, err: "/dev/tty1"},
		{name: "tmux, no client", loc: tmuxLoc(), steps: sel, partial: "attach with: tmux -S /s attach -t work:2.1"},
		{name: "tmux, client on the session", loc: tmuxLoc(Client{TTY: "/dev/pts/7", Session: "work", Emulator: xterm}),
			steps: append(sel, StepRaiseWindow)},
		{name: "tmux, client elsewhere is switched", loc: tmuxLoc(Client{TTY: "/dev/pts/7", Session: "other", Emulator: xterm}),
			steps: append(sel, StepSwitchClient, StepRaiseWindow), client: "/dev/pts/7"},
		{name: "tmux, the most recent client elsewhere", loc: tmuxLoc(
			Client{TTY: "/dev/pts/7", Session: "other", Activity: 5, Emulator: xterm},
			Client{TTY: "/dev/pts/8", Session: "third", Activity: 9, Emulator: xterm}),
			steps: append(sel, StepSwitchClient, StepRaiseWindow), client: "/dev/pts/8"},
		{name: "tmux, a client on the session beats a newer one elsewhere", loc: tmuxLoc(
			Client{TTY: "/dev/pts/8", Session: "other", Activity: 9, Emulator: xterm},
			Client{TTY: "/dev/pts/7", Session: "work", Activity: 1, Emulator: xterm}),
			steps: append(sel, StepRaiseWindow)},
		{name: "tmux over ssh", loc: tmuxLoc(Client{TTY: "/dev/pts/7", Session: "work"}), steps: sel, partial: "no terminal window on this machine"},
		{name: "kitty with remote control: its tab, then its window", loc: &Location{Kind: KindEmulator, TTY: "/dev/pts/3", Holder: kitty, Tab: kittyTab},
			steps: []StepKind{StepSelectTab, StepRaiseWindow}},
		{name: "a kitty tab inherited into an xterm is not believed", loc: &Location{Kind: KindEmulator, TTY: "/dev/pts/3", Holder: xterm, Tab: kittyTab},
			steps: []StepKind{StepRaiseWindow}},
		{name: "tmux client in a kitty tab", loc: tmuxLoc(Client{TTY: "/dev/pts/7", Session: "work", Emulator: kitty, Tab: kittyTab}),
			steps: append(sel, StepSelectTab, StepRaiseWindow)},
		{name: "wezterm pane", loc: &Location{Kind: KindEmulator, TTY: "/dev/pts/3", Holder: &Process{PID: 5, Name: "wezterm-gui"},
			Tab: &Tab{Emulator: EmulatorWezTerm, Socket: "/run/user/1/wezterm/sock", ID: "7"}},
			steps: []StepKind{StepSelectTab, StepRaiseWindow}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps, partial, err := Plan(tc.loc)
			var kinds []StepKind
			client := ""
			for _, s := range steps {
				kinds = append(kinds, s.Kind)
				if s.Kind == StepSwitchClient {
					client = s.Client
				}
			}
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrCannotFocus) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.partial == "" && partial != nil || tc.partial != "" && (partial == nil || !strings.Contains(partial.Error(), tc.partial)) {
				t.Errorf("partial %v, want %q", partial, tc.partial)
			}
			if !slices.Equal(kinds, tc.steps) || client != tc.client {
				t.Errorf("steps %v (client %q), want %v (client %q)", kinds, client, tc.steps, tc.client)
			}
		})
	}
}

func TestTabFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want *Tab
	}{
		{"none", []string{"HOME=/h", "TERM=xterm"}, nil},
		{"kitty listening", []string{"KITTY_WINDOW_ID=3", "KITTY_LISTEN_ON=unix:/tmp/k.sock"}, &Tab{EmulatorKitty, "unix:/tmp/k.sock", "3"}},
		{"kitty abstract socket", []string{"KITTY_LISTEN_ON=unix:@kitty", "KITTY_WINDOW_ID=12"}, &Tab{EmulatorKitty, "unix:@kitty", "12"}},
		{"kitty without a socket answers only inside", []string{"KITTY_WINDOW_ID=3"}, nil},
		{"kitty over tcp is not used", []string{"KITTY_WINDOW_ID=3", "KITTY_LISTEN_ON=tcp:localhost:5000"}, nil},
		{"kitty id not a number", []string{"KITTY_WINDOW_ID=3;rm", "KITTY_LISTEN_ON=unix:/k"}, nil},
		{"wezterm", []string{"WEZTERM_PANE=0", "WEZTERM_UNIX_SOCKET=/run/user/1000/wezterm/gui-sock-42"}, &Tab{EmulatorWezTerm, "/run/user/1000/wezterm/gui-sock-42", "0"}},
		{"wezterm relative socket", []string{"WEZTERM_PANE=1", "WEZTERM_UNIX_SOCKET=sock"}, nil},
		{"a line without =", []string{"KITTY_WINDOW_ID"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := TabFromEnv(tc.env)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("TabFromEnv = %+v, want %+v", got, tc.want)
			}
		})
	}
	if !(&Tab{Emulator: EmulatorWezTerm}).Fits("wezterm-gui") || (&Tab{Emulator: EmulatorKitty}).Fits("xterm") || (*Tab)(nil).Fits("kitty") {
		t.Error("Fits matches the wrong emulators")
	}
}

func TestKindStrings(t *testing.T) {
	for k := KindNone; k <= KindEmulator; k++ {
		if strings.HasPrefix(k.String(), "Kind(") {
			t.Errorf("%d has no word", k)
		}
	}
	for k := StepSelectWindow; k <= StepRaiseWindow; k++ {
		if strings.HasPrefix(k.String(), "StepKind(") {
			t.Errorf("step %d has no word", k)
		}
	}
}
