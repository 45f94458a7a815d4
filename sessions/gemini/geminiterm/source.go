// Package terminal observes Gemini CLI sessions started in a terminal (the
// interactive `gemini` TUI): it finds their processes in the process table,
// pairs each with the chat file its session is written to, tails that file
// and infers the session's state with an ordered rule stack (a
// sessions.ExternalSource, like sessions/codex/codexterm).
//
// The CLI registers its interactive sessions nowhere, so discovery reads
// the process table (a Node process running the CLI's bundle, not --acp or
// -p: those are the app's managed sessions and headless runs) and
// <home>/tmp/<project>/chats/session-*.jsonl, whose first line names the
// session and the SHA-256 of its project root (the cwd). The CLI offers no
// inbox: a stalled or failed terminal session is escalated with the
// evidence, never nudged.
package geminiterm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/gemini"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// Source is the Gemini CLI terminal source: a sessions.ExternalSource of
// the process-table shape (package observe), answering as the agent the
// app launches as "gemini", so "Resume in the background" can load the
// session managed.
type Source struct {
	observe.ProcSource[Proc, Chat]
	observe.Unreachable[gemini.Agent]

	// GeminiHome is the CLI's configuration directory; empty means
	// $GEMINI_CLI_HOME/.gemini, else ~/.gemini.
	GeminiHome string
	// Children counts the processes running under pid (default
	// procscan.Children): a tool call pending with none is an approval
	// prompt.
	Children func(pid int) (n int, known bool)

	// metas caches each chat's first line by path; guarded by the scan.
	metas map[string]Meta
}

var _ sessions.ExternalSource = (*Source)(nil)

// Home is the CLI's configuration directory ("" when there is none to find).
func (s *Source) Home() string {
	env := os.Getenv("GEMINI_CLI_HOME")
	if env != "" {
		env = filepath.Join(env, ".gemini")
	}
	return observe.HomeDir(s.GeminiHome, env, ".gemini")
}

// TmpDir holds one directory per project, each with its chats/.
func (s *Source) TmpDir() string { return filepath.Join(s.Home(), "tmp") }

func (s *Source) children(pid int) (int, bool) {
	if s.Children != nil {
		return s.Children(pid)
	}
	return procscan.Children(pid)
}

// tuiFilter finds the Gemini CLI's TUI in the process table: a Node process
// running the CLI's script, not --acp or -p, with a cwd to read; its home
// and whether it will relaunch itself are read from its environment for
// each one listed.
var tuiFilter = observe.ProcFilter[Proc]{
	Comms: []string{"node"},
	Match: func(p procscan.Proc) bool {
		ok, _, _ := Interactive(p.Argv)
		return ok
	},
	Describe: func(p procscan.Proc) (Proc, bool) {
		cwd, _ := procscan.Cwd(p.PID)
		if cwd == "" {
			return Proc{}, false
		}
		// The CLI's own rule: it is interactive only when its standard
		// input is a terminal. A Gemini CLI fed by a pipe or /dev/null (a
		// helper the CLI or a script spawns: one with no terminal lived 5 s
		// beside a TUI under test and was listed as a second session) is no
		// terminal session.
		if tty, known := procscan.StdinTerminal(p.PID); known && !tty {
			return Proc{}, false
		}
		// One read of the environment answers both what follows (nil
		// when it cannot be read: another user's process).
		env, _ := procscan.Environ(p.PID)
		if willRelaunch(env) && time.Since(p.Started) < relaunchWindow {
			// A launcher alone (its child not spawned yet: seconds on a
			// busy machine) is not a session yet; listing it would show
			// one that vanishes once the child appears. One still alone
			// after the window never relaunched (an older CLI that
			// relaunches only for memory, a container sandbox): it is
			// the session.
			return Proc{}, false
		}
		home := ""
		if h, ok := envValue(env, "GEMINI_CLI_HOME"); ok && h != "" {
			home = filepath.Join(h, ".gemini")
		} else if h, ok := envValue(env, "HOME"); ok {
			home = filepath.Join(h, ".gemini")
		}
		_, resume, resuming := Interactive(p.Argv)
		return Proc{Proc: observe.Proc{PID: p.PID, Cwd: cwd, Started: p.Started, Home: home}, ResumeID: resume, Resuming: resuming, parent: p.PPID}, true
	},
}

