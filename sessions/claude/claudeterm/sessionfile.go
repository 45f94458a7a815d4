// Package terminal observes Claude Code sessions the app did not launch: the
// interactive CLI running in a terminal or an IDE. It discovers them from the
// CLI's own per-process session files (~/.claude/sessions/<pid>.json, Claude
// Code ≥ 2.1.224), tails each one's transcript from the end, infers its state
// with an ordered rule stack, and delivers the supervisor's nudge through the
// CLI's inbox socket. It never types into a terminal and never signals the
// process. It uses the standard library only; file-system notifications come
// from an injected Notify (the composition root passes the fsnotify adapter).
package claudeterm

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SessionFile is the CLI's per-process record of a live session. Only the
// fields the observer uses are decoded; unknown fields are ignored.
type SessionFile struct {
	PID       int    `json:"pid"`
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	// StartedAt is when the process registered, in Unix milliseconds.
	StartedAt int64 `json:"startedAt"`
	// ProcStart is the platform's process start stamp, as a string (its
	// format differs by platform): the pid-reuse guard.
	ProcStart           string `json:"procStart"`
	Version             string `json:"version"`
	Kind                string `json:"kind"`
	Entrypoint          string `json:"entrypoint"`
	MessagingSocketPath string `json:"messagingSocketPath"`
	Name                string `json:"name"`
	// NameSource says where Name came from: "derived" is the CLI's own
	// guess from the directory, which a prompt's title beats.
	NameSource string `json:"nameSource"`
	// Status is idle, busy or waiting (absent before 2.1.233).
	Status string `json:"status"`
	// WaitingFor says what a waiting session waits for ("approve Bash").
	WaitingFor string `json:"waitingFor"`
	UpdatedAt  int64  `json:"updatedAt"`
	// StatusUpdatedAt is when Status was last written, in Unix ms.
	StatusUpdatedAt int64 `json:"statusUpdatedAt"`
}

// Started is StartedAt as a time.
func (f SessionFile) Started() time.Time { return time.UnixMilli(f.StartedAt) }

// Key is the session's identity for as long as its process lives: the pid
// and its registration time (a later process reusing the pid registers
// later). The CLI's sessionId is not the key: /clear and /resume change it.
func (f SessionFile) Key() string { return fmt.Sprintf("%d-%d", f.PID, f.StartedAt) }

// maxSessionFile bounds a session file read: the real ones are well under
// 1 KB; anything larger is not one.
const maxSessionFile = 64 << 10

// ReadSessionFile reads and validates one session file.
func ReadSessionFile(path string) (SessionFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return SessionFile{}, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxSessionFile+1))
	n := len(b)
	if err != nil {
		return SessionFile{}, fmt.Errorf("reading session file %s: %w", path, err)
	}
	if n > maxSessionFile {
		return SessionFile{}, fmt.Errorf("session file %s is larger than %d bytes", path, maxSessionFile)
	}
	var f SessionFile
	if err := json.Unmarshal(b[:n], &f); err != nil {
		return SessionFile{}, fmt.Errorf("decoding session file %s: %w", path, err)
	}
	base := strings.TrimSuffix(filepath.Base(path), ".json")
	if pid, err := strconv.Atoi(base); err != nil || pid != f.PID || f.PID <= 0 {
		return SessionFile{}, fmt.Errorf("session file %s names pid %d", path, f.PID)
	}
	if f.SessionID == "" || f.Cwd == "" {
		return SessionFile{}, fmt.Errorf("session file %s has no session id or cwd", path)
	}
	return f, nil
}

// Interactive reports whether the file is an interactive session worth
// observing: the CLI also registers background jobs ("bg") and SDK runs,
// which are someone else's to supervise (the app's own managed sessions
// among them).
func (f SessionFile) Interactive() bool {
	if f.Kind != "" && f.Kind != "interactive" {
		return false
	}
	return f.Entrypoint != "sdk-cli"
}

// ListSessionFiles reads every valid session file in dir whose process is
// alive and is the process that wrote it. A file whose process is gone (a
// crash leaves it behind) or whose pid now belongs to another process is
// skipped.
func ListSessionFiles(dir string, alive func(SessionFile) (bool, bool)) ([]SessionFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var out []SessionFile
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") {
			continue
		}
		if _, err := strconv.Atoi(strings.TrimSuffix(name, ".json")); err != nil {
			continue
		}
		f, err := ReadSessionFile(filepath.Join(dir, name))
		if err != nil || !f.Interactive() {
			continue
		}
		if ok, known := alive(f); known && !ok {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}
