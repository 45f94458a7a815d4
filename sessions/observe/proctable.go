package observe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
	"github.com/session-supervisor/session-supervisor/sessions/procwatch"
)

// The process-table source shape: Codex, Copilot and Gemini register their
// interactive sessions nowhere, so their sources find the agent's TUI
// processes in the process table, pair each with the file its session is
// written to, and tail that file. What is the same for all of them lives
// here; an agent's package fills in its scan, its pairing and its summary.

// AgentInfo answers for a terminal source with the identity of the managed
// agent A (its zero value), so a terminal session and a managed one read
// alike and "Resume in the background" starts the same agent. Embed it.
type AgentInfo[A sessions.AgentInfo] struct{}

func (AgentInfo[A]) Name() string           { var a A; return a.Name() }
func (AgentInfo[A]) DisplayName() string    { var a A; return a.DisplayName() }
func (AgentInfo[A]) DefaultCommand() string { var a A; return a.DefaultCommand() }
func (AgentInfo[A]) InstallHint() string    { var a A; return a.InstallHint() }

// Unreachable is the identity of agent A (AgentInfo) and no inbox
// (NoInbox): what a terminal source that cannot reach its sessions embeds.
type Unreachable[A sessions.AgentInfo] struct {
	AgentInfo[A]
	NoInbox[A]
}

// NoInboxError is Nudge's answer for an agent whose TUI offers no inbox a
// message could be delivered through. It is a comparable value, so a
// package's ErrNoInbox equals what its Nudge returns.
type NoInboxError struct{ Agent string }

func (e NoInboxError) Error() string {
	return e.Agent + ": a session started in a terminal has no inbox to deliver a nudge through"
}

// NoInbox gives a source of agent A's terminal sessions CanNudge false and
// a Nudge that fails with NoInboxError: recovery escalates with the
// evidence (or the user resumes the session in the background, managed).
// Embed it.
type NoInbox[A sessions.AgentInfo] struct{}

// CanNudge is false: nothing reaches the terminal.
func (NoInbox[A]) CanNudge(sessions.ExternalSession) bool { return false }

// Nudge cannot reach the terminal session.
func (NoInbox[A]) Nudge(context.Context, sessions.ExternalSession, string, bool) error {
	var a A
	return NoInboxError{Agent: a.Name()}
}

// HomeDir is an agent's home directory: set when the source was given one,
// else env (an environment variable's value, "" when unset), else dot
// under the user's home ("" when there is none to find).
func HomeDir(set, env, dot string) string {
	if set != "" {
		return set
	}
	if env != "" {
		return env
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, dot)
}

// ProcHome is the home an agent's process runs with: envVar in its
// environment, else dot under its HOME ("" when its environment cannot be
// read: another user's process).
func ProcHome(pid int, envVar, dot string) string {
	if home, ok := procscan.Env(pid, envVar); ok {
		return home
	}
	if h, ok := procscan.Env(pid, "HOME"); ok {
		return filepath.Join(h, dot)
	}
	return ""
}

// SameDir tells whether a and b name the same directory (both known).
func SameDir(a, b string) bool {
	return a != "" && b != "" && filepath.Clean(a) == filepath.Clean(b)
}

// Proc is what every process-table source knows of one of its agent's
// live interactive processes; an agent's own Proc embeds it and adds what
// its command line and open files say.
type Proc struct {
	PID     int
	Cwd     string
	Started time.Time
	// Home is the agent's home the process runs with ("" when its
	// environment cannot be read): a TUI of another home is not the
	// source's (OwnHome).
	Home string
}

// Process is the embedded Proc itself (for generic code over an agent's
// Proc).
func (p Proc) Process() Proc { return p }

// OwnHome drops the processes of another home than home (one whose home
// could not be read is kept).
func OwnHome[P interface{ Process() Proc }](procs []P, home string) []P {
	return slices.DeleteFunc(procs, func(p P) bool { h := p.Process().Home; return h != "" && !SameDir(h, home) })
}

// Oldest is the earliest start of procs (now when none is known): files
// not written since then are no live session's.
func Oldest[P interface{ Process() Proc }](procs []P, now time.Time) time.Time {
	oldest := now
	for _, p := range procs {
		if s := p.Process().Started; !s.IsZero() && s.Before(oldest) {
			oldest = s
		}
	}
	return oldest
}

