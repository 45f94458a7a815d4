package codexterm

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"

	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Proc is a live interactive Codex process: the native binary (the npm
// `codex` is a Node wrapper around it, which is skipped), its working
// directory and start time.
type Proc struct {
	observe.Proc
	// ResumeID is the thread `codex resume <id>` continues ("" otherwise).
	ResumeID string
	// Resuming: `codex resume` without an id (--last, or the picker): an
	// older thread of the cwd that is written to since the process started.
	Resuming bool
	// Open are the rollouts the process holds open: without the app-server
	// daemon (--no-daemon) the TUI writes its own rollout; with it the
	// daemon does, and the rollout is found by cwd and time instead.
	Open []string
}

// notInteractive are Codex's subcommands that are not a terminal session
// (0.171.0 `codex --help`); `resume` and `fork` open the TUI on a thread.
var notInteractive = map[string]bool{
	"exec": true, "e": true, "review": true, "login": true, "logout": true, "mcp": true, "mcp-server": true,
	"plugin": true, "app-server": true, "remote-control": true, "completion": true, "update": true,
	"doctor": true, "sandbox": true, "debug": true, "apply": true, "a": true, "queue": true, "archive": true,
	"delete": true, "migrate-rollouts": true, "migrate-nfs-db": true, "unarchive": true, "cloud": true,
	"exec-server": true, "features": true, "help": true, "agents": true, "responses-api-proxy": true,
	"stdio-to-uds": true, "--help": true, "-h": true, "--version": true, "-V": true,
}

// valueFlags are the TUI's options that take a separate value, so the
// value is not mistaken for a subcommand or the prompt.
var valueFlags = map[string]bool{
	"-c": true, "--config": true, "-m": true, "--model": true, "-p": true, "--profile": true,
	"-C": true, "--cd": true, "-s": true, "--sandbox": true, "-a": true, "--ask-for-approval": true,
	"-i": true, "--image": true, "--enable": true, "--disable": true, "--remote": true,
	"--remote-auth-token-env": true, "--local-provider": true, "--add-dir": true,
}

// Interactive reads a native codex command line: whether it is the TUI (no
// subcommand, a prompt, `resume` or `fork`), and the thread a `resume <id>`
// continues ("" for `resume --last` or the picker: see Resuming).
func Interactive(argv []string) (ok bool, resumeID string) {
	ok, resumeID, _ = interactive(argv)
	return ok, resumeID
}

func interactive(argv []string) (ok bool, resumeID string, resuming bool) {
	if len(argv) == 0 || filepath.Base(argv[0]) != "codex" {
		return false, "", false // the Node wrapper (node …/bin/codex) or another program
	}
	args := argv[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if valueFlags[a] {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") && !notInteractive[a] {
			continue
		}
		if notInteractive[a] {
			return false, "", false
		}
		if a == "resume" {
			for _, b := range args[i+1:] {
				if !strings.HasPrefix(b, "-") {
					return true, b, false
				}
			}
			return true, "", true
		}
		return true, "", false // the prompt, or `fork` (a new thread)
	}
	return true, "", false
}

// Rollout is one rollout file and its session_meta.
type Rollout = observe.SessionFile[Meta]

// Pair finds each process's rollout: the one it holds open; else, for
// `resume <id>`, that thread's; for `resume --last` or the picker, the
// newest thread of its cwd written to since it started; else the newest interactive user thread
// (never a subagent's) created in the process's cwd since it started and
// not taken by a process started later in the same directory. The newest
// wins because Codex can re-create the rollout after the trust prompt.
func Pair(procs []Proc, rollouts []Rollout) map[int]Rollout {
	out := map[int]Rollout{}
	claimed := map[string]bool{}
	byPath := map[string]Rollout{}
	for _, r := range rollouts {
		byPath[r.Path] = r
	}
	newest := func(a, b Rollout) int { return b.Meta.Started.Compare(a.Meta.Started) }
	var rest []Proc
	for _, p := range procs {
		var open []Rollout
		for _, path := range p.Open {
			if r, ok := byPath[path]; ok && !r.Meta.Subagent() {
				open = append(open, r)
			}
		}
		if len(open) == 0 {
			rest = append(rest, p)
			continue
		}
		slices.SortFunc(open, newest)
		out[p.PID] = open[0]
		claimed[open[0].Path] = true
	}
	slices.SortFunc(rest, func(a, b Proc) int { return cmp.Or(b.Started.Compare(a.Started), cmp.Compare(a.PID, b.PID)) })
	sorted := slices.Clone(rollouts)
	slices.SortFunc(sorted, newest)
	for _, p := range rest {
		for _, r := range sorted {
			m := r.Meta
			if claimed[r.Path] || m.Subagent() || !m.Interactive() {
				continue
			}
			switch {
			case p.ResumeID != "":
				// The resumed thread, wherever it was started.
				if m.ID != p.ResumeID {
					continue
				}
			case !observe.SameDir(m.Cwd, p.Cwd):
				continue
			case p.Resuming:
				// An older thread, written to since the process started.
				if r.ModTime.Before(p.Started.Add(-observe.PairSlack)) {
					continue
				}
			case m.Started.Before(p.Started.Add(-observe.PairSlack)):
				continue
			}
			out[p.PID] = r
			claimed[r.Path] = true
			break
		}
	}
	return out
}
