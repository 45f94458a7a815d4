package claudeterm

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/claude"
	"github.com/session-supervisor/session-supervisor/sessions/observe"
)

// Summary is what the transcript's records so far say about the turn in
// flight. It is folded record by record (Feed) from the tail, so it never
// needs the whole file.
type Summary struct {
	// Records counts the records fed since the last reset.
	Records int
	// Turns counts the prompts seen since the last reset.
	Turns int
	// LastAt is the newest record's own timestamp (zero if none had one).
	LastAt time.Time
	// InTurn: a prompt was sent and its turn has not ended yet.
	InTurn bool
	// PromptAt is when the turn in flight (or the last one) was prompted.
	PromptAt time.Time
	// FirstPrompt is the first prompt seen (a name for the session).
	FirstPrompt string
	// Open are the tool calls without a result yet, oldest first.
	Open []OpenTool
	// Ended: the last turn ended (the assistant's final message, or the
	// CLI's turn_duration record).
	Ended bool
	// Interrupted: the turn ended with "[Request interrupted by user]". The
	// CLI writes it for the user's Esc and for an inbox message sent with
	// priority "now" (the supervisor's hard-stall interrupt) alike.
	Interrupted bool
	// APIError is the turn's terminal API error, until progress follows it.
	APIError *APIError
	// Retry is the CLI's own retry in progress (system/api_error).
	Retry *Retry
	// Window is the plan window the latest usage limit error named
	// (apiErrorParams.rate_limit_info), kept past the turn: the account's.
	Window *sessions.RateWindow
	// Compacting: /compact was run and its boundary is not written yet.
	Compacting bool
}

// OpenTool is a tool call the assistant made whose result is not written.
type OpenTool struct {
	ID, Name string
	// Input is what the call would do, in one short sanitized line
	// (sessions.ToolInputSummary): what a permission dialog over it asks.
	Input string
}

// APIError is an error stand-in message the CLI wrote when a turn died.
type APIError struct {
	Status int
	// Code is the CLI's error word: rate_limit, invalid_request, server_error, …
	Code string
	Text string
	At   time.Time
	// ResetsAt is the rate limit's exact reset when the record carries it
	// (apiErrorParams.rate_limit_info.resetsAt, unix seconds, written by
	// 2.1.328 for a plan's usage limit); the text names it only to the
	// minute.
	ResetsAt time.Time
	// AutoContinue: the CLI announced it continues the turn by itself
	// after the usage limit resets ("Usage limit reached · continuing
	// automatically at …", a system/informational record; 2.1.328 does so
	// 30–90 s after the reset), and the user has not cancelled it.
	AutoContinue bool
}

// Retry is the CLI's own backoff after an API error.
type Retry struct {
	Status           int
	Attempt, Max     int
	At, RetryAt      time.Time
	Message, ErrWord string
}

// record is the part of a transcript line the summary reads.
type record struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	Timestamp        string          `json:"timestamp"`
	IsSidechain      bool            `json:"isSidechain"`
	IsMeta           bool            `json:"isMeta"`
	TurnOrigin       string          `json:"turnOrigin"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	IsAPIError       bool            `json:"isApiErrorMessage"`
	APIErrorStatus   int             `json:"apiErrorStatus"`
	Error            json.RawMessage `json:"error"`
	RetryInMs        float64         `json:"retryInMs"`
	RetryAttempt     int             `json:"retryAttempt"`
	MaxRetries       int             `json:"maxRetries"`
	Content          json.RawMessage `json:"content"`
	Message          *struct {
		Role       string          `json:"role"`
		StopReason *string         `json:"stop_reason"`
		Content    json.RawMessage `json:"content"`
	} `json:"message"`
	// APIErrorParams.RateLimitInfo.ResetsAt is a usage limit's reset.
	APIErrorParams struct {
		RateLimitInfo claude.RateLimitInfo `json:"rate_limit_info"`
	} `json:"apiErrorParams"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

// Reset forgets everything (the file was truncated or replaced).
func (s *Summary) Reset() { *s = Summary{} }

// Feed folds one transcript line into the summary. Lines that are not JSON
// or not a record type it knows are counted and otherwise ignored.
func (s *Summary) Feed(line []byte) {
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		return
	}
	s.Records++
	at, _ := time.Parse(time.RFC3339Nano, r.Timestamp)
	if !at.IsZero() {
		s.LastAt = at
	}
	if r.IsSidechain {
		// A subagent's line: progress of the turn, nothing more.
		s.progress()
		return
	}
	switch r.Type {
	case "user":
		s.feedUser(r, at)
	case "assistant":
		s.feedAssistant(r, at)
	case "system":
		s.feedSystem(r, at)
	}
}

func blocks(raw json.RawMessage) (text string, bs []block) {
	if len(raw) == 0 {
		return "", nil
	}
	if raw[0] == '"' {
		_ = json.Unmarshal(raw, &text)
		return text, nil
	}
	_ = json.Unmarshal(raw, &bs)
	for _, b := range bs {
		if b.Type == "text" && text == "" {
			text = b.Text
		}
	}
	return text, bs
}

