package claudeterm

import (
	"net"
	"path/filepath"
	"strconv"
	"time"

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
	// settle is how long an event whose session no session file of the
	// chain names yet waits for one: the CLI runs its SessionStart hook
	// about when it writes its session file, and the hook can be first.
	settle time.Duration
}

// hookSettle is the listener's settle: long enough for a loaded machine to
// write the session file, short beside the hook's own deadline.
const hookSettle = 1500 * time.Millisecond

// settlePoll is how often the session files are read again meanwhile.
const settlePoll = 50 * time.Millisecond

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

// confirms is runsUnder, asked again until settle has passed: the sender's
// chain was read when it connected, only the session file may be late.
func (h hookSender) confirms(chain []int, sid string) bool {
	for end := time.Now().Add(h.settle); ; time.Sleep(settlePoll) {
		if h.runsUnder(chain, sid) {
			return true
		}
		if len(chain) == 0 || !time.Now().Before(end) {
			return false
		}
	}
}

// parentPID reads a process's parent from the process table (0 when gone).
func parentPID(pid int) int {
	p, st := procscan.Probe(pid)
	if st != procscan.Running {
		return 0
	}
	return p.PPID
}
