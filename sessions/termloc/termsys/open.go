package termsys

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/termloc"
)

// OpenFacts reads what termloc.Where decides on: whether a tmux server
// answers (the one $TMUX names, else the user's default socket), a display,
// $TERMINAL, and which emulators are on PATH. setting is desktop.terminal.
func OpenFacts(ctx context.Context, setting string) termloc.OpenFacts {
	f := termloc.OpenFacts{Setting: setting, TerminalEnv: os.Getenv("TERMINAL"), OnPath: map[string]bool{},
		Display: os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""}
	if _, err := exec.LookPath("tmux"); err == nil {
		// No server: "no server running on /tmp/tmux-1000/default", exit 1.
		_, err := run(ctx, "tmux", "list-sessions", "-F", "#{session_name}")
		f.TmuxRunning = err == nil
	}
	names := append([]string{"x-terminal-emulator"}, termloc.DefaultEmulators...)
	for _, s := range []string{setting, f.TerminalEnv} {
		if w := strings.Fields(s); len(w) > 0 {
			names = append(names, w[0])
		}
	}
	for _, n := range names {
		if _, err := exec.LookPath(n); err == nil {
			f.OnPath[n] = true
		}
	}
	return f
}

// emulatorGrace is how long an emulator is watched after it starts: one
// that cannot open its window (no display it can use, a bad option) exits
// within it, and that is reported instead of a silent nothing.
const emulatorGrace = time.Second

// Open runs argv in cwd where o says: a new window of the tmux server
// (`tmux new-window -c CWD`), or a new emulator window. It returns what it
// did in one line for the person; a failure wraps termloc.ErrCannotOpen.
func Open(ctx context.Context, o termloc.Opening, cwd string, argv []string) (string, error) {
	// tmux (3.3a) opens a window in HOME for a directory that is gone, and
	// the agent would resume there, in the wrong project.
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: the session's directory %s is not there", termloc.ErrCannotOpen, cwd)
	}
	switch o.Kind {
	case termloc.OpenTmux:
		// The command's words go to tmux as separate arguments: it runs
		// them without a shell, so nothing in them is interpreted.
		out, err := run(ctx, "tmux", append([]string{"new-window", "-c", cwd, "-P", "-F", "#{session_name}:#{window_index}.#{pane_index}", "--"}, argv...)...)
		if err != nil {
			return "", fmt.Errorf("%w: %w", termloc.ErrCannotOpen, err)
		}
		return fmt.Sprintf("opened tmux window %s running %s in %s", strings.TrimSpace(out), strings.Join(argv, " "), cwd), nil
	case termloc.OpenEmulator:
		line := termloc.EmulatorArgv(o.Emulator, argv)
		cmd := exec.Command(line[0], line[1:]...)
		cmd.Dir = cwd
		detach(cmd)
		if err := cmd.Start(); err != nil {
			return "", fmt.Errorf("%w: starting %s: %w", termloc.ErrCannotOpen, line[0], err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }() // reaps it whenever it ends
		select {
		case err := <-exited:
			if err != nil {
				return "", fmt.Errorf("%w: %s exited at once: %w", termloc.ErrCannotOpen, line[0], err)
			}
			// Some emulators hand the window to a server and exit 0.
		case <-time.After(emulatorGrace):
		case <-ctx.Done():
		}
		return fmt.Sprintf("opened %s running %s in %s", o, strings.Join(argv, " "), cwd), nil
	}
	return "", errors.New("no opening decided")
}
