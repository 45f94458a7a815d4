package claudeterm

import (
	"net"
	"path/filepath"
	"strconv"

	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// A hook event is evidence about one session, and any process of the user
// can write to the hook socket, a tool of another session included. So an
// event counts only when its sender descends from the Claude Code process
// whose session file names the event's session: the hook program the CLI
// runs for it. Where the platform does not name a socket's peer, the event
// is taken (the socket is owner-only).

// maxHookAncestry bounds the walk up the sender's parents (the hook runs a
// few levels under the CLI; a pid cycle must not loop).
const maxHookAncestry = 16

// hookSender decides whether the event's session is one the sender runs
// under: it looks for a session file, named by an ancestor's pid, whose
// session id is the event's.
type hookSender struct {
	sessionsDir string
	parent      func(pid int) int
}

func (h hookSender) allowed(c net.Conn, ev HookEvent) bool {
	pid, known := peerPID(c)
	return !known || h.runsUnder(pid, ev.SessionID)
}

// runsUnder reports whether pid or one of its ancestors is the Claude Code
// process registered for session sid.
func (h hookSender) runsUnder(pid int, sid string) bool {
	for range maxHookAncestry {
		if pid <= 1 {
			return false
		}
		if f, err := ReadSessionFile(filepath.Join(h.sessionsDir, strconv.Itoa(pid)+".json")); err == nil && f.SessionID == sid {
			return true
		}
		pid = h.parent(pid)
	}
	return false
}

// parentPID reads a process's parent from the process table (0 when gone).
func parentPID(pid int) int {
	p, st := procscan.Probe(pid)
	if st != procscan.Running {
		return 0
	}
	return p.PPID
}
