// Package terminal observes Codex sessions started in a terminal (the
// interactive `codex` TUI): it finds their processes in the process table,
// pairs each with the rollout file its thread is written to, tails the
// rollout and infers the session's state with an ordered rule stack (a
// sessions.ExternalSource, like sessions/claude/claudeterm).
//
// Codex registers its interactive sessions nowhere, so discovery reads the
// process table (the native `codex` binary, its cwd and start time) and
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-<thread id>.jsonl (whose first
// line names the thread's cwd, creation time and whether a subagent writes
// it). Codex offers no inbox: a stalled or failed terminal session is
// escalated with the evidence, never nudged.
package codexterm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/codex"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// Source is the Codex terminal source: a sessions.ExternalSource of the
// process-table shape (package observe), answering as the agent the app
// launches as "codex", so a terminal session and a managed one read alike
// and "Resume in the background" can start it managed on the same thread.
type Source struct {
	observe.ProcSource[Proc, Rollout]
	observe.Unreachable[codex.Agent]

	// CodexHome is Codex's home; empty means $CODEX_HOME, else ~/.codex.
	CodexHome string

	// metas caches each rollout's first line by path; guarded by the scan.
	metas map[string]Meta
}

var _ sessions.ExternalSource = (*Source)(nil)

// Home is Codex's home directory ("" when there is none to find).
func (s *Source) Home() string {
	return observe.HomeDir(s.CodexHome, os.Getenv("CODEX_HOME"), ".codex")
}

// SessionsDir is where Codex writes its rollouts, one directory a day.
func (s *Source) SessionsDir() string { return filepath.Join(s.Home(), "sessions") }

// tuiFilter finds Codex's TUI in the process table: the native `codex` binary
// (the npm `codex` is a Node wrapper around it), its command line the
// TUI's, with a cwd to read; its home and the rollouts it holds open are
// read for each one listed.
var tuiFilter = observe.ProcFilter[Proc]{
	Comms: []string{"codex"},
	Match: func(p procscan.Proc) bool {
		ok, _, _ := interactive(p.Argv)
		return ok
	},
	Describe: func(p procscan.Proc) (Proc, bool) {
		cwd, _ := procscan.Cwd(p.PID)
		if cwd == "" {
			return Proc{}, false
		}
		_, resume, resuming := interactive(p.Argv)
		return Proc{Proc: observe.Proc{PID: p.PID, Cwd: cwd, Started: p.Started, Home: observe.ProcHome(p.PID, "CODEX_HOME", ".codex")}, ResumeID: resume, Resuming: resuming, Open: procscan.OpenFiles(p.PID, "rollout-*.jsonl")}, true
	},
}

// ScanProcs lists the interactive Codex processes in the process table.
func ScanProcs() ([]Proc, error) { return observe.ScanOnce(tuiFilter) }

// minScan bounds how often the process table and the rollout directories
// are read: Codex writes its logs database under CODEX_HOME many times a
// second during a turn.
const minScan = 500 * time.Millisecond

// scan refreshes the processes and their rollouts unless the last scan is
// recent, and returns them.
func (s *Source) scan() ([]Proc, map[int]Rollout, error) {
	return s.Scan(minScan, tuiFilter, "Codex processes", func(procs []Proc) ([]Proc, map[int]Rollout) {
		procs = observe.OwnHome(procs, s.Home())
		return procs, Pair(procs, s.rollouts(procs))
	})
}

// maxDays bounds how many day directories a scan lists (a process running
// for a week still finds the thread it started with through its open file
// or its resume id).
const maxDays = 7

// rollouts reads the session_meta of every rollout a process could be
// writing: those in the day directories since the oldest process started,
// those the processes hold open, and the threads they resume. Metas are
// cached by path (a rollout's first line never changes).
func (s *Source) rollouts(procs []Proc) []Rollout {
	if s.metas == nil {
		s.metas = map[string]Meta{}
	}
	seen := map[string]bool{}
	var out []Rollout
	add := func(path string, fi os.FileInfo) {
		if seen[path] {
			return
		}
		seen[path] = true
		if fi == nil {
			var err error
			if fi, err = os.Stat(path); err != nil {
				return
			}
		}
		m, ok := s.metas[path]
		if !ok {
			var err error
			if m, err = ReadMeta(path); err != nil {
				return // not written yet, or not a rollout: looked at again next scan
			}
			s.metas[path] = m
		}
		out = append(out, Rollout{Path: path, Meta: m, ModTime: fi.ModTime()})
	}
	if len(procs) == 0 {
		clear(s.metas)
		return nil
	}
	oldest := observe.Oldest(procs, time.Now())
	for _, p := range procs {
		for _, path := range p.Open {
			add(path, nil)
		}
		if p.ResumeID != "" {
			m, _ := filepath.Glob(filepath.Join(s.SessionsDir(), "*", "*", "*", "rollout-*-"+p.ResumeID+".jsonl"))
			for _, path := range m {
				add(path, nil)
			}
		}
	}
	for _, dir := range s.dayDirs(oldest, time.Now()) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if ok, _ := filepath.Match("rollout-*.jsonl", e.Name()); !ok {
				continue
			}
			fi, err := e.Info()
			// A rollout not written since the oldest process started is no
			// live session's (a resumed thread is written to as it
			// resumes): its first line is not even read.
			if err != nil || fi.ModTime().Before(oldest.Add(-observe.PairSlack)) {
				continue
			}
			add(filepath.Join(dir, e.Name()), fi)
		}
	}
	for path := range s.metas {
		if !seen[path] {
			delete(s.metas, path) // gone, or no longer a candidate
		}
	}
	return out
}

