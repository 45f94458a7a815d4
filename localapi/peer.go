package localapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/session-supervisor/session-supervisor/enum"
	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// Peer is the process at the other end of a local API connection, as the
// kernel tells it (SO_PEERCRED on Linux, LOCAL_PEERCRED and LOCAL_PEERPID
// on macOS). Known is false where the platform does not say (Windows: the
// data directory's owner-only ACL is what keeps others out there).
type Peer struct {
	PID, UID int
	Known    bool
}

// Access is what a peer may do with the local API.
type Access int

const (
	// Full: the user (a shell, the desktop, the service): everything.
	Full Access = iota
	// ReadOnly: a process that descends from an agent the app supervises
	// (a tool the agent ran): it may read (ls, show, timeline, watch,
	// health) but change nothing, or a session could approve its own
	// permission prompt or relaunch itself with its prompts bypassed.
	ReadOnly
	// Refused: another user.
	Refused
)

var accessNames = [...]string{Full: "full", ReadOnly: "read-only", Refused: "refused"}

func (a Access) String() string { return enum.Name(a, "access", accessNames[:]) }

// maxAncestry bounds the walk up a peer's parents (a process tree is never
// this deep; a cycle from a reused pid must not loop).
const maxAncestry = 64

// Parent answers a process's parent pid (0 when unknown or gone).
type Parent func(pid int) int

// procParent reads the parent from the process table.
func procParent(pid int) int {
	p, st := procscan.Probe(pid)
	if st != procscan.Running {
		return 0
	}
	return p.PPID
}

// Decide is the access rule, pure: another uid is refused; a process whose
// ancestry (itself included) holds a live agent process of a supervised
// session may only read, and why is said in words; everyone else is the
// user. A peer the platform did not identify is the user's (the socket is
// owner-only).
func Decide(p Peer, ownUID int, list []sessions.Session, parent Parent) (Access, string) {
	if !p.Known {
		return Full, ""
	}
	if p.UID != ownUID {
		return Refused, fmt.Sprintf("the local API serves only its own user (uid %d); this request came from uid %d", ownUID, p.UID)
	}
	agents := map[int]sessions.Session{}
	for _, s := range list {
		if s.PID > 0 && s.ProcessAlive {
			agents[s.PID] = s
		}
	}
	if len(agents) == 0 || p.PID <= 0 {
		return Full, ""
	}
	pid := p.PID
	for range maxAncestry {
		if s, ok := agents[pid]; ok {
			return ReadOnly, fmt.Sprintf("process %d runs under the agent of session %s (process %d): the tools of a supervised session may read the supervisor's state but not change it; run the command from your own shell",
				p.PID, s.DisplayName(), s.PID)
		}
		if pid <= 1 {
			break
		}
		if pid = parent(pid); pid <= 0 {
			break
		}
	}
	return Full, ""
}

type peerKey struct{}

// connContext records the connection's peer in every request's context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	p, err := peerOf(c)
	if err != nil {
		// Not identified: Decide treats it as unknown (owner-only socket).
		p = Peer{}
	}
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerFrom is the peer of the request's connection.
func PeerFrom(ctx context.Context) Peer {
	p, _ := ctx.Value(peerKey{}).(Peer)
	return p
}

// isRead: the requests that change nothing. Everything else (approve,
// deny, new, send, interrupt, nudge, resume, ack, settings, show) writes.
func isRead(r *http.Request) bool {
	return r.Method == http.MethodGet || r.Method == http.MethodHead
}

// guard answers 403 to requests the peer may not make, with the reason.
func (a *API) guard(next http.Handler) http.Handler {
	uid := os.Getuid()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		access, why := Decide(PeerFrom(r.Context()), uid, a.rt.Sessions(), a.parent)
		switch {
		case access == Refused, access == ReadOnly && !isRead(r):
			writeError(w, http.StatusForbidden, Errorf(ErrForbidden, "refused: %s", why))
			return
		case access == ReadOnly && strings.EqualFold(r.URL.Query().Get("client"), "desktop"):
			// A desktop attached over the stream silences this process's
			// notifications: a tool must not be able to do that.
			q := r.URL.Query()
			q.Del("client")
			r.URL.RawQuery = q.Encode()
		}
		next.ServeHTTP(w, r)
	})
}
