package codexterm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/codex"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// This file reads Codex's rollout files ($CODEX_HOME/sessions/YYYY/MM/DD/
// rollout-<time>-<thread id>.jsonl): one {"timestamp","type","payload"}
// record a line, type session_meta (the thread: id, cwd, who started it),
// turn_context, response_item (messages, function calls and their
// outputs), event_msg (task_started, task_complete, turn_aborted,
// token_count, …) and compacted. Shapes measured against the real 0.171.0
// (testdata/: the TUI and `codex exec` against the fake Responses API).

// Meta is a rollout's session_meta: which thread it is and who wrote it.
type Meta struct {
	ID  string
	Cwd string
	// Originator is the client ("codex-tui", "codex_exec").
	Originator string
	// Source is where the thread came from ("cli", "vscode", "exec"; an
	// object naming the parent for a subagent).
	Source string
	// ThreadSource is "user" for the user's own thread, "subagent" for
	// one a spawned agent writes.
	ThreadSource   string
	ParentThreadID string
	// Started is the thread's creation time.
	Started time.Time
}

// Subagent reports a thread a spawned agent writes: never the user's.
func (m Meta) Subagent() bool {
	return m.ThreadSource == "subagent" || m.ParentThreadID != "" || strings.Contains(m.Source, "subagent")
}

// Interactive reports a thread of the TUI (not `codex exec`, whose process
// is one prompt long and is not a terminal session).
func (m Meta) Interactive() bool { return m.Originator != "codex_exec" && m.Source != "exec" }

// record is the union of the fields read from any line: one struct and one
// json.Unmarshal per line; what is not declared (instructions, outputs,
// reasoning) is skipped without being allocated.
type record struct {
	Timestamp string  `json:"timestamp"`
	Type      string  `json:"type"`
	Payload   payload `json:"payload"`
}

type payload struct {
	Type string `json:"type"`
	// session_meta
	ID             string          `json:"id"`
	Cwd            string          `json:"cwd"`
	Originator     string          `json:"originator"`
	Source         json.RawMessage `json:"source"`
	ThreadSource   string          `json:"thread_source"`
	ParentThreadID string          `json:"parent_thread_id"`
	Timestamp      string          `json:"timestamp"`
	// turn_context
	ApprovalPolicy string `json:"approval_policy"`
	Model          string `json:"model"`
	// event_msg
	TurnID     string      `json:"turn_id"`
	Reason     string      `json:"reason"`
	Error      *turnError  `json:"error"`
	RateLimits *rateLimits `json:"rate_limits"`
	Info       *tokenInfo  `json:"info"`
	// response_item
	Role      string          `json:"role"`
	Name      string          `json:"name"`
	CallID    string          `json:"call_id"`
	Arguments string          `json:"arguments"`
	Content   json.RawMessage `json:"content"`
}

type turnError struct {
	Message        string          `json:"message"`
	CodexErrorInfo json.RawMessage `json:"codex_error_info"`
}

// tokenInfo is a token_count's usage: the thread's running total, input
// including the cached part, as the OpenAI API counts it.
type tokenInfo struct {
	Total *struct {
		Input      int64 `json:"input_tokens"`
		Cached     int64 `json:"cached_input_tokens"`
		CacheWrite int64 `json:"cache_write_input_tokens"`
		Output     int64 `json:"output_tokens"`
	} `json:"total_token_usage"`
}

type rateLimits struct {
	Primary   *window `json:"primary"`
	Secondary *window `json:"secondary"`
}

// window is one plan window of a token_count's rate_limits: resets_at is
// unix seconds (0.171.0); older releases wrote resets_in_seconds instead,
// counted from the record's time.
type window struct {
	UsedPercent     float64 `json:"used_percent"`
	WindowMinutes   float64 `json:"window_minutes"`
	ResetsAt        int64   `json:"resets_at"`
	ResetsInSeconds int64   `json:"resets_in_seconds"`
}

// resets is when the window resets, zero when the record does not say.
func (w *window) resets(at time.Time) time.Time {
	switch {
	case w.ResetsAt > 0 && w.ResetsAt < 1e11:
		return time.Unix(w.ResetsAt, 0).UTC()
	case w.ResetsInSeconds > 0 && w.ResetsInSeconds < 1e9 && !at.IsZero():
		return at.Add(time.Duration(w.ResetsInSeconds) * time.Second).UTC()
	}
	return time.Time{}
}