// dayDirs are the rollout directories from the day of from to the day of
// to: Codex names them by local time; the UTC day is added so a machine
// whose zone Codex could not read is covered too.
func (s *Source) dayDirs(from, to time.Time) []string {
	if to.Sub(from) > maxDays*24*time.Hour {
		from = to.Add(-maxDays * 24 * time.Hour)
	}
	var out []string
	for d := from.Add(-24 * time.Hour); !d.After(to.Add(24 * time.Hour)); d = d.Add(24 * time.Hour) {
		for _, t := range []time.Time{d.Local(), d.UTC()} {
			dir := filepath.Join(s.SessionsDir(), t.Format("2006"), t.Format("01"), t.Format("02"))
			if !slices.Contains(out, dir) {
				out = append(out, dir)
			}
		}
	}
	return out
}

// today is the day directory a new rollout would be written to.
func (s *Source) today() string {
	t := time.Now()
	return filepath.Join(s.SessionsDir(), t.Format("2006"), t.Format("01"), t.Format("02"))
}

// Watch lists the live interactive sessions now and after every change.
func (s *Source) Watch(ctx context.Context) (<-chan []sessions.ExternalSession, error) {
	if s.Home() == "" {
		return nil, errors.New("no home directory to find Codex's sessions in")
	}
	// CODEX_HOME itself changes when a TUI starts (its logs and state
	// databases); the day directory when a rollout is created.
	wake := s.WatchWake(ctx, tuiFilter, func() []string { return []string{s.Home(), s.SessionsDir(), s.today()} })
	return observe.WatchList(ctx, wake, observe.ListProcs(s.scan, func(p Proc, pairs map[int]Rollout) sessions.ExternalSession {
		return observe.Listed(p.PID, p.Started, p.Cwd, pairs[p.PID].Meta.ID)
	})), nil
}

// ErrNoInbox is Nudge's answer (observe.NoInbox): Codex's TUI has no inbox
// a message could be delivered through, so recovery escalates with the
// evidence (or the user resumes the thread in the background, managed).
var ErrNoInbox error = observe.NoInboxError{Agent: codex.Agent{}.Name()}

// Observe follows one session: its process and its rollout's tail (found
// again at every look: Codex writes it at the first prompt and may
// re-create it, after the trust prompt or /new: its turns are new). It
// sends an EvObserved whenever the inferred state changes or the rollout
// grows (growth is activity: the stall clock), and ends with
// EvSessionEnded when the process is gone (observe.FileObserver).
func (s *Source) Observe(ctx context.Context, es sessions.ExternalSession) (<-chan sessions.Event, error) {
	o := s.newObserver(es)
	return s.RelayProcess(ctx, es, o.Dirs, o.Step)
}

// observer is one Observe loop's memory.
type observer = observe.FileObserver[Rollout, Summary, *Summary]

func (s *Source) newObserver(es sessions.ExternalSession) *observer {
	return observe.NewFileObserver(observe.Files[Rollout, Summary, *Summary]{
		Pair:   func(pid int) (Rollout, bool) { return observe.PairOf(s.scan, pid) },
		Path:   func(r Rollout) string { return r.Path },
		Before: s.today,
		Infer: func(l observe.Look[Rollout, *Summary]) sessions.ObservedState {
			st, _ := Infer(Evidence{Liveness: l.Liveness, Rollout: l.Following, Summary: *l.Summary})
			return st
		},
		Prompt:    func(sum *Summary) string { return sum.FirstPrompt },
		SessionID: func(r Rollout, _ *Summary) string { return r.Meta.ID },
		Gone:      "the Codex terminal was closed, or it was killed",
		Usage:     rolloutUsage,
		// The account's windows from the latest token_count that had
		// them, as a managed session gets them from the app-server.
		RateWindows: func(_ Rollout, sum *Summary) []sessions.RateWindow { return sum.Windows },
	}, s.ProcessAlive, es)
}

// rolloutUsage is the thread's running total against its model, counted
// by thread as a managed Codex session counts it (the same counter: a
// terminal session resumed in the background does not count its past
// again).
func rolloutUsage(r Rollout, sum *Summary) []sessions.UsageReport {
	if sum.Usage == nil || r.Meta.ID == "" {
		return nil
	}
	return []sessions.UsageReport{{Model: observe.OrDefault(sum.Model, "unknown"), Tokens: *sum.Usage, Mode: sessions.UsageCumulative, Counter: r.Meta.ID}}
}