// SessionFile is a file a session is written to, found by a scan: its
// path, what its first line says (M: the agent's metadata) and its last
// write.
type SessionFile[M any] struct {
	Path    string
	Meta    M
	ModTime time.Time
}

// PairSlack is how much earlier than its process's start a session's file
// may say the session began: the process's start is to the clock tick, the
// file's timestamp to the millisecond (the other way round is the usual
// order).
const PairSlack = 2 * time.Second

// Key is a process-table session's identity for as long as its process
// lives: the pid and its start (a later process reusing the pid starts
// later).
func Key(pid int, started time.Time) string { return fmt.Sprintf("%d-%d", pid, started.UnixMilli()) }

// PollInterval is a source's rescan interval: poll when set, else 5 s with
// notifications (they wake it sooner) and 2 s without. The poll is needed
// even with notifications: a process can exit without touching a file.
func PollInterval(poll time.Duration, notified bool) time.Duration {
	switch {
	case poll > 0:
		return poll
	case notified:
		return 5 * time.Second
	}
	return 2 * time.Second
}

// ProbeProcess tells whether the process that started at started still
// runs, with probe when the source was given one (a test's), else
// procscan.Alive.
func ProbeProcess(probe func(pid int, started time.Time) (alive, known bool), pid int, started time.Time) (alive, known bool) {
	if probe != nil {
		return probe(pid, started)
	}
	return procscan.Alive(pid, started)
}

// ProcTable keeps a source's last look at the process table: its
// processes P and the file F paired with each pid. Reading the table and
// the agent's directories costs, and the agents rewrite files under their
// home many times a second during a turn, so a recent scan is answered
// from memory. The zero value is ready.
type ProcTable[P, F any] struct {
	mu    sync.Mutex
	last  time.Time
	procs []P
	pairs map[int]F
	err   error
}

// Scan returns the processes and their pairs, running scan unless the last
// scan is younger than maxAge. scan runs under the table's lock, so the
// caches it keeps need no lock of their own; its error is kept (and
// answered) until the next scan.
func (t *ProcTable[P, F]) Scan(now time.Time, maxAge time.Duration, scan func() ([]P, map[int]F, error)) ([]P, map[int]F, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() && now.Sub(t.last) < maxAge {
		if t.err != nil {
			return nil, nil, t.err
		}
		return t.procs, t.pairs, nil
	}
	t.last = now
	procs, pairs, err := scan()
	if t.err = err; err != nil {
		// The last good pairing stays (Paired): the observers keep
		// watching their files until a scan succeeds again.
		return nil, nil, err
	}
	t.procs, t.pairs = procs, pairs
	return procs, pairs, nil
}

// Forget makes the next Scan scan, however recent the last one.
func (t *ProcTable[P, F]) Forget() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = time.Time{}
}

// Pairs is the pairing of the last scan, without scanning (nil before the
// first).
func (t *ProcTable[P, F]) Pairs() map[int]F {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pairs
}

// Ended is the event that closes a process-table session: its process is
// gone (how says what the user saw, e.g. "the Codex terminal was closed,
// or it was killed").
func Ended(pid int, how string) sessions.Event {
	return sessions.Event{Kind: sessions.EvSessionEnded, Detail: fmt.Sprintf("process %d is gone (%s)", pid, how)}
}

// ListProcs turns a process-table scan into a Watch list (for WatchList):
// one session per scanned process, described by entry from the process
// and the pairing; a failed scan fails the list (skipped until the next
// wake).
func ListProcs[P, F any](scan func() ([]P, map[int]F, error), entry func(P, map[int]F) sessions.ExternalSession) func() ([]sessions.ExternalSession, error) {
	return func() ([]sessions.ExternalSession, error) {
		procs, pairs, err := scan()
		if err != nil {
			return nil, err
		}
		list := make([]sessions.ExternalSession, 0, len(procs))
		for _, p := range procs {
			list = append(list, entry(p, pairs))
		}
		return list, nil
	}
}

// Listed is a process-table session as Watch lists it: keyed on its pid
// and start (Key), with the agent's session id when its file was paired
// ("" until then).
func Listed(pid int, started time.Time, cwd, agentSessionID string) sessions.ExternalSession {
	return sessions.ExternalSession{Key: Key(pid, started), AgentSessionID: agentSessionID, Cwd: cwd, PID: pid, StartedAt: started}
}

