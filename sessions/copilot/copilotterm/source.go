// Package terminal observes Copilot CLI sessions started in a terminal
// (the interactive `copilot` TUI): it finds their processes in the process
// table, pairs each with its session directory
// ($COPILOT_HOME/session-state/<id>/), tails the directory's events.jsonl
// and infers the session's state with an ordered rule stack (a
// sessions.ExternalSource, like sessions/codex/codexterm).
//
// Copilot registers its interactive sessions nowhere but that directory,
// which every session has (the app's own `copilot -p` turns too), so
// discovery starts from the processes: the native `copilot` binary with a
// terminal on its stdin, never a prompt-mode turn. Each TUI holds
// session-state/<id>/inuse.<pid>.hold open while it has the session, which
// pairs them exactly; a directory without a live TUI is never listed.
// Copilot offers no inbox: a stalled or failed terminal session is
// escalated with the evidence, never nudged.
package copilotterm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/copilot"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// Source is the Copilot terminal source: a sessions.ExternalSource of the
// process-table shape (package observe), answering as the agent the app
// launches as "copilot", so "Resume in the background" starts it managed
// on the same session id.
type Source struct {
	observe.ProcSource[Proc, Workspace]
	observe.Unreachable[copilot.Agent]

	// CopilotHome is Copilot's home; empty means $COPILOT_HOME, else
	// ~/.copilot.
	CopilotHome string

	// spaces caches each session directory's id, cwd and creation by
	// path; guarded by the scan.
	spaces map[string]Workspace
	// starting: a young TUI has no session directory paired yet (it
	// creates the directory, its lock and workspace.yaml in turn as it
	// starts, and only the first is a change Watch is notified of).
	starting atomic.Bool
}

// startupWindow is how long after its start an unpaired TUI is looked at
// again every startupRescan rather than at the next notification or poll.
const (
	startupWindow = 30 * time.Second
	startupRescan = time.Second
)

var _ sessions.ExternalSource = (*Source)(nil)

// Home is Copilot's home directory ("" when there is none to find).
func (s *Source) Home() string {
	return observe.HomeDir(s.CopilotHome, os.Getenv("COPILOT_HOME"), ".copilot")
}

// StateDir holds one directory per session.
func (s *Source) StateDir() string { return filepath.Join(s.Home(), "session-state") }

// kernelNames are the names a native copilot process shows in the table:
// 1.0.102 names its main thread "MainThread" (measured), an older or
// another build keeps its executable's name.
var kernelNames = []string{"MainThread", "copilot"}

// tuiFilter finds Copilot's TUI in the process table: the native binary, not
// a subcommand, reading a terminal (a prompt-mode turn, the app's or
// anyone's, reads a pipe or a file), with a cwd to read; its home and the
// session locks it holds are read for each one listed.
var tuiFilter = observe.ProcFilter[Proc]{
	Comms: kernelNames,
	Match: func(p procscan.Proc) bool {
		ok, _ := Interactive(p.Argv)
		return ok
	},
	Describe: func(p procscan.Proc) (Proc, bool) {
		cwd, _ := procscan.Cwd(p.PID)
		if cwd == "" {
			return Proc{}, false
		}
		if tty, known := procscan.StdinTerminal(p.PID); known && !tty {
			return Proc{}, false
		}
		_, want := Interactive(p.Argv)
		var held []string
		for _, f := range procscan.OpenFiles(p.PID, "inuse.*.hold") {
			held = append(held, filepath.Dir(f))
		}
		return Proc{Proc: observe.Proc{PID: p.PID, Cwd: cwd, Started: p.Started, Home: observe.ProcHome(p.PID, "COPILOT_HOME", ".copilot")}, WantID: want, Held: held}, true
	},
}

// ScanProcs lists the interactive Copilot processes in the process table.
func ScanProcs() ([]Proc, error) { return observe.ScanOnce(tuiFilter) }

// minScan bounds how often the process table and the session directories
// are read: Copilot rewrites files under its home many times during a turn.
const minScan = 500 * time.Millisecond

// scan refreshes the processes and their sessions unless the last scan is
// recent, and returns them.
func (s *Source) scan() ([]Proc, map[int]Workspace, error) {
	return s.Scan(minScan, tuiFilter, "Copilot processes", func(procs []Proc) ([]Proc, map[int]Workspace) {
		procs = observe.OwnHome(procs, s.Home())
		pairs := Pair(procs, s.workspaces(procs))
		// Only a process with its session is listed: the directory exists
		// from the TUI's start, so one without is a subcommand or a
		// process still starting.
		starting := false
		procs = slices.DeleteFunc(procs, func(p Proc) bool {
			_, ok := pairs[p.PID]
			if !ok && time.Since(p.Started) < startupWindow {
				starting = true
			}
			return !ok
		})
		s.starting.Store(starting)
		return procs, pairs
	})
}

