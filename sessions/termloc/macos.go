package termloc

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// PSFormat is the `ps -A -o` format ParsePS reads (macOS has no /proc):
// the command name last, as a path may hold spaces.
const PSFormat = "pid=,ppid=,tty=,comm="

// PSTable is one `ps -A -o PSFormat` listing: each process's stat, its
// terminal numbered as a stat's is (0 for none; the same number for the
// same terminal), and each number's device.
type PSTable struct {
	Stats map[int]Stat
	TTYs  map[int]string
}

// ParsePS reads `ps -A -o PSFormat`. A terminal is "ttys003" (its device
// /dev/ttys003), none is "??"; a command is a path, named by its last
// element ("Terminal", "iTerm2", "tmux"). Lines that do not parse are
// skipped: ps lists processes as they come and go.
func ParsePS(out string) PSTable {
	t := PSTable{Stats: map[int]Stat{}, TTYs: map[int]string{}}
	numbers := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		ppid, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			continue
		}
		nr := 0
		if tty := f[2]; tty != "??" && tty != "-" {
			if nr = numbers[tty]; nr == 0 {
				nr = len(numbers) + 1
				numbers[tty] = nr
				t.TTYs[nr] = "/dev/" + tty
			}
		}
		// The command is the rest of the line, spaces and all.
		rest := strings.TrimSpace(line)
		for range 3 {
			rest = strings.TrimSpace(rest[strings.IndexAny(rest, " \t"):])
		}
		t.Stats[pid] = Stat{PID: pid, PPID: ppid, TTYNr: nr, Comm: path.Base(rest)}
	}
	return t
}

// macTTY is a macOS pseudo-terminal's device, the only text an
// AppleScript is given.
var macTTY = regexp.MustCompile(`^/dev/ttys[0-9]{1,4}$`)

// AppleScript is the script that brings forward the tab (or iTerm2
// session) showing tty in the macOS terminal app named app (its
// process's name: "Terminal" or "iTerm2") and activates the app. An app
// without a scripting interface for its tabs is an error naming it.
func AppleScript(app, tty string) (string, error) {
	if !macTTY.MatchString(tty) {
		return "", fmt.Errorf("%w: %q is not a macOS terminal device", ErrCannotFocus, tty)
	}
	switch app {
	case "Terminal":
		return fmt.Sprintf(`tell application "Terminal"
	repeat with w in windows
		repeat with t in tabs of w
			if tty of t is "%s" then
				set selected of t to true
				set index of w to 1
				activate
				return "found"
			end if
		end repeat
	end repeat
end tell
return "no tab"`, tty), nil
	case "iTerm2":
		return fmt.Sprintf(`tell application "iTerm2"
	repeat with w in windows
		repeat with t in tabs of w
			repeat with s in sessions of t
				if tty of s is "%s" then
					select w
					select t
					select s
					activate
					return "found"
				end if
			end repeat
		end repeat
	end repeat
end tell
return "no tab"`, tty), nil
	}
	return "", fmt.Errorf("%w: %s has no scripting interface this app knows (Terminal and iTerm2 do); the session is on %s", ErrCannotFocus, app, tty)
}
