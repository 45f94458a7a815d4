package termloc

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Where a hand-over opens: tmux first, then the setting, then what the
// desktop names, else a clear error.
func TestWhere(t *testing.T) {
	on := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	cases := []struct {
		name string
		f    OpenFacts
		want Opening
		err  string
	}{
		{"tmux runs", OpenFacts{TmuxRunning: true, Setting: "kitty", Display: true, OnPath: on("kitty")}, Opening{Kind: OpenTmux}, ""},
		{"tmux without a display", OpenFacts{TmuxRunning: true}, Opening{Kind: OpenTmux}, ""},
		{"the setting", OpenFacts{Setting: "kitty --single-instance", TerminalEnv: "foot", Display: true, OnPath: on("kitty", "foot")},
			Opening{Kind: OpenEmulator, Emulator: []string{"kitty", "--single-instance"}}, ""},
		{"the setting missing", OpenFacts{Setting: "kitty", Display: true, OnPath: on("xterm")}, Opening{}, "desktop.terminal names (kitty) is not on PATH"},
		{"$TERMINAL", OpenFacts{TerminalEnv: "foot", Display: true, OnPath: on("foot", "xterm", "x-terminal-emulator")},
			Opening{Kind: OpenEmulator, Emulator: []string{"foot"}}, ""},
		{"$TERMINAL with options", OpenFacts{TerminalEnv: "alacritty --class x", Display: true, OnPath: on("alacritty")},
			Opening{Kind: OpenEmulator, Emulator: []string{"alacritty", "--class", "x"}}, ""},
		{"$TERMINAL not on PATH", OpenFacts{TerminalEnv: "foot", Display: true, OnPath: on("x-terminal-emulator", "xterm")},
			Opening{Kind: OpenEmulator, Emulator: []string{"x-terminal-emulator"}}, ""},
		{"a common one", OpenFacts{Display: true, OnPath: on("xterm", "konsole")}, Opening{Kind: OpenEmulator, Emulator: []string{"konsole"}}, ""},
		{"nothing found", OpenFacts{Display: true}, Opening{}, "no terminal emulator was found"},
		{"no display", OpenFacts{OnPath: on("xterm")}, Opening{}, "no display"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Where(c.f)
			if c.err != "" {
				if !errors.Is(err, ErrCannotOpen) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || got.Kind != c.want.Kind || !slices.Equal(got.Emulator, c.want.Emulator) {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func TestEmulatorArgv(t *testing.T) {
	run := []string{"claude", "--resume", "id"}
	cases := []struct {
		emulator []string
		want     string
	}{
		{[]string{"xterm"}, "xterm -e claude --resume id"},
		{[]string{"/usr/bin/x-terminal-emulator"}, "/usr/bin/x-terminal-emulator -e claude --resume id"},
		{[]string{"gnome-terminal"}, "gnome-terminal -- claude --resume id"},
		{[]string{"wezterm"}, "wezterm start -- claude --resume id"},
		{[]string{"xfce4-terminal"}, "xfce4-terminal -x claude --resume id"},
		{[]string{"kitty", "--single-instance"}, "kitty --single-instance claude --resume id"},
		{[]string{"foot"}, "foot claude --resume id"},
		{[]string{"konsole"}, "konsole -e claude --resume id"},
	}
	for _, c := range cases {
		if got := strings.Join(EmulatorArgv(c.emulator, run), " "); got != c.want {
			t.Errorf("%v: %q, want %q", c.emulator, got, c.want)
		}
	}
}