// ScanProcs lists the interactive Gemini CLI processes in the process
// table.
func ScanProcs() ([]Proc, error) {
	all, err := observe.ScanOnce(tuiFilter)
	return dropLaunchers(all), err
}

// dropLaunchers keeps, of a relaunching pair (the CLI starts itself again
// with a larger heap and waits for it), only the child: it is the session.
func dropLaunchers(procs []Proc) []Proc {
	parents := map[int]bool{}
	for _, p := range procs {
		parents[p.parent] = true
	}
	return slices.DeleteFunc(procs, func(p Proc) bool { return parents[p.PID] })
}

// relaunchWindow is how long a Gemini CLI that will relaunch itself is
// given to do so before it counts as the session itself.
var relaunchWindow = 15 * time.Second

// willRelaunch reports whether a Gemini CLI with this environment will
// start itself again (0.61.0 always relaunches unless GEMINI_CLI_NO_RELAUNCH
// or SANDBOX is set, and sets GEMINI_CLI_NO_RELAUNCH in the child). An
// environment that could not be read (nil) says nothing: false.
func willRelaunch(env []string) bool {
	if env == nil {
		return false
	}
	_, noRelaunch := envValue(env, "GEMINI_CLI_NO_RELAUNCH")
	_, sandbox := envValue(env, "SANDBOX")
	return !noRelaunch && !sandbox
}

