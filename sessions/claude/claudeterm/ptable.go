package claudeterm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
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

// claudeFilter finds the interactive Claude Code CLIs in the process
// table: a native CLI is named claude; an npm one runs under node (and
// usually retitles itself claude), then its command line says which. Its
// cwd and environment (the configuration directory it writes to) are read
// for each one listed; another user's processes are skipped (their cwd
// cannot be read).
var claudeFilter = observe.ProcFilter[ClaudeProc]{
	Comms: []string{"claude", "claude.exe", "node", "bun"},
	Match: func(p procscan.Proc) bool {
		return p.PID != os.Getpid() && interactiveClaude(p.Comm, p.Argv)
	},
	Describe: func(p procscan.Proc) (ClaudeProc, bool) {
		cwd, err := procscan.Cwd(p.PID)
		if err != nil {
			return ClaudeProc{}, false
		}
		env, err := procscan.Environ(p.PID)
		if err != nil {
			return ClaudeProc{}, false
		}
		return ClaudeProc{PID: p.PID, Cwd: cwd, Stamp: p.Stamp, Started: p.Started, ConfigDir: configDirOf(env)}, true
	},
}

// ListClaudeProcs reads the process table for interactive Claude Code CLIs
// of this user.
func ListClaudeProcs() ([]ClaudeProc, error) { return observe.ScanOnce(claudeFilter) }

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
// It keeps when the youngest one left out passes its grace (graceAt).
func (s *Source) procSessions(registered map[int]bool) []sessions.ExternalSession {
	if s.NoProcessTable {
		return nil
	}
	procs, err := s.procs.List(s.Table, claudeFilter)
	if err != nil {
		return nil
	}
	var out []sessions.ExternalSession
	dir := filepath.Clean(s.dir())
	now := time.Now()
	var next time.Duration
	for _, p := range procs {
		if registered[p.PID] || p.ConfigDir != dir {
			continue
		}
		if left := s.tableGrace() - now.Sub(p.Started); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		f := s.procSession(p)
		out = append(out, sessions.ExternalSession{Key: p.Key(), AgentSessionID: f.SessionID, Cwd: p.Cwd, PID: p.PID, StartedAt: p.Started})
	}
	s.graceLeft.Store(int64(next))
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
