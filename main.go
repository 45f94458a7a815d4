// Command session-supervisor keeps many local AI coding-agent sessions honest
// and moving while nobody watches. This file is the composition root: it
// parses the command line and wires the packages together; the decisions live
// in sessions/ and supervisor/.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	// First: keeps Fyne's locale lookup quiet under LANG=C.UTF-8 (see
	// the package's comment for why its init runs before Fyne's).
	_ "github.com/session-supervisor/session-supervisor/localeenv"

	"github.com/session-supervisor/session-supervisor/sessions/textsafe"
)

// version is stamped at build time with -ldflags "-X main.version=…".
var version = "dev"

// exit codes: 0 ok, 1 failure, 2 usage.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError marks a command-line mistake: usage is printed and the exit code is 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// cli carries what every command needs: where to write, and the data directory.
type cli struct {
	stdin          io.Reader // a prompt given as "-"
	stdout, stderr io.Writer
	// humanOut is stdout through textsafe for text an agent may have
	// written (names, evidence, timeline details): see human.
	humanOut io.Writer
	// dataDir is --data-dir when given; empty means storage.DataDir's default.
	dataDir string
	// machine is --machine: the app commands talk to that machine's
	// supervisor (machines ls lists them).
	machine string
	// interrupt, when set, is closed to stop long-running commands (watch, run).
	interrupt <-chan struct{}
}

// human is where the CLI prints text meant for a person that carries words
// from an agent: a reply quoted as evidence can hold escape sequences that
// would rewrite the user's terminal. JSON output keeps its bytes (the
// encoder escapes control characters itself).
func (c *cli) human() io.Writer {
	if c.humanOut == nil {
		c.humanOut = textsafe.NewWriter(c.stdout)
	}
	return c.humanOut
}

type command struct {
	name    string
	args    string
	summary string
	run     func(c *cli, args []string) error
}

func commands() []command {
	cmds := []command{
		{"help", "[COMMAND]", "show this help", cmdHelp},
		{"version", "", "print the version", cmdVersion},
		{"settings", "list [--json] | get KEY | set KEY VALUE | reset KEY", "show and change settings", cmdSettings},
		{"timeline", "SESSION [--json] [--limit N]", "print a session's supervisor timeline (works without the app running)", cmdTimeline},
		{"service", "install [--headless] | uninstall | start | stop | restart | status [--json]", "run the app as a per-user service that starts at login", cmdService},
		{"hooks", "install | uninstall | status [--json]", "add or remove the Claude Code hooks that make terminal sessions' states faster and richer", cmdHooks},
		{"doctor", "[--json]", "check the agents, data directory, database, app, service and desktop, and say how to fix what is missing", cmdDoctor},
	}
	cmds = append(cmds, appCommands()...)
	cmds = append(cmds, machineCommands()...)
	cmds = append(cmds, notifyCommands()...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	return cmds
}

// hiddenCommands run but are not listed: the parts of the app it starts
// itself.
func hiddenCommands() []command {
	return []command{
		{"window", "", "the desktop's window, started by the tray (windowproc.go)", cmdWindow},
	}
}

func findCommand(name string) (command, bool) {
	for _, c := range append(commands(), hiddenCommands()...) {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// processStarted is when this process started: the notifiers tell what
// escalated during this run (and must be notified, however late they
// subscribed) from what was already true before it.
var processStarted = time.Now()

func main() {
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(c.main(os.Args[1:]))
}

// main runs one command line and returns the exit code.
func (c *cli) main(args []string) int {
	rest, err := c.parseGlobal(args)
	if err != nil {
		return c.fail(err, "")
	}
	if len(rest) == 0 {
		c.printUsage(c.stderr)
		return exitUsage
	}
	name := rest[0]
	if name == "-h" || name == "--help" {
		name = "help"
	}
	cmd, ok := findCommand(name)
	if !ok {
		return c.fail(usagef("unknown command %q", name), "")
	}
	if c.machine != "" && !machineAware(cmd.name) {
		return c.fail(usagef("--machine goes with the commands that talk to a supervisor (ls, show, new, send, ...), not %s", cmd.name), cmd.name)
	}
	return c.fail(cmd.run(c, rest[1:]), cmd.name)
}

// parseGlobal removes the global flags (--data-dir, --machine) wherever they
// appear, before or after the command name, and returns the remaining
// arguments.
func (c *cli) parseGlobal(args []string) ([]string, error) {
	type flagDef struct {
		name, what string
		value      *string
	}
	defs := []flagDef{{"--data-dir", "a directory", &c.dataDir}, {"--machine", "a machine's name", &c.machine}}
	globalFlag := func(a string) *flagDef {
		name, _, _ := strings.Cut(a, "=")
		for i, d := range defs {
			if name == d.name || name == d.name[1:] {
				return &defs[i]
			}
		}
		return nil
	}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i:]...)
			return rest, nil
		case globalFlag(a) != nil:
			f := globalFlag(a)
			if _, v, ok := strings.Cut(a, "="); ok {
				*f.value = v
			} else if i+1 < len(args) {
				*f.value = args[i+1]
				i++
			}
			if *f.value == "" {
				return nil, usagef("%s needs %s", f.name, f.what)
			}
		default:
			rest = append(rest, a)
		}
	}
	return rest, nil
}

