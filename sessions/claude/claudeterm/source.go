package claudeterm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
	"github.com/session-supervisor/session-supervisor/sessions/procwatch"
)

// Source is the Claude Code terminal source: a sessions.ExternalSource.
type Source struct {
	// ConfigDir is Claude's configuration directory; empty means
	// $CLAUDE_CONFIG_DIR, else ~/.claude.
	ConfigDir string
	// Notify wakes the source at once on a change; nil leaves it to Poll.
	Notify observe.Notify
	// Poll is the safety rescan interval, for a lost notification and for
	// a process that dies without touching its files (default 15 s with
	// Notify, 2 s without).
	Poll time.Duration
	// Probe tells whether a session file's process is alive and the one
	// that wrote it (default ProcessAlive).
	Probe func(SessionFile) (alive, known bool)
	// HookSocket, when set, is where Watch listens for hook events
	// (hookin.go); empty: the files are the only witness.
	HookSocket string

	hubOnce sync.Once
	hub     *hookHub
	// NoProcessTable turns off the process-table fallback for CLIs older
	// than 2.1.224 (ptable.go), which is on by default where supported.
	NoProcessTable bool
	// Table is the process table shared by every terminal source and
	// scanned by one loop (procwatch.Table.Run): such CLIs write no file
	// that would announce them, the table's changes do. nil: a table of
	// the source's own, read every TablePoll.
	Table *procwatch.Table
	// TablePoll is how often the source's own process table is read
	// (default 2 s; unused with a shared Table).
	TablePoll time.Duration
	// TableGrace is how old a process must be before the table lists it
	// (default 5 s): a current CLI writes its session file meanwhile.
	TableGrace time.Duration

	procs observe.ProcLister[ClaudeProc]
	// graceLeft is how long until the youngest CLI left out for its
	// grace is listed (nanoseconds; 0: none waits), from the last list.
	graceLeft atomic.Int64
}

// The agent this source observes: the same CLI the app launches as
// "claude", so a terminal session and a managed one read alike.
func (*Source) Name() string           { return "claude" }
func (*Source) DisplayName() string    { return "Claude Code" }
func (*Source) DefaultCommand() string { return "claude" }
func (*Source) InstallHint() string    { return "npm install -g @anthropic-ai/claude-code" }

var _ sessions.ExternalSource = (*Source)(nil)

func (s *Source) dir() string {
	return observe.HomeDir(s.ConfigDir, os.Getenv("CLAUDE_CONFIG_DIR"), ".claude")
}

// SessionsDir is where the CLI registers its live sessions.
func (s *Source) SessionsDir() string { return filepath.Join(s.dir(), "sessions") }

func (s *Source) poll() time.Duration {
	switch {
	case s.Poll > 0:
		return s.Poll
	case s.Notify != nil:
		// Notifications carry the changes; the rescan only backs them up
		// (a lost event, a process that died without touching its files,
		// which the supervisor's own tick probe notices anyway).
		return 15 * time.Second
	}
	return 2 * time.Second
}

func (s *Source) probe(f SessionFile) (bool, bool) {
	if s.Probe != nil {
		return s.Probe(f)
	}
	return ProcessAlive(f)
}

// wake merges the notifications for dirs, hook events (hooks; nil: none)
// and the safety poll (only while polling answers true; nil: always),
// until stop is called.
func (s *Source) wake(ctx context.Context, dirs []string, hooks <-chan struct{}, polling func() bool) (wake <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	return observe.WakeWhile(ctx, s.Notify, s.poll(), func() []string { return dirs }, hooks, polling), cancel
}

// Watch lists the live interactive sessions now and after every change.
func (s *Source) Watch(ctx context.Context) (<-chan []sessions.ExternalSession, error) {
	dir := s.SessionsDir()
	if s.dir() == "" {
		return nil, fmt.Errorf("no home directory to find Claude Code's sessions in")
	}
	// Hook events are optional: without the socket the files still tell.
	_ = s.listenHooks(ctx)
	sub := s.hookHub().subscribe("*") // SessionStart: discover at once
	also := sub.C()
	// CLIs older than 2.1.224 write no file a notification could report:
	// the process table's changes wake the source, and a CLI younger than
	// its grace is looked at again when the grace ends; without a shared
	// table the source's own is read again every TablePoll.
	var soon func() time.Duration
	if !s.NoProcessTable {
		procs := s.procs.Subscribe(ctx, s.Table, claudeFilter)
		also = observe.Merge(ctx, also, procs.C())
		soon = s.tablePoll
		if s.Table != nil {
			soon = func() time.Duration { return time.Duration(s.graceLeft.Load()) }
		}
	}
	// With notifications the safety rescan is for a listed session whose
	// process died without touching its file: with none listed there is
	// nothing for it to find (a new file, the table's changes and hook
	// events each wake the source), so no timer runs. It is armed after
	// each list that found some, for the poll interval from then.
	var listed atomic.Int64
	polling := func() bool { return s.Notify == nil }
	if s.Notify != nil {
		soon = rescanWhileListed(soon, &listed, s.poll())
	}
	wake, stop := s.wake(ctx, []string{dir}, also, polling)
	context.AfterFunc(ctx, func() {
		stop()
		sub.close()
	})
	return observe.WatchListSooner(ctx, wake, func() ([]sessions.ExternalSession, error) {
		// An unreadable registry (not a directory, no permission) has no
		// files to list, but the process table still has its CLIs; a
		// session missing from one list is not ended by it (its own
		// Observe stream ends it).
		files, _ := ListSessionFiles(dir, s.probe)
		list := make([]sessions.ExternalSession, 0, len(files))
		registered := map[int]bool{}
		for _, f := range files {
			list = append(list, external(f))
			registered[f.PID] = true
		}
		for _, pid := range registeredPIDs(dir) {
			registered[pid] = true // a session file of any kind: not an old CLI
		}
		list = append(list, s.procSessions(registered)...)
		listed.Store(int64(len(list)))
		return list, nil
	}, soon), nil
}

