package hooks

import (
	"fmt"
	"strconv"
	"strings"
)

// MinVersion is the oldest Claude Code install accepts: from it on, an entry
// the CLI cannot use costs one dead hook, not the whole settings file
// (external-sessions.md, "Gate on version").
const MinVersion = "2.1.122"

// CheckVersion judges `claude --version` output ("2.1.328 (Claude Code)").
// known is false when it cannot be read (then install goes ahead: the
// gate is a guard against old CLIs, not a requirement to have one).
func CheckVersion(out string) (ok, known bool, err error) {
	v, good := parseVersion(out)
	if !good {
		return true, false, nil
	}
	min, _ := parseVersion(MinVersion)
	for i := range v {
		if v[i] != min[i] {
			if v[i] < min[i] {
				return false, true, fmt.Errorf("the installed Claude Code (%d.%d.%d) is older than %s, where a hook entry it cannot read would break its settings: update it first (npm install -g @anthropic-ai/claude-code)",
					v[0], v[1], v[2], MinVersion)
			}
			return true, true, nil
		}
	}
	return true, true, nil
}

func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	f := strings.Fields(s)
	if len(f) == 0 {
		return v, false
	}
	parts := strings.Split(strings.TrimPrefix(f[0], "v"), ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, true
}
