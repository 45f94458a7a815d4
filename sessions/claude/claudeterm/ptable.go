package claudeterm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/procscan"
)

// The process-table fallback, for Claude Code older than 2.1.224, which
// registers no session file: a `claude` process found in the process table
// (its command line, its cwd, its start time) is paired with the newest
// transcript of its cwd written since it started, and observed with the
// same tailer and rule stack. It has no inbox socket, so nothing can be
// delivered to it (CanNudge is false): recovery escalates instead. Its end
// cannot be told apart (a clean exit and a kill both just remove the
// process), so a turn cut short by it is Interrupted.
//
// The table is read through sessions/procscan: Linux only (/proc);
// elsewhere the table is not probed and such sessions are not seen
// (ErrProcessTableNotProbed).

// ErrProcessTableNotProbed: this platform's process table is not read.
var ErrProcessTableNotProbed = procscan.ErrNotProbed

// procKeyPrefix marks the key of a session found in the process table:
// "proc-<pid>-<start stamp>" (the pid and its platform start stamp: a later
// process reusing the pid has another stamp).
const procKeyPrefix = "proc-"

// ClaudeProc is one interactive `claude` process found in the process table.
type ClaudeProc struct {
	PID int
	Cwd string
	// Stamp is the platform's start stamp (procscan.Proc.Stamp).
	Stamp   string
	Started time.Time
	// ConfigDir is the configuration directory the process writes to
	// ($CLAUDE_CONFIG_DIR, else $HOME/.claude, from its environment): its
	// transcripts are there, so only a source watching that directory
	// observes it.
	ConfigDir string
}

// configDirOf is the Claude configuration directory of a process
// environment (KEY=VALUE each, as procscan.Environ reads it).
func configDirOf(environ []string) string {
	var home string
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "CLAUDE_CONFIG_DIR="); ok && v != "" {
			return filepath.Clean(v)
		}
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".claude")
}

// Key is the session's identity while its process lives.
func (p ClaudeProc) Key() string { return fmt.Sprintf("%s%d-%s", procKeyPrefix, p.PID, p.Stamp) }

// isProcKey reports whether key names a session found in the process table.
func isProcKey(key string) bool { return strings.HasPrefix(key, procKeyPrefix) }

// procKeyStamp is the start stamp a process-table key carries.
func procKeyStamp(key string) string {
	rest := strings.TrimPrefix(key, procKeyPrefix)
	_, stamp, _ := strings.Cut(rest, "-")
	return stamp
}

// interactiveClaude reports whether a command line is an interactive Claude
// Code CLI: the `claude` executable (or the npm package's cli.js under
// node), not a headless run (-p/--print: an SDK run or the app's own
// managed sessions) and not a one-shot subcommand.
func interactiveClaude(comm string, argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	args := argv[1:]
	base := filepath.Base(argv[0])
	switch {
	case base == "claude" || base == "claude.exe":
	case (base == "node" || base == "bun") && len(argv) > 1 && strings.HasSuffix(argv[1], filepath.Join("claude-code", "cli.js")):
		args = argv[2:]
	case comm == "claude" && len(argv) == 1:
		// A node CLI that set its process title to "claude" rewrote its
		// command line to that one word.
	default:
		return false
	}
	for i, a := range args {
		switch a {
		case "-p", "--print", "-v", "--version", "-h", "--help":
			return false
		}
		if i == 0 && !strings.HasPrefix(a, "-") {
			switch a {
			case "mcp", "config", "doctor", "update", "install", "migrate-installer", "setup-token", "plugin", "api-key":
				return false
			}
		}
	}
	return true
}

// ListClaudeProcs reads the process table for interactive Claude Code CLIs
// of this user: every process whose comm says claude (one small read per
// process; the rest only for those), then its command line, start and cwd.
// Another user's processes are skipped (their cwd cannot be read).
func ListClaudeProcs() ([]ClaudeProc, error) { return scanClaudeProcs(nil) }

// scanClaudeProcs is ListClaudeProcs; known, when set, is told every pid
// seen and whether it was a candidate, and may skip one (its remembered
// verdict still holds). The reads go cheapest first (comm, then the
// command line) so a process that is not a claude costs one small read.
func scanClaudeProcs(known procMemo) ([]ClaudeProc, error) {
	pids, err := procscan.PIDs()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []ClaudeProc
	for _, pid := range pids {
		if pid == self {
			continue
		}
		if known != nil && known.skip(pid) {
			continue
		}
		c, ok := procscan.Comm(pid)
		if !ok {
			continue
		}
		// A native CLI is named claude; an npm one runs under node (and
		// usually retitles itself claude).
		if c != "claude" && c != "claude.exe" && c != "node" && c != "bun" {
			if known != nil {
				known.notClaude(pid)
			}
			continue
		}
		argv, ok := procscan.Cmdline(pid)
		if !ok || !interactiveClaude(c, argv) {
			continue
		}
		p, st := procscan.Probe(pid)
		if st != procscan.Running {
			continue
		}
		cwd, err := procscan.Cwd(pid)
		if err != nil {
			continue
		}
		env, err := procscan.Environ(pid)
		if err != nil {
			continue
		}
		out = append(out, ClaudeProc{PID: pid, Cwd: cwd, Stamp: p.Stamp, Started: p.Started, ConfigDir: configDirOf(env)})
	}
	return out, nil
}

