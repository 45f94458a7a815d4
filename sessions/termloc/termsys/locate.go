//go:build linux || darwin

package termsys

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// maxDepth bounds the walk up the process tree (a loop in a racing
// process table must not spin).
const maxDepth = 64

// procTable is what locating reads about processes: /proc on Linux, one
// `ps` listing on macOS.
type procTable interface {
	// stat is a process's parent, terminal and name; a process that is
	// gone is fs.ErrNotExist.
	stat(pid int) (termloc.Stat, error)
	// ttyName names a stat's terminal ("/dev/pts/3"); false for none.
	ttyName(nr int) (string, bool)
	// environ is the process's environment as it started (nil when it
	// cannot be read).
	environ(pid int) []string
	// args is its command line (nil when it cannot be read).
	args(pid int) []string
}

// ancestors are pid's parents, nearest first, up to (not including) pid 1.
func ancestors(pt procTable, pid int) []termloc.Stat {
	var chain []termloc.Stat
	st, err := pt.stat(pid)
	for i := 0; err == nil && st.PPID > 1 && i < maxDepth; i++ {
		if st, err = pt.stat(st.PPID); err == nil {
			chain = append(chain, st)
		}
	}
	return chain
}

// locate says where the terminal of process pid lives. A process that is
// gone is an error; one with no terminal is KindNone.
func locate(ctx context.Context, pt procTable, pid int) (*termloc.Location, error) {
	st, err := pt.stat(pid)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("locating the terminal of pid %d: %w", pid, ErrGone)
	}
	if err != nil {
		return nil, fmt.Errorf("locating the terminal of pid %d: %w", pid, err)
	}
	tty, ok := pt.ttyName(st.TTYNr)
	if !ok {
		return &termloc.Location{Kind: termloc.KindNone}, nil
	}
	chain := ancestors(pt, pid)
	kind, holder := termloc.Holder(st.TTYNr, chain)
	loc := &termloc.Location{Kind: kind, TTY: tty, Holder: holder}
	if kind == termloc.KindEmulator {
		loc.Tab = termloc.TabFromEnv(pt.environ(pid))
	}
	if kind != termloc.KindTmux {
		return loc, nil
	}
	t, err := locateTmux(ctx, pt, pid, chain, tty)
	if err != nil {
		// Held by tmux but not found in it: say what is known.
		loc.Kind = termloc.KindTTY
		return loc, err
	}
	loc.Tmux, loc.Holder = t, nil
	return loc, nil
}

func locateTmux(ctx context.Context, pt procTable, pid int, chain []termloc.Stat, tty string) (*termloc.Tmux, error) {
	sock := tmuxSocket(pt, pid, chain)
	out, err := run(ctx, "tmux", "-S", sock, "list-panes", "-a", "-F", termloc.PaneFormat)
	if err != nil {
		return nil, fmt.Errorf("asking tmux for the pane of %s: %w", tty, err)
	}
	panes, err := termloc.ParsePanes(out)
	if err != nil {
		return nil, err
	}
	p, ok := termloc.PaneOf(panes, tty)
	if !ok {
		return nil, fmt.Errorf("no pane of the tmux server at %s has %s", sock, tty)
	}
	t := &termloc.Tmux{Socket: sock, Session: p.Session, Window: p.Window, Pane: p.Pane, PaneID: p.PaneID}
	out, err = run(ctx, "tmux", "-S", sock, "list-clients", "-F", termloc.ClientFormat)
	if err != nil {
		return t, nil // the pane is known; no client list is no client
	}
	clients, err := termloc.ParseClients(out)
	if err != nil {
		return t, nil
	}
	for i, c := range clients {
		if cst, err := pt.stat(c.PID); err == nil {
			clients[i].Emulator = termloc.Emulator(cst.TTYNr, ancestors(pt, c.PID))
			clients[i].Tab = termloc.TabFromEnv(pt.environ(c.PID))
		}
	}
	t.Clients = clients
	return t, nil
}

// tmuxSocket is the socket of the tmux server holding pid's terminal: the
// TMUX variable tmux gives every process of a pane (the agent's, else an
// ancestor's), else the server's own -S or -L argument, else the default
// socket.
func tmuxSocket(pt procTable, pid int, chain []termloc.Stat) string {
	for _, p := range append([]int{pid}, pids(chain)...) {
		for _, kv := range pt.environ(p) {
			if v, ok := strings.CutPrefix(kv, "TMUX="); ok {
				if sock, _, _ := strings.Cut(v, ","); sock != "" {
					return sock
				}
			}
		}
		if strings.HasPrefix(commOf(chain, p), "tmux") {
			if sock := termloc.SocketFromArgs(pt.args(p), os.Getenv("TMUX_TMPDIR"), os.Getuid()); sock != "" {
				return sock
			}
			break
		}
	}
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	return filepath.Join(dir, "tmux-"+strconv.Itoa(os.Getuid()), "default")
}

func pids(chain []termloc.Stat) []int {
	out := make([]int, len(chain))
	for i, s := range chain {
		out[i] = s.PID
	}
	return out
}

func commOf(chain []termloc.Stat, pid int) string {
	for _, s := range chain {
		if s.PID == pid {
			return s.Comm
		}
	}
	return ""
}
