package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/doctor"
	"github.com/session-supervisor/session-supervisor/sessions/claude/claudeterm"
	"github.com/session-supervisor/session-supervisor/sessions/claude/hooks"
)

// hookProgram is the hook executable's name; the build puts it next to the
// app's binary (it is a separate, cgo-free program so that the CLI's
// per-event spawn costs about a millisecond, not the app's Fyne start).
func hookProgram() string {
	if runtime.GOOS == "windows" {
		return hooks.Sentinel + ".exe"
	}
	return hooks.Sentinel
}

// findHookProgram finds the hook next to the running executable.
func findHookProgram() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the app's binary: %w", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	p := filepath.Join(filepath.Dir(exe), hookProgram())
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("the hook program %s is missing next to the app (%s): build it with `make build`, "+
			"or `go build -o %s ./cmd/session-supervisor-hook`", hookProgram(), filepath.Dir(exe), p)
	}
	return p, nil
}

// hookSetup is where install and status look: the settings file, the
// socket the hook forwards to, the command our entries run.
type hookSetup struct {
	settings, socket, dataDir string
	// command is what install writes now; empty when the hook program is
	// missing (progErr says why).
	command string
	progErr error
}

func (c *cli) hookSetup() (hookSetup, error) {
	var h hookSetup
	dir, err := c.resolveDataDir()
	if err != nil {
		return h, err
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	h.dataDir = dir
	h.socket = filepath.Join(dir, claudeterm.HookSocketName)
	if h.settings, err = hooks.SettingsPath(); err != nil {
		return h, err
	}
	prog, err := findHookProgram()
	if err != nil {
		h.progErr = err
	} else {
		h.command = hooks.Command(prog, h.socket)
	}
	return h, nil
}

func cmdHooks(c *cli, args []string) error {
	if len(args) == 0 {
		return usagef("hooks needs install, uninstall or status")
	}
	fs := c.newFlags("hooks " + args[0])
	asJSON := fs.Bool("json", false, "print JSON (status)")
	if err := parseNoArgs(fs, args[1:]); err != nil {
		return err
	}
	h, err := c.hookSetup()
	if err != nil {
		return err
	}
	switch args[0] {
	case "install":
		if h.progErr != nil {
			return h.progErr
		}
		if err := checkClaudeVersion(c); err != nil {
			return err
		}
		ch, err := hooks.InstallFile(h.settings, h.command)
		if err != nil {
			return fmt.Errorf("installing Claude Code hooks: %w", err)
		}
		if !ch.Changed {
			fmt.Fprintf(c.stdout, "Claude Code hooks already installed in %s\n", ch.Path)
			return nil
		}
		fmt.Fprintf(c.stdout, "installed Claude Code hooks in %s\n  events: %s\n  command: %s\n",
			ch.Path, strings.Join(hooks.Events, ", "), h.command)
		if ch.Backup != "" {
			fmt.Fprintf(c.stdout, "  the previous file is kept as %s\n", ch.Backup)
		}
		fmt.Fprintln(c.stdout, "Sessions already running load hooks only when they start: restart them to hook them.")
		return nil
	case "uninstall":
		ch, err := hooks.UninstallFile(h.settings)
		if err != nil {
			return fmt.Errorf("removing Claude Code hooks: %w", err)
		}
		if !ch.Changed {
			fmt.Fprintf(c.stdout, "no Claude Code hooks of ours in %s\n", ch.Path)
			return nil
		}
		fmt.Fprintf(c.stdout, "removed Claude Code hooks from %s\n", ch.Path)
		if ch.Backup != "" {
			fmt.Fprintf(c.stdout, "  the previous file is kept as %s\n", ch.Backup)
		}
		return nil
	case "status":
		st := readHookStatus(h)
		if *asJSON {
			return writeJSON(c, st)
		}
		printHookStatus(c, st)
		return nil
	}
	return usagef("unknown hooks command %q (install, uninstall, status)", args[0])
}

// hookStatus is what `hooks status` and doctor report: what the settings
// file holds, and whether events actually arrive.
type hookStatus struct {
	Settings  string   `json:"settings"`
	Installed bool     `json:"installed"`
	Events    []string `json:"events,omitempty"`
	// Current: the entries are what install writes now (the hook program's
	// path and this data directory's socket).
	Current bool   `json:"current"`
	Problem string `json:"problem,omitempty"`
	// Listening: an app listens on the socket now.
	Listening bool   `json:"listening"`
	Socket    string `json:"socket"`
	// Received is the listener's account (since it started); nil when no
	// app has listened in this data directory.
	Received *claudeterm.HookState `json:"received,omitempty"`
}

func readHookStatus(h hookSetup) hookStatus {
	st := hookStatus{Settings: h.settings, Socket: h.socket}
	src, err := hooks.ReadSettings(h.settings)
	switch {
	case err != nil:
		st.Problem = err.Error()
	case src != nil:
		in, err := hooks.Inspect(src, h.command)
		if err != nil {
			st.Problem = fmt.Sprintf("%s: %v", h.settings, err)
			break
		}
		st.Installed, st.Events, st.Current = len(in.Events) > 0, in.Events, in.Current
		if st.Installed && h.progErr != nil {
			st.Problem = h.progErr.Error()
		} else if st.Installed && !in.Current {
			st.Problem = "the entries are from another build or data directory: run `session-supervisor hooks install` to upgrade them"
		}
	}
	if c, err := net.DialTimeout("unix", h.socket, 500*time.Millisecond); err == nil {
		c.Close()
		st.Listening = true
	}
	if rec, err := claudeterm.ReadHookState(h.dataDir); err == nil {
		st.Received = &rec
	} else if !errors.Is(err, fs.ErrNotExist) && st.Problem == "" {
		st.Problem = err.Error()
	}
	return st
}

func printHookStatus(c *cli, st hookStatus) {
	w := c.stdout
	if st.Installed {
		fmt.Fprintf(w, "Claude Code hooks: installed in %s\n  events: %s\n", st.Settings, strings.Join(st.Events, ", "))
	} else {
		fmt.Fprintf(w, "Claude Code hooks: not installed (%s)\n", st.Settings)
	}
	if st.Problem != "" {
		fmt.Fprintf(w, "  problem: %s\n", st.Problem)
	}
	if st.Listening {
		fmt.Fprintf(w, "  the app listens on %s\n", st.Socket)
	} else {
		fmt.Fprintf(w, "  no app listens on %s (hook events are dropped; the hook still exits at once)\n", st.Socket)
	}
	r := st.Received
	switch {
	case r == nil:
		fmt.Fprintln(w, "  no event received yet in this data directory")
	case r.Events == 0:
		fmt.Fprintf(w, "  no event received since the app started (%s)", r.Since.Local().Format(time.DateTime))
		if st.Installed {
			fmt.Fprint(w, ": sessions started before the install are not hooked until restarted")
		}
		fmt.Fprintln(w)
	default:
		fmt.Fprintf(w, "  %d events since the app started (%s), the last at %s\n",
			r.Events, r.Since.Local().Format(time.DateTime), r.Last.Local().Format(time.DateTime))
		for _, s := range r.Sessions {
			fmt.Fprintf(w, "    session %s: %d events, the last %s at %s\n", s.SessionID, s.Count, s.Event, s.At.Local().Format(time.TimeOnly))
		}
	}
}

// doctorHooks is the hooks' status for doctor (nil when it cannot be read:
// no home directory).
func (c *cli) doctorHooks() *doctor.Hooks {
	h, err := c.hookSetup()
	if err != nil {
		return nil
	}
	st := readHookStatus(h)
	out := &doctor.Hooks{Settings: st.Settings, Installed: st.Installed, Problem: st.Problem, Listening: st.Listening}
	if r := st.Received; r != nil {
		out.Since, out.Events, out.Last = r.Since, r.Events, r.Last
	}
	return out
}

// checkClaudeVersion refuses to install for a Claude Code too old to
// tolerate an entry it cannot read. A CLI that is not found or does not
// say its version does not stop the install (it may be installed later,
// or elsewhere).
func checkClaudeVersion(c *cli) error {
	bin, err := exec.LookPath("claude")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "--version").Output()
	ok, known, err := hooks.CheckVersion(string(out))
	if !ok {
		return err
	}
	if !known {
		fmt.Fprintf(c.stderr, "note: could not read the version of %s; installing anyway\n", bin)
	}
	return nil
}