// procSession is the session file the process table stands in for: the
// process, and the newest transcript of its cwd written since it started
// (its own sessionId is in that file's name; /clear starts another file,
// which then is the newest).
func (s *Source) procSession(p ClaudeProc) SessionFile {
	f := SessionFile{PID: p.PID, Cwd: p.Cwd, StartedAt: p.Started.UnixMilli(), ProcStart: p.Stamp, Kind: "interactive", Entrypoint: "cli"}
	f.SessionID = newestTranscript(filepath.Join(s.dir(), "projects", Mangle(p.Cwd)), p.Started.Add(-startSlack))
	return f
}

// newestTranscript is the id of the newest *.jsonl in dir modified at or
// after since ("" when there is none yet: the CLI writes its transcript at
// the first prompt).
func newestTranscript(dir string, since time.Time) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var best string
	var bestAt time.Time
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		fi, err := e.Info()
		if err != nil || fi.ModTime().Before(since) {
			continue
		}
		if best == "" || fi.ModTime().After(bestAt) {
			best, bestAt = strings.TrimSuffix(name, ".jsonl"), fi.ModTime()
		}
	}
	return best
}

// procMemo lets a scan skip the processes an earlier scan found not to be
// a claude (by their comm): reading every process's comm is most of a
// scan's cost (about 30 µs each on a loaded machine).
type procMemo interface {
	skip(pid int) bool
	notClaude(pid int)
}

// recheckAfter is how long a process found not to be a claude is not read
// again: a process becomes one only by exec'ing it (a wrapper script's
// `exec claude`), which this many seconds of delay tolerates.
const recheckAfter = 30 * time.Second

// procTable is the memory behind a Source's scans (one Watch at a time
// scans; the lock is for a second one).
type procTable struct {
	mu  sync.Mutex
	not map[int]time.Time
}

// prune forgets verdicts past their recheck (their process may be gone).
func (t *procTable) prune(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for pid, at := range t.not {
		if now.Sub(at) >= recheckAfter {
			delete(t.not, pid)
		}
	}
}

// memo is the memory for one scan at now.
func (t *procTable) memo(now time.Time) procMemo { return tableScan{t, now} }

type tableScan struct {
	t   *procTable
	now time.Time
}

func (m tableScan) skip(pid int) bool {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	at, ok := m.t.not[pid]
	if ok && m.now.Sub(at) >= recheckAfter {
		delete(m.t.not, pid) // read it again (and forget pids that are gone)
		return false
	}
	return ok
}

func (m tableScan) notClaude(pid int) {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	if m.t.not == nil {
		m.t.not = map[int]time.Time{}
	}
	m.t.not[pid] = m.now
}

// registerGrace is how long a new process is given to write its session
// file before it counts as an older CLI that writes none: a current CLI
// registers within about a second of its start, and one found in the
// table meanwhile would be listed twice.
const registerGrace = 5 * time.Second

func (s *Source) tableGrace() time.Duration {
	if s.TableGrace > 0 {
		return s.TableGrace
	}
	return registerGrace
}

// procSessions lists the interactive CLIs of the process table that have no
// session file (those are listed from their files), as external sessions.
func (s *Source) procSessions(registered map[int]bool) []sessions.ExternalSession {
	if s.NoProcessTable {
		return nil
	}
	procs, err := scanClaudeProcs(s.table.memo(time.Now()))
	s.table.prune(time.Now())
	if err != nil {
		return nil
	}
	var out []sessions.ExternalSession
	dir := filepath.Clean(s.dir())
	now := time.Now()
	for _, p := range procs {
		if registered[p.PID] || p.ConfigDir != dir || now.Sub(p.Started) < s.tableGrace() {
			continue
		}
		f := s.procSession(p)
		out = append(out, sessions.ExternalSession{Key: p.Key(), AgentSessionID: f.SessionID, Cwd: p.Cwd, PID: p.PID, StartedAt: p.Started})
	}
	return out
}

// current re-reads what stands for es's session file: its file, or for a
// session found in the process table, the process and its newest
// transcript. A process-table session whose process is gone keeps prev, so
// the observer's liveness probe (not a missing file, which would mean a
// clean exit) ends it.
func (s *Source) current(es sessions.ExternalSession, prev SessionFile) (SessionFile, bool) {
	if !isProcKey(es.Key) {
		return s.sessionFile(es)
	}
	p, st := procscan.Probe(es.PID)
	if st != procscan.Running || p.Stamp != procKeyStamp(es.Key) {
		if prev.PID == 0 {
			return SessionFile{}, false
		}
		return prev, true
	}
	cwd := es.Cwd
	if c, err := procscan.Cwd(es.PID); err == nil {
		cwd = c
	}
	return s.procSession(ClaudeProc{PID: es.PID, Cwd: cwd, Stamp: p.Stamp, Started: es.StartedAt}), true
}