// Call is a tool call the model made and the CLI has not answered yet.
type Call struct {
	ID   string
	Name string
	// Escalated: the call asks to run outside the sandbox, which Codex
	// submits to the user unless its approval policy is "never". The
	// prompt itself is drawn in the terminal only; the rollout shows the
	// request.
	Escalated bool
}

// Failed is the error a turn ended on.
type Failed struct {
	Message string
	// Info is codex_error_info as written (a word or a one-key object).
	Info json.RawMessage
	At   time.Time
}

// Summary is what the rollout read so far says. Feed it every line in
// order; Reset it when the file is truncated or replaced.
type Summary struct {
	Meta    Meta
	HasMeta bool
	// Records counts decoded lines; Skipped counts lines that were not
	// JSON records.
	Records, Skipped int
	// Turns counts task_started records.
	Turns  int
	InTurn bool
	// Open are the tool calls of the turn in flight without an output.
	Open []Call
	// Ended: the last turn ended (task_complete or turn_aborted);
	// Aborted is turn_aborted's reason ("interrupted" when the user
	// pressed Esc).
	Ended   bool
	Aborted string
	// Failure is the error the last turn ended on, if any.
	Failure *Failed
	// ResetsAt is when the exhausted rate-limit window lifts (from the
	// latest token_count), zero when none is known.
	ResetsAt time.Time
	// Windows are the plan's usage windows the latest token_count with
	// any reported (a ChatGPT login's; null with an API key).
	Windows []sessions.RateWindow
	// ApprovalPolicy is the latest turn_context's approval_policy.
	ApprovalPolicy string
	// Model is the latest turn_context's model.
	Model string
	// Usage is the thread's running total from the latest token_count
	// (its four rate classes; reasoning is part of output), nil before
	// one. Being a running total, the tail's last one is the whole
	// thread's.
	Usage *sessions.Tokens
	// FirstPrompt is the first thing the user typed.
	FirstPrompt string
	LastAt      time.Time
}

// maxOpen bounds the open-call list a broken file could grow.
const maxOpen = 64

// Reset forgets everything: the file was truncated or replaced.
func (s *Summary) Reset() { *s = Summary{} }

// TurnCount is how many turns the rollout read so far started
// (observe.Summary).
func (s *Summary) TurnCount() int { return s.Turns }

// Feed reads one line. A line that is not a record is counted and skipped.
func (s *Summary) Feed(line []byte) {
	var r record
	if err := json.Unmarshal(line, &r); err != nil || r.Type == "" {
		s.Skipped++
		return
	}
	s.Records++
	at, _ := time.Parse(time.RFC3339Nano, r.Timestamp)
	if !at.IsZero() {
		s.LastAt = at
	}
	p := &r.Payload
	switch r.Type {
	case "session_meta":
		s.Meta, s.HasMeta = p.meta(), true
	case "turn_context":
		if p.ApprovalPolicy != "" {
			s.ApprovalPolicy = p.ApprovalPolicy
		}
		if p.Model != "" {
			s.Model = p.Model
		}
	case "event_msg":
		s.event(p, at)
	case "response_item":
		s.item(p)
	}
}

func (p *payload) meta() Meta {
	m := Meta{ID: p.ID, Cwd: p.Cwd, Originator: p.Originator, ThreadSource: p.ThreadSource, ParentThreadID: p.ParentThreadID}
	if src := bytes.TrimSpace(p.Source); len(src) > 0 {
		var word string
		if src[0] == '"' && json.Unmarshal(src, &word) == nil {
			m.Source = word
		} else {
			m.Source = string(src) // an object: {"subagent": {...}}
		}
	}
	m.Started, _ = time.Parse(time.RFC3339Nano, p.Timestamp)
	return m
}