// envValue is name's value in env (KEY=VALUE entries).
func envValue(env []string, name string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// minScan bounds how often the process table and the chat directories are
// read, however often the files change.
const minScan = 500 * time.Millisecond

// scan refreshes the processes and their chats unless the last scan is
// recent, and returns them.
func (s *Source) scan() ([]Proc, map[int]Chat, error) {
	return s.Scan(minScan, tuiFilter, "Gemini CLI processes", func(list []Proc) ([]Proc, map[int]Chat) {
		procs := observe.OwnHome(dropLaunchers(list), s.Home())
		return procs, Pair(procs, s.chats(procs))
	})
}

// projectDirs are the directories under tmp/ the processes' sessions are
// written to: the slug projects.json maps each cwd to, and the legacy
// SHA-256 name; all project directories when a cwd is not registered (yet).
func (s *Source) projectDirs(procs []Proc) []string {
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	if b, err := os.ReadFile(filepath.Join(s.Home(), "projects.json")); err == nil {
		_ = json.Unmarshal(b, &reg)
	}
	var out []string
	for _, p := range procs {
		cwd := filepath.Clean(p.Cwd)
		slug, ok := reg.Projects[cwd]
		if !ok || slug == "" || strings.ContainsAny(slug, `/\`) {
			all, _ := filepath.Glob(filepath.Join(s.TmpDir(), "*"))
			return all
		}
		for _, d := range []string{slug, ProjectHash(cwd)} {
			if dir := filepath.Join(s.TmpDir(), d); !slices.Contains(out, dir) {
				out = append(out, dir)
			}
		}
	}
	return out
}

// chats reads the metadata of every chat file a process could be writing:
// the main sessions of its projects written to since the oldest process
// started. Metas are cached by path (a chat's first line never changes).
func (s *Source) chats(procs []Proc) []Chat {
	if s.metas == nil {
		s.metas = map[string]Meta{}
	}
	if len(procs) == 0 {
		clear(s.metas)
		return nil
	}
	oldest := observe.Oldest(procs, time.Now())
	seen := map[string]bool{}
	var out []Chat
	for _, dir := range s.projectDirs(procs) {
		ents, _ := os.ReadDir(filepath.Join(dir, "chats"))
		for _, e := range ents {
			if ok, _ := filepath.Match("session-*.jsonl", e.Name()); !ok || e.IsDir() {
				continue
			}
			fi, err := e.Info()
			// A chat not written since the oldest process started is no
			// live session's: its first line is not even read.
			if err != nil || fi.ModTime().Before(oldest.Add(-observe.PairSlack)) {
				continue
			}
			path := filepath.Join(dir, "chats", e.Name())
			seen[path] = true
			m, ok := s.metas[path]
			if !ok {
				if m, err = ReadMeta(path); err != nil {
					continue // not written yet: looked at again next scan
				}
				s.metas[path] = m
			}
			out = append(out, Chat{Path: path, Meta: m, ModTime: fi.ModTime()})
		}
	}
	for path := range s.metas {
		if !seen[path] {
			delete(s.metas, path)
		}
	}
	return out
}

// watchDirs are the directories whose change is news to discovery: the
// home (projects.json), tmp/ (a new project) and the known chats dirs.
func (s *Source) watchDirs() []string {
	out := []string{s.Home(), s.TmpDir()}
	for _, c := range s.Paired() {
		if d := filepath.Dir(c.Path); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out[2:])
	return out
}

// Watch lists the live interactive sessions now and after every change.
func (s *Source) Watch(ctx context.Context) (<-chan []sessions.ExternalSession, error) {
	if s.Home() == "" {
		return nil, errors.New("no home directory to find the Gemini CLI's sessions in")
	}
	return observe.WatchList(ctx, s.WatchWake(ctx, tuiFilter, s.watchDirs), observe.ListProcs(s.scan, func(p Proc, pairs map[int]Chat) sessions.ExternalSession {
		return observe.Listed(p.PID, p.Started, p.Cwd, pairs[p.PID].Meta.SessionID)
	})), nil
}

// ErrNoInbox is Nudge's answer (observe.NoInbox): the Gemini TUI has no
// inbox a message could be delivered through, so recovery escalates with
// the evidence (or the user resumes the session in the background, managed
// over ACP).
var ErrNoInbox error = observe.NoInboxError{Agent: gemini.Agent{}.Name()}

// Observe follows one session: its process and its chat file's tail
// (found again at every look: the CLI switches files on /clear and
// /resume, whose turns are new). Reading costs what was appended since the
// last look (a first look at a large file reads at most its last 2 MB; a
// line over 1 MB is skipped without being buffered: observe.Tailer). A
// file read again from its start is the one already read, rewritten by
// the CLI (an unreadable file replaced with the same history): its turns
// are the past. It sends an EvObserved whenever the inferred state changes
// or the file grows (growth is activity: the stall clock), and ends with
// EvSessionEnded when the process is gone (observe.FileObserver).
func (s *Source) Observe(ctx context.Context, es sessions.ExternalSession) (<-chan sessions.Event, error) {
	o := s.newObserver(es)
	return s.RelayProcess(ctx, es, o.Dirs, o.Step)
}

// observer is one Observe loop's memory.
type observer = observe.FileObserver[Chat, Summary, *Summary]

func (s *Source) newObserver(es sessions.ExternalSession) *observer {
	usage := &chatUsage{}
	return observe.NewFileObserver(observe.Files[Chat, Summary, *Summary]{
		Pair: func(pid int) (Chat, bool) { return observe.PairOf(s.scan, pid) },
		Path: func(c Chat) string { return c.Path },
		// tmp/, where the session's project directory appears.
		Before:       s.TmpDir,
		RereadIsPast: true,
		Infer: func(l observe.Look[Chat, *Summary]) sessions.ObservedState {
			ev := Evidence{Liveness: l.Liveness, Chat: l.Following, Summary: *l.Summary, Now: time.Now()}
			if l.Summary.Phase == CallPending && l.Alive {
				ev.Children, ev.ChildrenKnown = s.children(l.PID)
			}
			st, _ := Infer(ev)
			return st
		},
		Prompt: func(sum *Summary) string { return sum.FirstPrompt },
		// The metadata line is read apart: a tail window may start past it.
		SessionID: func(c Chat, sum *Summary) string { return observe.OrDefault(sum.SessionID, c.Meta.SessionID) },
		Gone:      "the Gemini CLI terminal was closed, or it was killed",
		Usage:     usage.reports,
	}, s.ProcessAlive, es)
}