// ProcFilter is an agent's half of reading the process table: Match
// chooses its TUI's processes by what the shared table keeps of each (the
// kernel's name, the command line, the parent, the start: procwatch.Proc),
// Describe reads what else the source needs of a chosen one (its cwd, its
// home, the files it holds open), false leaving it out.
type ProcFilter[P any] struct {
	// Comms are the kernel names the agent's processes may have (nil:
	// any); the table reads the command line of those only, and Match
	// sees no other.
	Comms    []string
	Match    func(procscan.Proc) bool
	Describe func(procscan.Proc) (P, bool)
}

// describe lists what Describe keeps of procs, each read again first and
// kept only if it is still the same process and still matches: the table
// may be a scan old, and a process caught between a fork and its exec
// shows its parent's name and command line (a TUI's tool, for a moment,
// looks like the TUI).
func (f ProcFilter[P]) describe(t *procwatch.Table, procs []procscan.Proc) []P {
	var out []P
	for _, p := range procs {
		now, ok := t.Current(p)
		if !ok || f.Comms != nil && !slices.Contains(f.Comms, now.Comm) || !f.Match(now) {
			continue
		}
		if d, ok := f.Describe(now); ok {
			out = append(out, d)
		}
	}
	return out
}

// ScanOnce is one read of the process table with a table of its own: the
// processes f keeps (what a test or a benchmark of an agent's scan asks).
func ScanOnce[P any](f ProcFilter[P]) ([]P, error) {
	t := procwatch.New(procwatch.System())
	sub := t.Subscribe(f.Comms, f.Match)
	defer sub.Close()
	if err := t.Scan(); err != nil && !errors.Is(err, procscan.ErrNotProbed) {
		return nil, err
	}
	return f.describe(t, sub.Procs()), nil
}

// freshAge is how recent the shared table's last scan must be when a
// source lists its processes: a source woken by its files (a TUI starting
// writes under its home) looks at once, the fast path; the loop lists
// within 2 s of a new process, else every 10 s (procwatch.DefaultSlow,
// the safety net).
const freshAge = 500 * time.Millisecond

// ProcSource is the common half of a process-table source: its
// configuration and what it does with it (the wake-up, the pid probe, the
// throttled scan). An agent's Source embeds it and adds its own half: the
// process filter, the pairing with files and the summary of a file.
type ProcSource[P, F any] struct {
	// Notify wakes the source at once on a change in the agent's
	// directories (the fsnotify adapter, package watch); nil leaves it to
	// Poll.
	Notify Notify
	// Poll is the rescan interval: a process can exit without touching a
	// file (default 5 s with Notify, 2 s without: PollInterval). With a
	// shared Table it runs only while the agent has processes: the table
	// wakes the source when one appears or goes.
	Poll time.Duration
	// Table is the process table the source's processes come from, shared
	// by every terminal source and scanned by one loop
	// (procwatch.Table.Run); nil: a table of the source's own, scanned
	// when the source lists (at every wake).
	Table *procwatch.Table
	// Procs lists the agent's live interactive processes (default: the
	// agent's filter over the table; a test's fake table).
	Procs func() ([]P, error)
	// Probe tells whether the process that started at started still runs
	// (default procscan.Alive).
	Probe func(pid int, started time.Time) (alive, known bool)

	table ProcTable[P, F]
	procs ProcLister[P]
}

// ProcLister reads an agent's processes from a process table: a shared
// one when given, else one of its own, made at the first use. The zero
// value is ready.
type ProcLister[P any] struct {
	mu     sync.Mutex
	own    *procwatch.Table
	lister *procwatch.Sub
}