func (s *Summary) event(p *payload, at time.Time) {
	switch p.Type {
	case "task_started":
		s.Turns++
		s.InTurn, s.Ended, s.Aborted, s.Failure, s.Open = true, false, "", nil, nil
	case "task_complete":
		s.InTurn, s.Ended, s.Aborted, s.Open = false, true, "", nil
		s.Failure = nil
		if e := p.Error; e != nil && (e.Message != "" || len(e.CodexErrorInfo) > 0) {
			s.Failure = &Failed{Message: e.Message, Info: e.CodexErrorInfo, At: at}
		}
	case "turn_aborted":
		s.InTurn, s.Ended, s.Aborted, s.Failure, s.Open = false, true, observe.OrDefault(p.Reason, "aborted"), nil, nil
	case "token_count":
		if rl := p.RateLimits; rl != nil {
			s.ResetsAt = exhausted(rl, at)
			if ws := planWindows(rl, at); len(ws) > 0 {
				s.Windows = ws
			}
		}
		if p.Info != nil && p.Info.Total != nil {
			t := p.Info.Total
			s.Usage = &sessions.Tokens{Input: max(t.Input-t.Cached-t.CacheWrite, 0), Output: t.Output, CacheWrite: t.CacheWrite, CacheRead: t.Cached}
		}
	}
}

// exhausted is the reset of the window that is used up (the later one
// when both are), zero when none is.
func exhausted(rl *rateLimits, at time.Time) time.Time {
	var reset time.Time
	for _, w := range []*window{rl.Primary, rl.Secondary} {
		if w == nil || w.UsedPercent < 100 {
			continue
		}
		if t := w.resets(at); t.After(reset) {
			reset = t
		}
	}
	return reset
}

// planWindows are a token_count's windows as a managed Codex session
// keeps its account's (codex.PlanWindow): the same kinds, so a thread
// resumed in the background carries on the same windows.
func planWindows(rl *rateLimits, at time.Time) []sessions.RateWindow {
	var out []sessions.RateWindow
	for i, w := range []*window{rl.Primary, rl.Secondary} {
		if w == nil {
			continue
		}
		if rw, ok := codex.PlanWindow(i == 1, w.UsedPercent, w.WindowMinutes, w.resets(at)); ok {
			out = append(out, rw)
		}
	}
	return out
}

func (s *Summary) item(p *payload) {
	switch p.Type {
	case "function_call", "custom_tool_call", "local_shell_call":
		s.Open = observe.Opened(s.Open, maxOpen, Call{ID: p.CallID, Name: p.Name, Escalated: escalated(p.Arguments)})
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		s.Open = observe.Closed(s.Open, func(c Call) bool { return c.ID == p.CallID })
	case "message":
		if p.Role == "user" && s.FirstPrompt == "" {
			s.FirstPrompt = userText(p.Content)
		}
	}
}

// escalated reads a call's arguments for the sandbox escalation Codex asks
// the user about ("sandbox_permissions":"require_escalated", measured).
func escalated(args string) bool {
	if !strings.Contains(args, "require_escalated") {
		return false
	}
	var a struct {
		SandboxPermissions string `json:"sandbox_permissions"`
	}
	return json.Unmarshal([]byte(args), &a) == nil && a.SandboxPermissions == "require_escalated"
}

// userText is a user message's text, unless it is the context Codex
// injects itself (<environment_context>, AGENTS.md instructions).
func userText(content json.RawMessage) string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range parts {
		b.WriteString(c.Text)
	}
	text := strings.TrimSpace(b.String())
	if strings.HasPrefix(text, "<") || strings.HasPrefix(text, "# AGENTS.md") {
		return ""
	}
	return text
}

// maxMetaLine bounds the read of a rollout's first line: session_meta
// carries the base instructions (about 30 KB in 0.171.0).
const maxMetaLine = 1 << 20

// ReadMeta reads a rollout's session_meta from its first line.
func ReadMeta(path string) (Meta, error) {
	fh, err := os.Open(path)
	if err != nil {
		return Meta{}, fmt.Errorf("opening the rollout: %w", err)
	}
	defer fh.Close()
	br := bufio.NewReaderSize(io.LimitReader(fh, maxMetaLine), 64<<10)
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// Longer than the buffer: read the rest of the line.
		rest, _ := io.ReadAll(br)
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			rest = rest[:i]
		}
		line = append(bytes.Clone(line), rest...)
	} else if err != nil && err != io.EOF {
		return Meta{}, fmt.Errorf("reading the rollout's first line: %w", err)
	}
	m, err := ParseMeta(line)
	if err != nil {
		return Meta{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParseMeta reads a session_meta line.
func ParseMeta(line []byte) (Meta, error) {
	var r record
	if err := json.Unmarshal(bytes.TrimSpace(line), &r); err != nil || r.Type != "session_meta" {
		return Meta{}, errors.New("the first line is no session_meta")
	}
	return r.Payload.meta(), nil
}
