package termloc

import (
	"errors"
	"strings"
	"testing"
)

// A macOS `ps -A -o pid=,ppid=,tty=,comm=` listing (shape as ps prints
// it): Terminal.app, its login and shell on ttys003, the agent under the
// shell, and a daemon with no terminal.
const psListing = `    1     0 ??       /sbin/launchd
  501     1 ??       /System/Applications/Utilities/Terminal.app/Contents/MacOS/Terminal
  602   501 ttys003  login
  603   602 ttys003  -zsh
  704   603 ttys003  node
  705     1 ??       /Applications/My Tools.app/Contents/MacOS/helper
  706   501 ttys004  login
bad line
`

func TestParsePSLocatesTheTerminalApp(t *testing.T) {
	pt := ParsePS(psListing)
	agent := pt.Stats[704]
	if pt.TTYs[agent.TTYNr] != "/dev/ttys003" || agent.PPID != 603 || agent.Comm != "node" {
		t.Fatalf("agent %+v on %q", agent, pt.TTYs[agent.TTYNr])
	}
	if pt.Stats[706].TTYNr == agent.TTYNr || pt.Stats[602].TTYNr != agent.TTYNr {
		t.Error("terminals numbered wrong: another tty shares the agent's, or its own login does not")
	}
	if got := pt.Stats[705].Comm; got != "helper" || pt.Stats[705].TTYNr != 0 {
		t.Errorf("a path with spaces: %+v", pt.Stats[705])
	}
	var chain []Stat
	for p := agent.PPID; p > 1; p = pt.Stats[p].PPID {
		chain = append(chain, pt.Stats[p])
	}
	kind, holder := Holder(agent.TTYNr, chain)
	if kind != KindEmulator || holder.Name != "Terminal" || holder.PID != 501 {
		t.Fatalf("holder %s %+v, want Terminal (501)", kind, holder)
	}
	steps, _, err := Plan(&Location{Kind: kind, TTY: "/dev/ttys003", Holder: holder})
	if err != nil || len(steps) != 1 || steps[0].Kind != StepRaiseWindow || steps[0].TTY != "/dev/ttys003" {
		t.Fatalf("plan %+v, %v: want the raise of Terminal's tab on ttys003", steps, err)
	}
}

func TestAppleScript(t *testing.T) {
	for _, tc := range []struct {
		app, tty string
		want     []string
		err      string
	}{
		{"Terminal", "/dev/ttys003", []string{`tell application "Terminal"`, `tty of t is "/dev/ttys003"`, "set selected of t to true"}, ""},
		{"iTerm2", "/dev/ttys012", []string{`tell application "iTerm2"`, `tty of s is "/dev/ttys012"`, "select s"}, ""},
		{"Alacritty", "/dev/ttys003", nil, "Alacritty has no scripting interface"},
		{"Terminal", `/dev/ttys1" & do shell script "x`, nil, "not a macOS terminal device"},
	} {
		script, err := AppleScript(tc.app, tc.tty)
		if tc.err != "" {
			if err == nil || !errors.Is(err, ErrCannotFocus) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %q: err %v, want %q", tc.app, tc.tty, err, tc.err)
			}
			continue
		}
		for _, w := range tc.want {
			if err != nil || !strings.Contains(script, w) {
				t.Errorf("%s: script lacks %q (%v):\n%s", tc.app, w, err, script)
			}
		}
	}
}
