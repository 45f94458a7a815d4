// Command session-supervisor-hook is the Claude Code hook of Session
// Supervisor: the CLI runs it on each observational event with the event's
// JSON on stdin, and it forwards those bytes to the app's owner-only unix
// socket. It must never slow or break the agent: it prints nothing, always
// exits 0 (the app down, a missing socket, a full buffer), and gives up
// after a short deadline. Standard library only and cgo-free, so it starts
// in about a millisecond (the app binary links Fyne: ~6 ms per start).
package main

import (
	"io"
	"net"
	"os"
	"time"
)

// deadline bounds the whole forward. The app reads at once when it runs,
// so this is a bound for a loaded machine: the app reads the sender's
// parents when it accepts, and a hook gone by then cannot be told from a
// forger. It is the hook's cost only when the app is that slow, and the
// agent's never: the entries are async (the CLI does not wait for them).
// 1 s lost a Stop event on a two-core machine running the test suites
// side by side.
const deadline = 5 * time.Second

// maxEvent bounds what is read from stdin: a Stop event carries the last
// assistant message, which can be long; the app only needs the head.
const maxEvent = 1 << 20

func main() {
	forward(os.Args[1:], os.Stdin)
	os.Exit(0)
}

// forward sends the event to the socket named by --socket. Every failure
// is silent: the hook is evidence, never a gate.
func forward(args []string, in io.Reader) {
	var socket string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--socket" {
			socket = args[i+1]
		}
	}
	if socket == "" {
		return
	}
	end := time.Now().Add(deadline)
	// Read stdin whole even when the app is down: the CLI writes the event
	// to a pipe, and a hook that exits without reading makes that write
	// fail on the CLI's side.
	b, _ := io.ReadAll(io.LimitReader(in, maxEvent))
	_, _ = io.Copy(io.Discard, in)
	c, err := net.DialTimeout("unix", socket, deadline)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.SetDeadline(end)
	if _, err := c.Write(b); err != nil {
		return
	}
	// Stay until the app has read the event and closed: it checks that
	// this process runs under the session the event names, which it can
	// only do while this process lives (within the same deadline).
	if uc, ok := c.(*net.UnixConn); ok && uc.CloseWrite() == nil {
		_, _ = io.Copy(io.Discard, c)
	}
}