func (s *Summary) feedUser(r record, at time.Time) {
	if r.Message == nil {
		return
	}
	text, bs := blocks(r.Message.Content)
	results := 0
	for _, b := range bs {
		if b.Type == "tool_result" {
			results++
			s.closeTool(b.ToolUseID)
		}
	}
	switch {
	case results > 0:
		s.progress()
	case strings.HasPrefix(text, "[Request interrupted by user"):
		s.endTurn()
		s.Interrupted = true
	case r.IsMeta && r.TurnOrigin == "" || r.IsCompactSummary:
		// The CLI's own notes (a resume, a compaction summary): no turn.
		// A message that starts a turn without being typed is written as
		// meta too, but 2.1.328 names where the turn came from: a message
		// from the inbox socket (a peer's, the supervisor's nudge) is
		// turnOrigin "peer", the CLI's own continue after a usage limit
		// resets "auto_continuation".
		if r.IsCompactSummary {
			s.Compacting = false
		}
	case strings.HasPrefix(strings.TrimSpace(text), "<command-name>/compact"):
		s.Compacting = true
	case strings.HasPrefix(strings.TrimSpace(text), "<"):
		// A slash command's echo or a local command's output: no turn.
	case strings.TrimSpace(text) != "":
		s.startTurn(text, at)
	}
}

func (s *Summary) feedAssistant(r record, at time.Time) {
	if r.IsAPIError {
		text := ""
		if r.Message != nil {
			text, _ = blocks(r.Message.Content)
		}
		var word string
		_ = json.Unmarshal(r.Error, &word)
		s.Retry = nil
		s.APIError = &APIError{Status: r.APIErrorStatus, Code: word, Text: text, At: at}
		// Unix seconds; anything past year 5000 is garbage.
		if sec := r.APIErrorParams.RateLimitInfo.ResetsAt; sec > 0 && sec < 95617584000 {
			s.APIError.ResetsAt = time.Unix(int64(sec), 0)
		}
		// The plan window the limit is, as a managed session's stream
		// reports it (a rate_limit_event): 2.1.328 writes its type with
		// the rejected status.
		if info := r.APIErrorParams.RateLimitInfo; info.Status != "" && (info.RateLimitType != "" || info.ResetsAt > 0) {
			w := claude.PlanWindow(info)
			s.Window = &w
		}
		s.InTurn, s.Open = false, nil
		return
	}
	s.progress()
	if r.Message == nil {
		return
	}
	_, bs := blocks(r.Message.Content)
	for _, b := range bs {
		if b.Type == "tool_use" {
			s.Open = append(s.Open, OpenTool{ID: b.ID, Name: b.Name, Input: sessions.ToolInputSummary(b.Input)})
		}
	}
	if sr := r.Message.StopReason; sr != nil && *sr == "end_turn" && len(s.Open) == 0 {
		s.endTurn()
	}
}

func (s *Summary) feedSystem(r record, at time.Time) {
	switch r.Subtype {
	case "turn_duration":
		s.endTurn()
	case "api_error":
		var e struct {
			Status  int    `json:"status"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(r.Error, &e)
		rt := &Retry{Status: e.Status, Attempt: r.RetryAttempt, Max: r.MaxRetries, At: at, Message: e.Message}
		if !at.IsZero() && r.RetryInMs > 0 {
			rt.RetryAt = at.Add(time.Duration(r.RetryInMs * float64(time.Millisecond)))
		}
		s.Retry = rt
	case "compact_boundary":
		s.Compacting = false
	case "informational":
		if s.APIError == nil {
			return
		}
		var text string
		_ = json.Unmarshal(r.Content, &text)
		switch {
		case strings.Contains(text, "continuing automatically"):
			s.APIError.AutoContinue = true
		case strings.Contains(text, "Automatic continue cancelled"):
			s.APIError.AutoContinue = false
		}
	}
}

func (s *Summary) startTurn(prompt string, at time.Time) {
	if s.FirstPrompt == "" {
		s.FirstPrompt = prompt
	}
	*s = Summary{Records: s.Records, Turns: s.Turns + 1, LastAt: s.LastAt, FirstPrompt: s.FirstPrompt, InTurn: true, PromptAt: at, Window: s.Window}
}

func (s *Summary) endTurn() {
	s.InTurn, s.Open, s.Retry, s.Compacting = false, nil, nil, false
	s.Ended = true
}

// progress: a turn is moving (the tail may have started inside it, after
// its prompt), so an error or a retry before this record is over.
func (s *Summary) progress() {
	s.APIError, s.Retry = nil, nil
	s.InTurn, s.Ended, s.Interrupted = true, false, false
}

func (s *Summary) closeTool(id string) {
	s.Open = observe.Closed(s.Open, func(t OpenTool) bool { return t.ID == id })
}

// resetPattern reads the reset time of a usage-limit message: "resets
// 9:50pm (Asia/Saigon)", "reset time was 3:20pm Europe/Berlin".
var resetPattern = regexp.MustCompile(`(?i)reset(?:s| time was)\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\s*\(?([A-Za-z_]+/[A-Za-z_]+)?\)?`)

// ResetTime is the next time of day named in a usage-limit message, after
// at; zero when the message names none. The CLI names the reset to the
// minute, rounded down ("resets 10:48pm" for 22:48:16), so a time in the
// error's own minute is that reset, not tomorrow's: it is taken as the end
// of that minute, when the limit has surely lifted.
func ResetTime(text string, at time.Time) time.Time {
	m := resetPattern.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}
	}
	h, _ := strconv.Atoi(m[1])
	min, _ := strconv.Atoi(m[2])
	switch strings.ToLower(m[3]) {
	case "pm":
		if h < 12 {
			h += 12
		}
	case "am":
		if h == 12 {
			h = 0
		}
	}
	if h > 23 || min > 59 {
		return time.Time{}
	}
	loc := at.Location()
	if m[4] != "" {
		if l, err := time.LoadLocation(m[4]); err == nil {
			loc = l
		}
	}
	local := at.In(loc)
	t := time.Date(local.Year(), local.Month(), local.Day(), h, min, 0, 0, loc)
	if !t.After(at) && at.Sub(t) < time.Minute {
		return t.Add(time.Minute)
	}
	if !t.After(at) {
		t = t.AddDate(0, 0, 1)
	}
	return t
}
