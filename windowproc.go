package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// The desktop's window runs in a process of its own, `session-supervisor
// window`, that exists only while the window is open: Fyne's event loop
// runs (upstream's polls 60 times a second; ours, packaging/fyneoverlay,
// sleeps while the window is idle but still wakes 4 times a second) and its
// GL context maps tens of megabytes for as long as a Fyne app runs, shown
// or not, so the tray process never starts Fyne at all. The tray process (windowProc) starts the child when a window
// is asked for and tells it what to show over the child's stdin, one
// command a line; the child ends when its window is closed or its stdin
// reaches EOF (the tray quit or died).

// windowVerb is what a line to the window process asks.
type windowVerb int

// The verbs.
const (
	// winShow brings the window up on the Sessions tab.
	winShow windowVerb = iota
	// winSession opens one session's detail (Arg: its id).
	winSession
	// winSettings opens Settings.
	winSettings
	// winError shows an error in the window (Arg: one line): a tray
	// action or a notification's answer that failed.
	winError
)

var windowVerbNames = []string{"show", "session", "settings", "error"}

func (v windowVerb) String() string {
	if v >= 0 && int(v) < len(windowVerbNames) {
		return windowVerbNames[v]
	}
	return fmt.Sprintf("window_verb(%d)", int(v))
}

// windowCommand is one line of the protocol.
type windowCommand struct {
	Verb windowVerb
	Arg  string
}

// line is the command as sent: the verb, a space and the argument, its line
// breaks folded so the command stays one line.
func (c windowCommand) line() string {
	if c.Arg == "" {
		return c.Verb.String() + "\n"
	}
	arg := strings.Join(strings.Fields(strings.ReplaceAll(c.Arg, "\n", " ")), " ")
	return c.Verb.String() + " " + arg + "\n"
}

// parseWindowCommand reads one line of the protocol.
func parseWindowCommand(line string) (windowCommand, error) {
	line = strings.TrimRight(line, "\r\n")
	verb, arg, _ := strings.Cut(line, " ")
	for v, name := range windowVerbNames {
		if verb != name {
			continue
		}
		c := windowCommand{Verb: windowVerb(v), Arg: strings.TrimSpace(arg)}
		switch {
		case (c.Verb == winSession || c.Verb == winError) && c.Arg == "":
			return windowCommand{}, fmt.Errorf("window command %q needs an argument", verb)
		case (c.Verb == winShow || c.Verb == winSettings) && c.Arg != "":
			return windowCommand{}, fmt.Errorf("window command %q takes no argument", verb)
		}
		return c, nil
	}
	return windowCommand{}, fmt.Errorf("unknown window command %q", verb)
}

// readWindowCommands hands each well-formed line of r to do until r ends
// and returns how many lines it skipped as malformed (each logged).
func readWindowCommands(r io.Reader, log *slog.Logger, do func(windowCommand)) (skipped int) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		c, err := parseWindowCommand(sc.Text())
		if err != nil {
			skipped++
			log.Warn("window: skipping a command", "err", err)
			continue
		}
		do(c)
	}
	return skipped
}

// windowStopGrace is how long a window process has to exit after its stdin
// closed before it is killed (a Fyne app quits in well under a second).
const windowStopGrace = 5 * time.Second

// windowProc starts and tells the window process: at most one lives at a
// time, started on the first command and again on a command after it
// exited. Safe for concurrent use.
type windowProc struct {
	// argv starts the child (os.Executable's `window` with the data
	// directory); env is its environment (nil: this process's).
	argv   []string
	env    []string
	stderr io.Writer
	log    *slog.Logger

	mu      sync.Mutex
	child   *windowChild
	stopped bool
	// reaps are the goroutines waiting for children to exit.
	reaps sync.WaitGroup
}

// windowChild is one run of the window process.
type windowChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// exited is closed once the process has exited and been waited for.
	exited chan struct{}
}

// errWindowStopped: the desktop is quitting and opens no window any more.
var errWindowStopped = errors.New("the desktop is quitting")

func newWindowProc(argv, env []string, stderr io.Writer, log *slog.Logger) *windowProc {
	return &windowProc{argv: argv, env: env, stderr: stderr, log: log}
}

// Send hands c to the window process, starting one if none runs. A child
// that exited between the check and the write (its window just closed) is
// replaced once.
func (w *windowProc) Send(c windowCommand) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if w.stopped {
			return errWindowStopped
		}
		if w.child == nil {
			ch, err := w.start()
			if err != nil {
				return err
			}
			w.child = ch
		}
		_, err := io.WriteString(w.child.stdin, c.line())
		if err == nil {
			return nil
		}
		// Gone: forget it (its reaper clears it too) and start another.
		w.child.stdin.Close()
		w.child = nil
		if attempt == 1 {
			return fmt.Errorf("telling the window process %s: %w", c.Verb, err)
		}
	}
}

// start runs a window process; the caller holds mu.
func (w *windowProc) start() (*windowChild, error) {
	cmd := exec.Command(w.argv[0], w.argv[1:]...)
	cmd.Env = w.env
	cmd.Stdout, cmd.Stderr = w.stderr, w.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the window process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the window process: %w", err)
	}
	ch := &windowChild{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	w.reaps.Add(1)
	go func() {
		defer w.reaps.Done()
		err := cmd.Wait()
		if err != nil {
			w.log.Warn("the window process ended", "pid", cmd.Process.Pid, "err", err)
		}
		w.mu.Lock()
		if w.child == ch {
			w.child = nil
		}
		w.mu.Unlock()
		close(ch.exited)
	}()
	return ch, nil
}

// Running reports whether a window process lives (its window open).
func (w *windowProc) Running() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.child != nil
}

// Stop ends the window process, if one runs, and refuses to start another:
// its stdin closes, which the child takes as the end; one still running
// after grace is killed. It returns once every child has been waited for.
func (w *windowProc) Stop(grace time.Duration) {
	w.mu.Lock()
	w.stopped = true
	ch := w.child
	w.child = nil
	w.mu.Unlock()
	if ch != nil {
		ch.stdin.Close()
		select {
		case <-ch.exited:
		case <-time.After(grace):
			w.log.Warn("the window process did not exit; killing it", "pid", ch.cmd.Process.Pid, "waited", grace)
			_ = ch.cmd.Process.Kill()
		}
	}
	w.reaps.Wait()
}

// windowArgv is the command line of this binary's window process for data
// directory dir.
func windowArgv(dir string) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start its window: %w", err)
	}
	return []string{exe, "--data-dir", dir, "window"}, nil
}