// rescanWhileListed is a Watch's next look after a list: soon's (nil:
// none), or the safety rescan's poll when sooner, while the last list
// found sessions (listed).
func rescanWhileListed(soon func() time.Duration, listed *atomic.Int64, poll time.Duration) func() time.Duration {
	return func() time.Duration {
		var d time.Duration
		if soon != nil {
			d = soon()
		}
		if listed.Load() > 0 && (d <= 0 || poll < d) {
			d = poll
		}
		return d
	}
}

func (s *Source) tablePoll() time.Duration {
	if s.TablePoll > 0 {
		return s.TablePoll
	}
	return 2 * time.Second
}

// registeredPIDs are the pids that have a session file in dir, whatever
// its kind (an SDK run or a background job registers one too).
func registeredPIDs(dir string) []int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".json")); err == nil && strings.HasSuffix(e.Name(), ".json") {
			out = append(out, pid)
		}
	}
	return out
}

func external(f SessionFile) sessions.ExternalSession {
	return sessions.ExternalSession{Key: f.Key(), AgentSessionID: f.SessionID, Cwd: f.Cwd, PID: f.PID, Name: f.Name, StartedAt: f.Started()}
}

// Alive probes the session's process.
func (s *Source) Alive(es sessions.ExternalSession) (bool, bool) {
	f := SessionFile{PID: es.PID, StartedAt: es.StartedAt.UnixMilli()}
	if isProcKey(es.Key) {
		// Found in the process table: its start stamp is exact.
		f.ProcStart = procKeyStamp(es.Key)
	}
	return s.probe(f)
}

// sessionFile re-reads the session's file: the CLI rewrites it in place
// (status, sessionId after /clear). ok is false when it is gone or belongs
// to another process now.
func (s *Source) sessionFile(es sessions.ExternalSession) (SessionFile, bool) {
	f, err := ReadSessionFile(filepath.Join(s.SessionsDir(), fmt.Sprintf("%d.json", es.PID)))
	if err != nil || f.Key() != es.Key {
		return SessionFile{}, false
	}
	return f, true
}

// Mangle is how the CLI names a project directory: every character that is
// not an ASCII letter or digit becomes '-'.
func Mangle(cwd string) string {
	return strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '-'
	}, cwd)
}

// TranscriptPath is where the CLI writes the transcript of sessionID run in
// cwd. Long paths are shortened by the CLI with a hash this code does not
// reproduce: they are found by their file name instead.
func (s *Source) TranscriptPath(cwd, sessionID string) string {
	projects := filepath.Join(s.dir(), "projects")
	p := filepath.Join(projects, Mangle(cwd), sessionID+".jsonl")
	if len(Mangle(cwd)) > 200 {
		if m, _ := filepath.Glob(filepath.Join(projects, "*", sessionID+".jsonl")); len(m) > 0 {
			return m[0]
		}
	}
	return p
}

// headBytes bounds the read of a transcript's head for its first prompt.
const headBytes = 64 << 10

// FirstPrompt reads the first prompt of a transcript from its head.
func FirstPrompt(path string) string {
	fh, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer fh.Close()
	b := make([]byte, headBytes)
	n, _ := fh.Read(b)
	var sum Summary
	for _, line := range bytes.Split(b[:n], []byte("\n")) {
		sum.Feed(line)
		if sum.FirstPrompt != "" {
			return sum.FirstPrompt
		}
	}
	return ""
}

var _ sessions.TurnWitness = (*Source)(nil)

// TurnEnded reads the tail of the transcript of sessionID run in cwd (a
// managed session's too: `claude -p` writes the same file) through the
// rule stack's Summary: ok when its last turn ended (the final assistant
// message, the CLI's turn_duration record, the user's interrupt), at the
// time of the newest record.
func (s *Source) TurnEnded(cwd, sessionID string) (time.Time, bool) {
	if sessionID == "" {
		return time.Time{}, false
	}
	lines, _, err := observe.NewTailer(s.TranscriptPath(cwd, sessionID)).Poll()
	if err != nil {
		return time.Time{}, false
	}
	var sum Summary
	for _, l := range lines {
		sum.Feed(l)
	}
	if !sum.Ended || sum.InTurn || sum.LastAt.IsZero() {
		return time.Time{}, false
	}
	return sum.LastAt, true
}
