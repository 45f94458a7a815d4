package copilotterm

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Proc is a live interactive Copilot process: the native binary (the npm
// `copilot` is a Node loader that spawnSyncs it, and is skipped), its
// working directory and start time.
type Proc struct {
	observe.Proc
	// WantID is the session the command line names (--resume=<id>,
	// --session-id <id>), "" otherwise.
	WantID string
	// Held are the session directories the process holds a lock in
	// (session-state/<id>/inuse.<pid>.hold, open for as long as the TUI
	// has the session: measured on 1.0.102).
	Held []string
}

// notInteractive are Copilot's subcommands and options that are no
// terminal session (1.0.102 `copilot --help`): prompt mode (-p, or
// --output-format, the app's own turns), the protocol servers, and the
// management commands.
var notInteractive = map[string]bool{
	"-p": true, "--prompt": true, "--output-format": true, "--acp": true, "--server": true, "--headless": true,
	"-v": true, "--version": true, "-h": true, "--help": true,
	"app": true, "login": true, "help": true, "init": true, "config": true, "update": true, "version": true,
	"workflow": true, "sessions": true, "memories": true, "plugin": true, "mcp": true, "skill": true,
	"instruction": true, "lsp": true, "sandbox": true, "completion": true,
}

// valueFlags take a separate value, so the value is not read as a
// subcommand.
var valueFlags = map[string]bool{
	"-i": true, "--interactive": true, "--model": true, "--reasoning-effort": true, "--context": true,
	"--auto-tier": true, "--agent": true, "-n": true, "--name": true, "--session-id": true, "-C": true,
	"--log-dir": true, "--extension-sdk-path": true, "--log-level": true, "--stream": true, "--add-dir": true,
	"--attachment": true, "--disable-mcp-server": true, "--allow-tool": true, "--deny-tool": true,
	"--available-tools": true, "--excluded-tools": true, "--allow-url": true, "--deny-url": true,
	"--additional-mcp-config": true, "--config-dir": true,
}

// Interactive reads a native copilot command line: whether it is the TUI,
// and the session it names (--resume <id>, --session-id <id>), if any.
func Interactive(argv []string) (ok bool, wantID string) {
	if len(argv) == 0 || filepath.Base(argv[0]) != "copilot" {
		return false, "" // the Node loader (node …/bin/copilot) or another program
	}
	args := argv[1:]
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		switch {
		case notInteractive[name]:
			return false, ""
		case name == "-r" || name == "--resume" || name == "--session-id":
			if !hasValue && name != "--session-id" && i+1 < len(args) && strings.HasPrefix(args[i+1], "-") {
				continue // --resume alone: the picker, or the last session
			}
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			if sessionID(value) {
				wantID = value
			}
		case valueFlags[name] && !hasValue:
			i++
		}
		// Any other word that is no subcommand the TUI takes (or rejects
		// and exits): not ours to judge.
	}
	return true, wantID
}

// sessionID reports a Copilot session id: a UUID.
func sessionID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// Workspace is a session directory ($COPILOT_HOME/session-state/<id>/) and
// what its workspace.yaml says.
type Workspace struct {
	Dir string
	ID  string
	Cwd string
	// Name is the session's title (Copilot names it after the first
	// prompt, or the user does).
	Name    string
	Created time.Time
	// ModTime is the directory's last change (a lock taken or released,
	// events.jsonl created).
	ModTime time.Time
}

// Events is the session's events file.
func (w Workspace) Events() string { return filepath.Join(w.Dir, "events.jsonl") }

// maxWorkspace bounds the read of a workspace.yaml (a few hundred bytes).
const maxWorkspace = 64 << 10

// ReadWorkspace reads a session directory's workspace.yaml: the flat
// `key: value` lines Copilot writes (id, cwd, name, created_at, …). The id
// is the directory's name when the file does not say.
func ReadWorkspace(dir string) (Workspace, error) {
	w := Workspace{Dir: dir, ID: filepath.Base(dir)}
	fi, err := os.Stat(dir)
	if err != nil {
		return w, fmt.Errorf("reading the session directory: %w", err)
	}
	w.ModTime = fi.ModTime()
	fh, err := os.Open(filepath.Join(dir, "workspace.yaml"))
	if err != nil {
		return w, fmt.Errorf("opening workspace.yaml: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(io.LimitReader(fh, maxWorkspace))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.HasPrefix(k, " ") {
			continue // a nested or continued value
		}
		v = unquote(strings.TrimSpace(v))
		switch k {
		case "id":
			if v != "" {
				w.ID = v
			}
		case "cwd":
			w.Cwd = v
		case "name":
			w.Name = v
		case "created_at":
			w.Created, _ = time.Parse(time.RFC3339Nano, v)
		}
	}
	return w, nil
}

// unquote strips the quotes YAML puts around a value with special
// characters.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		return v[1 : len(v)-1]
	}
	return v
}

// Pair finds each process's session: the one it holds a lock in (exact);
// else the one its command line names; else the newest session created in
// its working directory since it started and not taken by a process
// started later in the same directory. A process without a session is
// left out: Copilot creates the directory as the TUI starts, so a process
// with none is no session (yet).
func Pair(procs []Proc, spaces []Workspace) map[int]Workspace {
	out := map[int]Workspace{}
	claimed := map[string]bool{}
	byDir := map[string]Workspace{}
	for _, w := range spaces {
		byDir[filepath.Clean(w.Dir)] = w
	}
	var rest []Proc
	for _, p := range procs {
		var held []Workspace
		for _, d := range p.Held {
			if w, ok := byDir[filepath.Clean(d)]; ok && !claimed[w.Dir] {
				held = append(held, w)
			}
		}
		if len(held) == 0 {
			rest = append(rest, p)
			continue
		}
		slices.SortFunc(held, func(a, b Workspace) int { return b.ModTime.Compare(a.ModTime) })
		out[p.PID] = held[0]
		claimed[held[0].Dir] = true
	}
	slices.SortFunc(rest, func(a, b Proc) int { return cmp.Or(b.Started.Compare(a.Started), cmp.Compare(a.PID, b.PID)) })
	sorted := slices.Clone(spaces)
	slices.SortFunc(sorted, func(a, b Workspace) int { return b.Created.Compare(a.Created) })
	for _, p := range rest {
		for _, w := range sorted {
			switch {
			case claimed[w.Dir]:
				continue
			case p.WantID != "":
				if w.ID != p.WantID {
					continue
				}
			case !observe.SameDir(w.Cwd, p.Cwd) || w.Created.Before(p.Started.Add(-observe.PairSlack)):
				continue
			}
			out[p.PID] = w
			claimed[w.Dir] = true
			break
		}
	}
	return out
}