// Table is shared when set, else the lister's own table.
func (l *ProcLister[P]) Table(shared *procwatch.Table) *procwatch.Table {
	if shared != nil {
		return shared
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.own == nil {
		l.own = procwatch.New(procwatch.System())
	}
	return l.own
}

// List lists the agent's processes (f) from the table, described by f:
// the shared table is scanned first only when its last scan is older than
// freshAge (its loop keeps it current), the lister's own at every list. A
// platform whose table is not read lists none.
func (l *ProcLister[P]) List(shared *procwatch.Table, f ProcFilter[P]) ([]P, error) {
	t := l.Table(shared)
	l.mu.Lock()
	if l.lister == nil {
		l.lister = t.Subscribe(f.Comms, f.Match)
	}
	sub := l.lister
	l.mu.Unlock()
	maxAge := freshAge
	if shared == nil {
		maxAge = 0
	}
	if err := t.Fresh(maxAge); err != nil {
		if errors.Is(err, procscan.ErrNotProbed) {
			return nil, nil
		}
		return nil, err
	}
	return f.describe(t, sub.Procs()), nil
}

// Subscribe is a subscription to the table's changes of the agent's
// processes (f.Match) for as long as ctx lasts.
func (l *ProcLister[P]) Subscribe(ctx context.Context, shared *procwatch.Table, f ProcFilter[P]) *procwatch.Sub {
	sub := l.Table(shared).Subscribe(f.Comms, f.Match)
	context.AfterFunc(ctx, sub.Close)
	return sub
}

// WatchWake is a Watch loop's wake-up: the notifications for dirs (asked
// again after every wake), the table's changes of the agent's processes
// (f.Match) and the rescan interval; with a shared Table the rescan runs
// only while the agent has processes.
func (s *ProcSource[P, F]) WatchWake(ctx context.Context, f ProcFilter[P], dirs func() []string) <-chan struct{} {
	sub := s.procs.Subscribe(ctx, s.Table, f)
	var polling func() bool
	if s.Table != nil && s.Procs == nil {
		polling = func() bool { return len(sub.Procs()) > 0 }
	}
	return WakeWhile(ctx, s.Notify, PollInterval(s.Poll, s.Notify != nil), dirs, sub.C(), polling)
}

// Wake merges the notifications for dirs with the rescan interval; dirs is
// asked again after every wake (Wake).
func (s *ProcSource[P, F]) Wake(ctx context.Context, dirs func() []string) <-chan struct{} {
	return Wake(ctx, s.Notify, PollInterval(s.Poll, s.Notify != nil), dirs)
}

// ProcessAlive probes the process that started at started (Probe, else
// procscan.Alive).
func (s *ProcSource[P, F]) ProcessAlive(pid int, started time.Time) (alive, known bool) {
	return ProbeProcess(s.Probe, pid, started)
}

// Alive probes the session's process (sessions.ExternalSource).
func (s *ProcSource[P, F]) Alive(es sessions.ExternalSession) (alive, known bool) {
	return s.ProcessAlive(es.PID, es.StartedAt)
}

// Scan lists the processes (Procs, else the table through f) and pairs
// them with pair (which may also drop processes: another home's, one not
// yet paired), unless the last scan is younger than maxAge. what names the
// processes in the error ("Codex processes"). pair runs under the table's
// lock: the caches it keeps need no lock of their own.
func (s *ProcSource[P, F]) Scan(maxAge time.Duration, f ProcFilter[P], what string, pair func([]P) ([]P, map[int]F)) ([]P, map[int]F, error) {
	return s.table.Scan(time.Now(), maxAge, func() ([]P, map[int]F, error) {
		list := s.Procs
		if list == nil {
			list = func() ([]P, error) { return s.procs.List(s.Table, f) }
		}
		procs, err := list()
		if err != nil {
			return nil, nil, fmt.Errorf("listing %s: %w", what, err)
		}
		procs, pairs := pair(procs)
		return procs, pairs, nil
	})
}

// Rescan makes the next Scan read the table, however recent the last one.
func (s *ProcSource[P, F]) Rescan() { s.table.Forget() }

// Paired is the pairing of the last scan, without scanning.
func (s *ProcSource[P, F]) Paired() map[int]F { return s.table.Pairs() }

// RelayProcess starts a process-table session's observe loop: look (one
// step of the agent's observer) now and after every wake of dirs, until it
// says the process is gone or ctx ends (Relay). A session without a
// process has nothing to follow.
func (s *ProcSource[P, F]) RelayProcess(ctx context.Context, es sessions.ExternalSession, dirs func() []string, look func() ([]sessions.Event, bool)) (<-chan sessions.Event, error) {
	if es.PID <= 0 {
		return nil, fmt.Errorf("session %s: no process to follow", es.Key)
	}
	out := make(chan sessions.Event, 8)
	go Relay(ctx, s.Wake(ctx, dirs), look, out)
	return out, nil
}

// PairOf is the file scan paired with the process pid, if any (a failed
// scan pairs none): what an observer follows.
func PairOf[P, F any](scan func() ([]P, map[int]F, error), pid int) (F, bool) {
	_, pairs, err := scan()
	if err != nil {
		var none F
		return none, false
	}
	f, ok := pairs[pid]
	return f, ok
}
