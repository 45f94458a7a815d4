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

// ancestry is the sender's pid and its parents, read as soon as the
// connection is accepted, while the sender surely lives (it waits for the
// app to close, within its deadline); known is false where the platform
// does not name the peer.
func (h hookSender) ancestry(c net.Conn) (chain []int, known bool) {
	pid, known := peerPID(c)
	if !known {
		return nil, false
	}
	return h.ancestryOf(pid), true
}

// ancestryOf is pid and its parents, up to init or maxHookAncestry.
func (h hookSender) ancestryOf(pid int) (chain []int) {
	for range maxHookAncestry {
		if pid <= 1 {
			break
		}
		chain = append(chain, pid)
		pid = h.parent(pid)
	}
	return chain
}

// runsUnder reports whether a process of chain is the Claude Code process
// registered for session sid (its session file, named by its pid).
func (h hookSender) runsUnder(chain []int, sid string) bool {
	for _, pid := range chain {
		if f, err := ReadSessionFile(filepath.Join(h.sessionsDir, strconv.Itoa(pid)+".json")); err == nil && f.SessionID == sid {
			return true
		}
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
