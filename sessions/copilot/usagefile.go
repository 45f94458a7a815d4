package copilot

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/session-supervisor/session-supervisor/sessions"
)

// Copilot prints no token counts on its output stream; each model call's
// session.usage_record goes only to the session's events.jsonl (measured
// on 1.0.102). A managed session reads them there when a turn's process
// ends.

// EventsPath is the session's events.jsonl under Copilot's home, as the
// CLI finds it in its environment (this process's with env, the
// session's, added): COPILOT_HOME, else HOME's .copilot.
func EventsPath(env []string, sessionID string) string {
	home, user := os.Getenv("COPILOT_HOME"), os.Getenv("HOME")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "COPILOT_HOME="); ok {
			home = v
		}
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			user = v
		}
	}
	if home == "" {
		if user == "" {
			user, _ = os.UserHomeDir()
		}
		home = filepath.Join(user, ".copilot")
	}
	return filepath.Join(home, "session-state", sessionID, "events.jsonl")
}

// usageRecordType is how a usage record's line begins.
var usageRecordType = []byte(`{"type":"session.usage_record"`)

// fileUsage sums the usage records of an events.jsonl by model, each model
// call once (by its call id). Only lines that begin as a usage record are
// decoded; a line longer than the reader's buffer (a tool's output) is
// passed over unread.
func fileUsage(r io.Reader) (sessions.Usage, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	seen := map[string]bool{}
	var total sessions.Usage
	for {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			line = nil
			_, err = br.ReadSlice('\n')
		}
		if bytes.HasPrefix(line, usageRecordType) {
			evs, _, _ := DecodeLine(bytes.TrimRight(line, "\r\n"))
			for _, ev := range evs {
				u := ev.Usage
				if u == nil || u.MessageID != "" && seen[u.MessageID] {
					continue
				}
				seen[u.MessageID] = u.MessageID != ""
				total = total.Add(u.Model, u.Tokens)
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// usageReports reads the session's events.jsonl and says its usage as
// running totals, one counter per session and model: the same counters a
// terminal Copilot session's are, so a session continued in a terminal
// (or read again) adds nothing. A file that cannot be read reports
// nothing: the next turn's end reads it again.
func usageReports(path, sessionID string) []sessions.UsageReport {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	u, _ := fileUsage(f)
	var out []sessions.UsageReport
	for _, m := range u.Models() {
		out = append(out, sessions.UsageReport{Model: m, Tokens: u[m], Mode: sessions.UsageCumulative, Counter: UsageCounter(sessionID, m)})
	}
	return out
}

// UsageCounter names the running total of a session's tokens of one model
// read from its events.jsonl (by the managed session and the terminal
// source alike).
func UsageCounter(sessionID, model string) string { return "events " + sessionID + " " + model }