// workspaces reads the session directories a process could have: those it
// holds a lock in, the one its command line names, and those changed since
// the oldest process started. A directory's id, cwd and creation never
// change, so they are cached; its modification time is read each scan.
func (s *Source) workspaces(procs []Proc) []Workspace {
	if s.spaces == nil {
		s.spaces = map[string]Workspace{}
	}
	if len(procs) == 0 {
		clear(s.spaces)
		return nil
	}
	seen := map[string]bool{}
	var out []Workspace
	add := func(dir string, fi os.FileInfo) {
		dir = filepath.Clean(dir)
		if seen[dir] {
			return
		}
		seen[dir] = true
		if fi == nil {
			var err error
			if fi, err = os.Stat(dir); err != nil || !fi.IsDir() {
				return
			}
		}
		w, ok := s.spaces[dir]
		if !ok || w.Cwd == "" {
			// Without its workspace.yaml yet a directory is paired by its
			// lock alone, and read again at the next scan.
			w, _ = ReadWorkspace(dir)
			s.spaces[dir] = w
		}
		w.ModTime = fi.ModTime()
		out = append(out, w)
	}
	oldest := observe.Oldest(procs, time.Now())
	for _, p := range procs {
		for _, d := range p.Held {
			if observe.SameDir(filepath.Dir(d), s.StateDir()) {
				add(d, nil)
			}
		}
		if p.WantID != "" {
			add(filepath.Join(s.StateDir(), p.WantID), nil)
		}
	}
	ents, _ := os.ReadDir(s.StateDir())
	for _, e := range ents {
		if !e.IsDir() || !sessionID(e.Name()) {
			continue
		}
		fi, err := e.Info()
		// A directory not changed since the oldest process started is no
		// live session's (a TUI takes its lock in it as it starts).
		if err != nil || fi.ModTime().Before(oldest.Add(-observe.PairSlack)) {
			continue
		}
		add(filepath.Join(s.StateDir(), e.Name()), fi)
	}
	for dir := range s.spaces {
		if !seen[dir] {
			delete(s.spaces, dir)
		}
	}
	return out
}

// Watch lists the live interactive sessions now and after every change.
func (s *Source) Watch(ctx context.Context) (<-chan []sessions.ExternalSession, error) {
	if s.Home() == "" {
		return nil, errors.New("no home directory to find Copilot's sessions in")
	}
	// A starting TUI creates its session directory under session-state.
	wake := s.WatchWake(ctx, tuiFilter, func() []string { return []string{s.Home(), s.StateDir()} })
	soon := func() time.Duration {
		if s.starting.Load() {
			return startupRescan
		}
		return 0
	}
	return observe.WatchListSooner(ctx, wake, observe.ListProcs(s.scan, func(p Proc, pairs map[int]Workspace) sessions.ExternalSession {
		w := pairs[p.PID]
		return observe.Listed(p.PID, p.Started, observe.OrDefault(w.Cwd, p.Cwd), w.ID)
	}), soon), nil
}

// ErrNoInbox is Nudge's answer (observe.NoInbox): Copilot's TUI has no
// inbox a message could be delivered through, so recovery escalates with
// the evidence (or the user resumes the session in the background, managed).
var ErrNoInbox error = observe.NoInboxError{Agent: copilot.Agent{}.Name()}

// Observe follows one session: its process and its events file's tail
// (found again at every look: /new or a resumed session moves the TUI to
// another directory). Events written before following began are the past;
// a file that appears later (at the first prompt) is all news, and so is
// another session the TUI moved to, unless it is the first found (a
// resumed session's past). It sends an EvObserved whenever the inferred
// state changes or the file grows (growth is activity: the stall clock),
// and ends with EvSessionEnded when the process is gone
// (observe.FileObserver).
func (s *Source) Observe(ctx context.Context, es sessions.ExternalSession) (<-chan sessions.Event, error) {
	o := s.newObserver(es)
	return s.RelayProcess(ctx, es, o.Dirs, o.Step)
}

// observer is one Observe loop's memory.
type observer = observe.FileObserver[Workspace, Summary, *Summary]

func (s *Source) newObserver(es sessions.ExternalSession) *observer {
	return observe.NewFileObserver(observe.Files[Workspace, Summary, *Summary]{
		Pair:        func(pid int) (Workspace, bool) { return observe.PairOf(s.scan, pid) },
		Path:        Workspace.Events,
		Before:      s.StateDir,
		FoundIsPast: true,
		Infer: func(l observe.Look[Workspace, *Summary]) sessions.ObservedState {
			exists := l.Following && (l.Summary.Records > 0 || l.Lines > 0)
			st, _ := Infer(Evidence{Liveness: l.Liveness, Events: exists, Summary: *l.Summary})
			return st
		},
		Prompt: func(sum *Summary) string { return sum.FirstPrompt },
		// The directory's name is the id `copilot --resume` takes.
		SessionID: func(w Workspace, sum *Summary) string { return observe.OrDefault(w.ID, sum.SessionID) },
		Gone:      "the Copilot terminal was closed, or it was killed",
		Usage:     usageReports,
		// A spent weekly limit, as a managed session reports it.
		RateWindows: func(_ Workspace, sum *Summary) []sessions.RateWindow { return sum.Windows },
	}, s.ProcessAlive, es)
}