// fail turns a command's error into output and an exit code.
func (c *cli) fail(err error, cmdName string) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(c.stderr, "session-supervisor: %s\n\n", ue.msg)
		if cmd, ok := findCommand(cmdName); ok {
			fmt.Fprintf(c.stderr, "usage: session-supervisor %s %s\n", cmd.name, cmd.args)
		} else {
			c.printUsage(c.stderr)
		}
		return exitUsage
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(c.stderr, "session-supervisor: %v\n", err)
	return exitFail
}

func (c *cli) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Session Supervisor %s keeps local AI coding-agent sessions honest and moving.\n\n", version)
	fmt.Fprintln(w, "usage: session-supervisor [--data-dir DIR] COMMAND [ARGS]")
	fmt.Fprintln(w, "\ncommands:")
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintln(w, "\nThe data directory defaults to $SESSION_SUPERVISOR_HOME, else the per-user data")
	fmt.Fprintln(w, "directory ($XDG_DATA_HOME/session-supervisor on Linux).")
	fmt.Fprintln(w, "Run 'session-supervisor help COMMAND' for a command's arguments.")
}

// newFlags makes a flag set for a command whose errors become usage errors.
func (c *cli) newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseNoArgs parses the flags of a command that takes no positional
// argument; any is a usage error naming the command (the flag set's name).
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("%s takes no arguments", fs.Name())
	}
	return nil
}

// parseSessionID parses the flags of a command that takes exactly one
// session id and returns it.
func parseSessionID(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usagef("%s takes one session id", fs.Name())
	}
	return pos[0], nil
}

// parseFlags parses a command's flags, accepting flags after positional
// arguments too (`timeline ID --json`), which the standard flag package stops at.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		// A negative number is a value (`settings set KEY -1`, clamped
		// like any out-of-range number), never a flag: no flag here is
		// named by a number.
		if len(args) > 0 && isNegativeNumber(args[0]) {
			positional = append(positional, args[0])
			args = args[1:]
			continue
		}
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, usagef("help requested")
			}
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func isNegativeNumber(s string) bool {
	if !strings.HasPrefix(s, "-") {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func cmdHelp(c *cli, args []string) error {
	if len(args) == 0 {
		c.printUsage(c.stdout)
		return nil
	}
	cmd, ok := findCommand(args[0])
	if !ok {
		return usagef("unknown command %q", args[0])
	}
	fmt.Fprintf(c.stdout, "usage: session-supervisor %s %s\n\n%s\n", cmd.name, cmd.args, cmd.summary)
	return nil
}

func cmdVersion(c *cli, args []string) error {
	if len(args) > 0 {
		return usagef("version takes no arguments")
	}
	fmt.Fprintf(c.stdout, "session-supervisor %s\n", version)
	return nil
}
