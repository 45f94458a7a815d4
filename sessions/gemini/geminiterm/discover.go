package geminiterm

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Proc is a live interactive Gemini CLI process: the Node process running
// the CLI's bundle (by default the CLI relaunches itself once with a larger
// heap; the relaunched child is the session, its parent only waits for it).
// Its Home is $GEMINI_CLI_HOME/.gemini, else $HOME/.gemini.
type Proc struct {
	observe.Proc
	// ResumeID is the session `--resume <uuid>` or `--session-id <uuid>`
	// names ("" otherwise).
	ResumeID string
	// Resuming: `--resume latest` or an index: an older session of the
	// cwd, written to since the process started.
	Resuming bool
	// parent is the process's parent: a launcher waiting for its
	// relaunched child is no session (dropLaunchers).
	parent int
}

// notInteractive are the flags and subcommands (0.61.0 `gemini --help`)
// that make a process something other than a terminal session: the app's
// own managed sessions (--acp), headless runs (-p), and commands that print
// and exit.
var notInteractive = map[string]bool{
	"--acp": true, "--experimental-acp": true, "-p": true, "--prompt": true,
	"-v": true, "--version": true, "-h": true, "--help": true, "-l": true, "--list-extensions": true,
	"--list-sessions": true, "--delete-session": true,
	"mcp": true, "extensions": true, "extension": true, "skills": true, "skill": true,
	"hooks": true, "hook": true, "gemma": true,
}

// valueFlags take a separate value, which is not mistaken for a subcommand.
var valueFlags = map[string]bool{
	"-m": true, "--model": true, "-i": true, "--prompt-interactive": true, "-w": true, "--worktree": true,
	"--approval-mode": true, "--policy": true, "--admin-policy": true, "--allowed-mcp-server-names": true,
	"--allowed-tools": true, "-e": true, "--extensions": true, "-r": true, "--resume": true,
	"--session-file": true, "--session-id": true, "--include-directories": true, "-o": true, "--output-format": true,
}

// IsGeminiScript reports whether path is the Gemini CLI's entry point as
// Node runs it: the npm bin link (…/.bin/gemini, …/bin/gemini) or the
// bundle itself (…/@google/gemini-cli/bundle/gemini.js).
func IsGeminiScript(path string) bool {
	base := filepath.Base(path)
	return base == "gemini" || base == "gemini.js" && strings.Contains(filepath.ToSlash(path), "gemini-cli/")
}

// Interactive reads a Node command line: whether it runs the Gemini CLI's
// TUI, and the session it resumes. argv[0] is node; its own options come
// before the script (the relaunch adds --max-old-space-size=N).
func Interactive(argv []string) (ok bool, resumeID string, resuming bool) {
	if len(argv) < 2 || !strings.HasPrefix(filepath.Base(argv[0]), "node") {
		return false, "", false
	}
	i := 1
	for i < len(argv) && strings.HasPrefix(argv[i], "-") {
		i++
	}
	if i >= len(argv) || !IsGeminiScript(argv[i]) {
		return false, "", false
	}
	args := argv[i+1:]
	for j := 0; j < len(args); j++ {
		a := args[j]
		name, val, hasVal := strings.Cut(a, "=")
		if notInteractive[name] {
			return false, "", false
		}
		if !valueFlags[name] {
			continue
		}
		if !hasVal {
			if j+1 >= len(args) {
				break
			}
			j++
			val = args[j]
		}
		switch name {
		case "-r", "--resume":
			if looksLikeID(val) {
				resumeID = val
			} else {
				resuming = true
			}
		case "--session-id":
			resumeID = val
		}
	}
	return true, resumeID, resuming
}

// looksLikeID tells a session id (a UUID) from `latest` or an index.
func looksLikeID(v string) bool { return len(v) == 36 && strings.Count(v, "-") == 4 }

// ProjectHash is what the CLI writes as a chat's projectHash: the SHA-256
// of the project root (its cwd), hex (getProjectHash in the 0.61.0 bundle;
// the directory under tmp/ is a slug from projects.json instead, which is
// why pairing reads the hash and not the directory name).
func ProjectHash(cwd string) string {
	h := sha256.Sum256([]byte(cwd))
	return hex.EncodeToString(h[:])
}

// Meta is a chat file's first record: which session it is and whose.
type Meta struct {
	SessionID   string    `json:"sessionId"`
	ProjectHash string    `json:"projectHash"`
	StartTime   time.Time `json:"startTime"`
	// Kind is "main" for the user's session ("subagent" files live in a
	// subdirectory and are never listed).
	Kind string `json:"kind"`
}

// maxMetaLine bounds the first line read: the metadata record is a few
// hundred bytes; a file whose first line is longer is not a chat file.
const maxMetaLine = 64 << 10

// ErrNoMeta: the file has no complete metadata line yet (being written) or
// is not a chat file.
var ErrNoMeta = errors.New("no chat metadata")

// ReadMeta reads a chat file's metadata record (its first line).
func ReadMeta(path string) (Meta, error) {
	fh, err := os.Open(path)
	if err != nil {
		return Meta{}, fmt.Errorf("opening chat file: %w", err)
	}
	defer fh.Close()
	line, err := bufio.NewReaderSize(io.LimitReader(fh, maxMetaLine), 4096).ReadSlice('\n')
	if err != nil {
		return Meta{}, fmt.Errorf("%s: %w", path, ErrNoMeta)
	}
	var m Meta
	if json.Unmarshal(line, &m) != nil || m.SessionID == "" || m.ProjectHash == "" {
		return Meta{}, fmt.Errorf("%s: %w", path, ErrNoMeta)
	}
	return m, nil
}

// Chat is one chat file and its metadata.
type Chat = observe.SessionFile[Meta]

// Pair finds each process's chat file: for `--resume <id>` or
// `--session-id <id>`, that session's; for `--resume latest` or an index,
// the newest chat of its cwd written to since it started; else the newest
// chat of its cwd (by projectHash) started since the process started and
// not taken by a process started later in the same directory. The newest
// wins because /clear and /resume inside the TUI switch to another file.
func Pair(procs []Proc, chats []Chat) map[int]Chat {
	out := map[int]Chat{}
	claimed := map[string]bool{}
	rest := slices.Clone(procs)
	slices.SortFunc(rest, func(a, b Proc) int { return cmp.Or(b.Started.Compare(a.Started), cmp.Compare(a.PID, b.PID)) })
	sorted := slices.Clone(chats)
	// Newest written first: a chat resumed with /resume is older by its
	// start but is the one being written.
	slices.SortFunc(sorted, func(a, b Chat) int {
		return cmp.Or(b.ModTime.Compare(a.ModTime), b.Meta.StartTime.Compare(a.Meta.StartTime), strings.Compare(a.Path, b.Path))
	})
	for _, p := range rest {
		hash := ProjectHash(filepath.Clean(p.Cwd))
		for _, c := range sorted {
			m := c.Meta
			if claimed[c.Path] || m.Kind == "subagent" {
				continue
			}
			switch {
			case p.ResumeID != "":
				if m.SessionID != p.ResumeID {
					continue
				}
			case m.ProjectHash != hash:
				continue
			case c.ModTime.Before(p.Started.Add(-observe.PairSlack)):
				// Not written since the process started: not its session.
				continue
			case !p.Resuming && m.StartTime.Before(p.Started.Add(-observe.PairSlack)):
				// An older session written now belongs to a process that
				// resumed it (or to an older process still running).
				continue
			}
			out[p.PID] = c
			claimed[c.Path] = true
			break
		}
	}
	return out
}
