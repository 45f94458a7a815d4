package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// ErrMalformed marks a line that is not a JSON object. The decoder skips and
// counts such lines; it never stops on them.
var ErrMalformed = errors.New("claude stream: malformed line")

// ErrUnknown marks a well-formed line whose type or subtype this decoder does
// not know. Claude Code adds message types between releases, so an unknown
// line is counted and skipped, never fatal.
var ErrUnknown = errors.New("claude stream: unknown line type")

// LineInfo describes one stdout line, decoded or skipped.
type LineInfo struct {
	// Frame: the line's number and size, and why it was skipped.
	agentkit.Frame
	// Type and Subtype are the line's "type" and "subtype" fields.
	Type    string
	Subtype string
	// SessionID is the agent's session id when the line carries one.
	SessionID string
}

// The names Claude Code gives the tools that wait on the user rather than
// doing work.
const (
	toolAskUser  = "AskUserQuestion"
	toolExitPlan = "ExitPlanMode"
)

// syntheticModel is the model name of the stand-in assistant message the CLI
// prints when an API call failed for good.
const syntheticModel = "<synthetic>"

// interruptMarker starts the user message the CLI writes when a turn is
// interrupted ("[Request interrupted by user]" and "... for tool use]").
const interruptMarker = "[Request interrupted by user"

// maxTracked bounds each per-stream map, so a stream that opens calls it never
// closes cannot grow the decoder without limit. Names are cosmetic (Apply
// remembers its own), so losing them when a map overflows is harmless.
const maxTracked = agentkit.MaxTracked

// maxRetryDelay bounds an agent retry delay taken from the wire.
const maxRetryDelay = 24 * time.Hour

// wire is the union of every field the decoder reads from any stdout line.
// One struct and one json.Unmarshal per line: fields that are not declared
// (tool results, tool inputs, usage, tool_use_result) are skipped by the
// decoder without being allocated, which is what keeps a 1 MB tool_result
// line cheap.
type wire struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`

	// system/status, task_notification, task_updated.
	Status        string `json:"status"`
	CompactResult string `json:"compact_result"`
	CompactError  string `json:"compact_error"`
	Patch         struct {
		Status string `json:"status"`
	} `json:"patch"`
	// system/session_state_changed.
	State string `json:"state"`

	// system/api_retry. Error is also the synthetic assistant message's
	// error kind.
	Attempt      int     `json:"attempt"`
	MaxRetries   int     `json:"max_retries"`
	RetryDelayMS float64 `json:"retry_delay_ms"`
	ErrorStatus  int     `json:"error_status"`
	Error        string  `json:"error"`

	// system/task_*, tool_progress.
	TaskID      string `json:"task_id"`
	ToolUseID   string `json:"tool_use_id"`
	Description string `json:"description"`
	Summary     string `json:"summary"`
	ToolName    string `json:"tool_name"`
	HookName    string `json:"hook_name"`

	// assistant, user.
	Message         message `json:"message"`
	ParentToolUseID *string `json:"parent_tool_use_id"`

	// rate_limit_event.
	RateLimitInfo RateLimitInfo `json:"rate_limit_info"`

	// result.
	IsError        bool     `json:"is_error"`
	APIErrorStatus int      `json:"api_error_status"`
	TerminalReason string   `json:"terminal_reason"`
	Result         string   `json:"result"`
	Errors         []string `json:"errors"`
	// Usage is the turn's usage, summed over its API calls.
	Usage *wireUsage `json:"usage"`

	// control_request, control_cancel_request.
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype  string          `json:"subtype"`
		ToolName string          `json:"tool_name"`
		Input    json.RawMessage `json:"input"`
	} `json:"request"`
}

type message struct {
	// ID, Model and Usage are an assistant message's: the API call it
	// came from, its model id (dated: claude-sonnet-4-5-20250929) and what
	// the call used.
	ID    string     `json:"id"`
	Model string     `json:"model"`
	Usage *wireUsage `json:"usage"`
	// Content is an array of blocks on stdout. The transcript (and the SDK's
	// own prompts) sometimes use a bare string; that form fails to decode
	// here and is picked up by userText.
	Content []block `json:"content"`
}

// wireUsage is the API's usage object as the CLI prints it on an assistant
// message.
type wireUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// usageReport is an assistant message's usage as a report counted once per
// message id: the CLI prints a message once per content block, each time
// with the same id and the usage known so far.
func usageReport(m *message) *sessions.UsageReport {
	u := m.Usage
	if u == nil || m.Model == "" || m.Model == syntheticModel {
		return nil
	}
	return &sessions.UsageReport{
		Model: m.Model,
		Tokens: sessions.Tokens{
			Input: u.InputTokens, Output: u.OutputTokens,
			CacheWrite: u.CacheCreationInputTokens, CacheRead: u.CacheReadInputTokens,
		},
		Mode:      sessions.UsageMessage,
		MessageID: m.ID,
	}
}

type block struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	ToolUseID string `json:"tool_use_id"`
	Text      string `json:"text"`
}

// state is what decoding needs to remember between lines of one stream.
type state struct {
	// tools maps an open tool_use id to its tool name, so the tool_result
	// (which carries only the id) can name the tool.
	tools map[string]string
	// tasks maps an open background task id to its description.
	tasks map[string]string
	// pending holds each unanswered can_use_tool request's input by request
	// id: allowing a tool means echoing its input back as updatedInput.
	pending map[string]json.RawMessage
	// usage is what each recent message id's usage counted so far: the
	// CLI repeats a message's usage with each of its content blocks, and
	// a subagent's messages interleave with the main one's.
	usage agentkit.UsageOnce
	// todos is the session's task list as its tool calls built it.
	todos todoList
	turn  turnState
}

// turnState is evidence gathered during one turn and consumed by its result
// line: Claude reports API failures as result subtype "success" with
// is_error true, so the lines before the result decide what kind of failure
// it was.
type turnState struct {
	// synthetic is the failure kind of the turn's synthetic error message,
	// and syntheticText its text.
	synthetic     sessions.FailureKind
	syntheticText string
	// interrupted is set by the "[Request interrupted by user]" message.
	interrupted bool
	// rejected and resetsAt come from a rate_limit_event with status
	// "rejected": the plan limit is hit and lifts at resetsAt.
	rejected bool
	resetsAt time.Time
	// counted is the usage the turn's assistant messages reported
	// (subagents' too), and model the last model the main thread named:
	// the result's usage corrects what they could not know (resultUsage).
	counted sessions.Tokens
	model   string
	// compactResultSeen avoids a second "compaction finished" for the
	// compact_boundary line that follows a status line with compact_result.
	compactResultSeen bool
}

// DecodeLine decodes one stdout line of `claude -p --output-format
// stream-json` on its own, with no memory of earlier lines: tool results are
// not named and a failed result is classified from its own fields only. Use a
// Decoder for a stream. The error wraps ErrMalformed or ErrUnknown for a
// skipped line; info.Skip says the same.
func DecodeLine(line []byte) (events []sessions.Event, info LineInfo, err error) {
	var s state
	return s.decode(line)
}

func (s *state) decode(line []byte) ([]sessions.Event, LineInfo, error) {
	var info LineInfo
	var w wire
	trimmed, ok, err := info.Unmarshal(line, &w, ErrMalformed)
	if !ok {
		return nil, info, err
	}
	info.Type, info.Subtype, info.SessionID = w.Type, w.Subtype, w.SessionID

	events, known := s.dispatch(&w, trimmed)
	if !known {
		info.Skip = agentkit.SkipUnknown
		info.Detail = fmt.Sprintf("unknown type %q subtype %q", agentkit.Clip(w.Type), agentkit.Clip(w.Subtype))
		return nil, info, fmt.Errorf("%w: type %q subtype %q", ErrUnknown, agentkit.Clip(w.Type), agentkit.Clip(w.Subtype))
	}
	return events, info, nil
}

// dispatch maps one decoded line to events. known is false for a type or
// subtype the decoder does not handle.
func (s *state) dispatch(w *wire, line []byte) (events []sessions.Event, known bool) {
	switch w.Type {
	case "system":
		return s.system(w)
	case "assistant":
		return s.assistant(w, line), true
	case "user":
		return s.user(w, line), true
	case "result":
		return []sessions.Event{s.result(w)}, true
	case "stream_event":
		// Partial message deltas (--include-partial-messages): proof the
		// model is streaming, which is exactly what the stall clock wants.
		return agentkit.One(sessions.EvActivity, "streaming a reply"), true
	case "tool_progress":
		return agentkit.One(sessions.EvActivity, sessions.SanitizeMessage(agentkit.OrDefault(w.ToolName, "tool")+" running")), true
	case "rate_limit_event":
		return s.rateLimit(w), true
	case "control_request":
		return s.controlRequest(w)
	case "control_response":
		// The CLI's answer to a request we wrote (an interrupt, say). It is
		// bookkeeping, not progress: an agent that acknowledges a stall
		// interrupt and then stays hung must still look stalled, or the
		// bounded escalation (SIGTERM, SIGKILL) would never follow.
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "control response"}}, true
	case "control_cancel_request":
		return s.controlCancel(w), true
	case "conversation_reset":
		return agentkit.One(sessions.EvActivity, "conversation reset"), true
	case "keep_alive":
		// A liveness ping, not progress: it must not refresh the stall clock.
		return nil, true
	}
	return nil, false
}

func (s *state) system(w *wire) ([]sessions.Event, bool) {
	switch w.Subtype {
	case "init":
		return []sessions.Event{{
			Kind:           sessions.EvSessionInit,
			AgentSessionID: w.SessionID,
			Detail:         "session initialized",
		}}, true
	case "status":
		return s.status(w), true
	case "compact_boundary":
		if s.turn.compactResultSeen {
			s.turn.compactResultSeen = false
			return agentkit.One(sessions.EvActivity, "compaction boundary"), true
		}
		// Versions that print no compact_result report success only here.
		return []sessions.Event{{Kind: sessions.EvCompactionFinished, OK: true, Detail: "compaction finished"}}, true
	case "api_retry":
		return []sessions.Event{retry(w)}, true
	case "task_started":
		// The description is model-written and ends up in evidence: it gets
		// the same treatment as any provider text.
		name := sessions.SanitizeMessage(w.Description)
		s.tasks = agentkit.Remember(s.tasks, w.TaskID, name)
		return []sessions.Event{{
			Kind:   sessions.EvTaskStarted,
			CallID: w.TaskID,
			Name:   name,
			Detail: "background task started",
		}}, true
	case "task_progress":
		return agentkit.One(sessions.EvActivity, "background task progress"), true
	case "task_notification", "task_updated":
		// task_updated carries its new status in a patch object.
		status := agentkit.OrDefault(w.Status, w.Patch.Status)
		if !terminalTaskStatus(status) {
			return agentkit.One(sessions.EvActivity, "background task update"), true
		}
		name := s.tasks[w.TaskID]
		delete(s.tasks, w.TaskID)
		return []sessions.Event{{
			Kind:   sessions.EvTaskFinished,
			CallID: w.TaskID,
			Name:   agentkit.OrDefault(name, sessions.SanitizeMessage(agentkit.OrDefault(w.Description, w.Summary))),
			Detail: sessions.SanitizeMessage("background task " + status),
		}}, true
	case "session_state_changed":
		switch w.State {
		case "idle":
			return []sessions.Event{{Kind: sessions.EvIdle, Detail: "agent idle"}}, true
		case "running":
			return agentkit.One(sessions.EvActivity, "agent running"), true
		}
		// Other states (requires_action, …) are echoed by more specific
		// lines (control_request); recording them must not move the clock.
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: sessions.SanitizeMessage("agent state " + w.State)}}, true
	case "thinking_tokens":
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "thinking tokens"}}, true
	case "hook_started", "hook_response":
		return agentkit.One(sessions.EvActivity, sessions.SanitizeMessage("hook "+agentkit.OrDefault(w.HookName, strings.TrimPrefix(w.Subtype, "hook_")))), true
	}
	return nil, false
}

// status handles system/status: compaction start and outcome, and the
// "requesting" heartbeat.
func (s *state) status(w *wire) []sessions.Event {
	switch {
	case w.CompactResult == "success":
		s.turn.compactResultSeen = true
		return []sessions.Event{{Kind: sessions.EvCompactionFinished, OK: true, Detail: "compaction finished"}}
	case w.CompactResult == "failed":
		s.turn.compactResultSeen = true
		return []sessions.Event{{
			Kind:   sessions.EvCompactionFinished,
			Detail: sessions.SanitizeMessage(agentkit.OrDefault(w.CompactError, "no reason given")),
		}}
	case w.Status == "compacting":
		// Repeated every ~30 s while compaction runs; Apply keeps the first
		// start time.
		s.turn.compactResultSeen = false
		return []sessions.Event{{Kind: sessions.EvCompactionStarted, Detail: "compacting the context"}}
	case w.Status == "requesting":
		return agentkit.One(sessions.EvActivity, "requesting the model")
	}
	return agentkit.One(sessions.EvActivity, "status update")
}

func retry(w *wire) sessions.Event {
	what := "the API request failed"
	if w.ErrorStatus != 0 {
		what = fmt.Sprintf("the API answered %d", w.ErrorStatus)
	}
	if w.Error != "" {
		what += " (" + w.Error + ")"
	}
	return sessions.Event{
		Kind:        sessions.EvRetryScheduled,
		Attempt:     w.Attempt,
		MaxAttempts: w.MaxRetries,
		Delay:       millis(w.RetryDelayMS),
		Status:      w.ErrorStatus,
		Failure:     sessions.Failure{Kind: retryKind(w.Error, w.ErrorStatus), Message: sessions.SanitizeMessage(what)},
		Detail:      "agent retry scheduled",
	}
}

// retryKind classifies an api_retry from its error word, falling back to the
// HTTP status. A retry with no status got no HTTP answer at all: the
// connection failed or dropped (error "unknown", measured with streams cut
// by the fake API), which is a network failure.
func retryKind(errWord string, status int) sessions.FailureKind {
	switch errWord {
	case "rate_limit":
		return sessions.RateLimit
	case "overloaded":
		return sessions.Overloaded
	case "authentication_failed", "oauth_org_not_allowed":
		return sessions.Auth
	case "billing_error":
		return sessions.Billing
	}
	if status == 0 {
		return sessions.Network
	}
	return sessions.KindFromStatus(status)
}

func (s *state) assistant(w *wire, line []byte) []sessions.Event {
	sub := w.ParentToolUseID != nil && *w.ParentToolUseID != ""
	if w.Error != "" {
		// The API call failed for good; the result line that follows
		// decides the turn's fate. A subagent's failure is not the turn's.
		if !sub {
			text := joinText(w.Message.Content)
			s.turn.synthetic = syntheticKind(w.Error, text)
			s.turn.syntheticText = text
		}
		if w.Message.Model == syntheticModel {
			// A stand-in, not model output: no activity to report.
			return nil
		}
	}
	var events []sessions.Event
	for _, b := range w.Message.Content {
		switch b.Type {
		case "text":
			events = addActivity(events, prefix(sub, "writing a reply"))
		case "thinking", "redacted_thinking":
			events = addActivity(events, prefix(sub, "thinking"))
		case "tool_use":
			s.tools = agentkit.Remember(s.tools, b.ID, b.Name)
			events = append(events, sessions.Event{Kind: sessions.EvToolStarted, CallID: b.ID, Name: b.Name, Detail: prefix(sub, "tool call")})
			if !sub && isTodoTool(b.Name) {
				// The main thread's task list; a subagent keeps its own.
				events[len(events)-1].Todos = s.todos.update(line, b.ID)
			}
			if r := waitReasonForTool(b.Name); r != sessions.NoWait {
				events = append(events, sessions.Event{Kind: sessions.EvWaitingOnUser, Reason: r, CallID: b.ID, Name: b.Name})
			}
		}
	}
	if len(events) == 0 {
		events = agentkit.One(sessions.EvActivity, prefix(sub, "assistant message"))
	}
	// The usage rides on the line's first event: one report per line, and
	// a subagent's calls are counted too (they are spent all the same).
	r := s.usage.Delta(usageReport(&w.Message))
	if r != nil {
		s.turn.counted = s.turn.counted.Add(r.Tokens)
		if !sub || s.turn.model == "" {
			s.turn.model = r.Model
		}
	}
	events[0].Usage = r
	return events
}

// resultUsage is what the result line's usage adds to the turn's assistant
// messages. Measured with CLI 2.1.197: an assistant line carries the usage
// of its call's message_start, so its output count is 1 whatever the model
// wrote; the result's usage is the turn's calls summed with their final
// output. The difference, per class and never negative, is counted against
// the turn's model. Subagents' messages are in what was counted, so a result
// that sums them too counts them once, and one that does not loses only
// their output beyond the first token, never counts anything twice. (The result's modelUsage and total_cost_usd are the
// process's running totals, keyed by the model the CLI asked for
// ("claude-opus-4-8[1m]") rather than the one that answered: not read.)
func (s *state) resultUsage(w *wire) *sessions.UsageReport {
	if w.Usage == nil || s.turn.model == "" {
		return nil
	}
	u := w.Usage
	more := sessions.Tokens{
		Input: u.InputTokens, Output: u.OutputTokens,
		CacheWrite: u.CacheCreationInputTokens, CacheRead: u.CacheReadInputTokens,
	}.Sub(s.turn.counted)
	if more.IsZero() {
		return nil
	}
	return &sessions.UsageReport{Model: s.turn.model, Tokens: more, Mode: sessions.UsageDelta}
}

func (s *state) user(w *wire, line []byte) []sessions.Event {
	sub := w.ParentToolUseID != nil && *w.ParentToolUseID != ""
	blocks := w.Message.Content
	if blocks == nil {
		if text, ok := userText(line); ok {
			blocks = []block{{Type: "text", Text: text}}
		}
	}
	var events []sessions.Event
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			name := s.tools[b.ToolUseID]
			delete(s.tools, b.ToolUseID)
			events = append(events, sessions.Event{Kind: sessions.EvToolFinished, CallID: b.ToolUseID, Name: name, Detail: prefix(sub, "tool result")})
		case "text":
			if strings.HasPrefix(b.Text, interruptMarker) {
				// The CLI's note that our interrupt landed: the end of the
				// turn, not activity that would make a stalled turn Working
				// again just before its abort.
				s.turn.interrupted = true
				events = append(events, sessions.Event{Kind: sessions.EvMetrics, Detail: "interrupted by the user"})
				continue
			}
			events = addActivity(events, prefix(sub, "prompt received"))
		}
	}
	if len(events) == 0 {
		events = agentkit.One(sessions.EvActivity, prefix(sub, "user message"))
	}
	return events
}

// userText reads a user message whose content is a bare string, the form the
// transcript uses for typed prompts. It costs a second parse, paid only by
// lines whose content did not decode as blocks.
func userText(line []byte) (string, bool) {
	var u struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(line, &u); err != nil || u.Message.Content == "" {
		return "", false
	}
	return u.Message.Content, true
}

func (s *state) rateLimit(w *wire) []sessions.Event {
	info := w.RateLimitInfo
	if info.Status == "rejected" {
		s.turn.rejected = true
		// resetsAt is unix seconds; anything past year 5000 is garbage.
		if info.ResetsAt > 0 && info.ResetsAt < 1e11 {
			s.turn.resetsAt = time.Unix(int64(info.ResetsAt), 0).UTC()
		}
	}
	// The plan's window status is bookkeeping; only a failed result turns
	// it into a state.
	ev := sessions.Event{Kind: sessions.EvMetrics, Detail: sessions.SanitizeMessage("rate limit " + agentkit.OrDefault(info.Status, "update"))}
	if info.RateLimitType == "" && info.Status != "rejected" {
		// "allowed" and nothing more (measured with 2.1.197 at a turn's
		// first call): no window to show.
		return []sessions.Event{ev}
	}
	rw := PlanWindow(info)
	ev.RateWindow = &rw
	return []sessions.Event{ev}
}

// RateLimitInfo is a plan usage window as Claude Code reports it wherever
// it does: the stream's rate_limit_event and a transcript's API error
// record (apiErrorParams.rate_limit_info) carry the same object.
type RateLimitInfo struct {
	// Status is Claude's verdict ("allowed", "allowed_warning", "rejected").
	Status string `json:"status"`
	// ResetsAt is the window's reset in unix seconds.
	ResetsAt float64 `json:"resetsAt"`
	// RateLimitType names the window ("five_hour"; empty: unnamed).
	RateLimitType string `json:"rateLimitType"`
	// Utilization is the used fraction when given (1.0 is all of it).
	Utilization *float64 `json:"utilization"`
}

// PlanWindow is the window info reports: its type ("plan" when unnamed),
// its status, its use and its reset. A figure out of range is dropped.
func PlanWindow(info RateLimitInfo) sessions.RateWindow {
	rw := sessions.RateWindow{Kind: agentkit.Clip(agentkit.OrDefault(info.RateLimitType, "plan")), Status: agentkit.Clip(info.Status), Used: -1}
	if u := info.Utilization; u != nil && *u >= 0 && *u <= 10 {
		rw.Used = min(*u*100, 100)
	}
	// Unix seconds; anything past year 5000 is garbage.
	if info.ResetsAt > 0 && info.ResetsAt < 1e11 {
		rw.ResetsAt = time.Unix(int64(info.ResetsAt), 0).UTC()
	}
	return rw
}

func (s *state) controlRequest(w *wire) ([]sessions.Event, bool) {
	if w.Request.Subtype != "can_use_tool" {
		// hook_callback, mcp_message, … only come to hosts that registered
		// for them; we did not.
		return nil, false
	}
	if w.RequestID != "" {
		if len(s.pending) >= maxTracked {
			for id := range s.pending {
				delete(s.pending, id)
				break
			}
		}
		if s.pending == nil {
			s.pending = map[string]json.RawMessage{}
		}
		// Unmarshal already copied Input out of the line buffer.
		s.pending[w.RequestID] = w.Request.Input
	}
	reason := waitReasonForTool(w.Request.ToolName)
	if reason == sessions.NoWait {
		reason = sessions.WaitPermission
	}
	return []sessions.Event{{
		Kind:       sessions.EvWaitingOnUser,
		Reason:     reason,
		Name:       w.Request.ToolName,
		Permission: &sessions.Permission{RequestID: w.RequestID, Tool: w.Request.ToolName, Input: sessions.ToolInputSummary(w.Request.Input)},
	}}, true
}

// controlCancel handles the CLI withdrawing a permission request it asked
// (the turn was interrupted, or the request was answered elsewhere).
func (s *state) controlCancel(w *wire) []sessions.Event {
	if _, ok := s.pending[w.RequestID]; !ok {
		return agentkit.One(sessions.EvActivity, "control request cancelled")
	}
	delete(s.pending, w.RequestID)
	// The request id says which of several open requests was withdrawn.
	return []sessions.Event{{
		Kind: sessions.EvUserAnswered, Detail: "permission request withdrawn by the agent",
		Permission: &sessions.Permission{RequestID: w.RequestID},
	}}
}

func (s *state) result(w *wire) sessions.Event {
	e := s.resultEvent(w)
	e.Usage = s.resultUsage(w)
	s.endTurn()
	return e
}

func (s *state) resultEvent(w *wire) sessions.Event {
	if !w.IsError {
		return sessions.Event{Kind: sessions.EvTurnCompleted, Detail: "turn completed"}
	}
	aborted := w.TerminalReason == "aborted_streaming" || w.TerminalReason == "aborted_tools" ||
		w.Subtype == "error_during_execution" && s.turn.interrupted
	if aborted {
		return sessions.Event{Kind: sessions.EvTurnAborted, Detail: sessions.SanitizeMessage(agentkit.OrDefault(w.TerminalReason, "interrupted"))}
	}
	return sessions.Event{Kind: sessions.EvTurnFailed, Failure: s.classify(w)}
}

// classify decides why a turn failed, strongest evidence first: the CLI's
// own terminal reason, the HTTP status, the synthetic error message's kind,
// a rejected plan rate limit, then the result text.
func (s *state) classify(w *wire) sessions.Failure {
	text := w.Result
	if text == "" && len(w.Errors) > 0 {
		text = strings.Join(w.Errors, "; ")
	}
	if text == "" {
		text = s.turn.syntheticText
	}
	if text == "" {
		text = agentkit.OrDefault(w.TerminalReason, w.Subtype)
	}
	kind := sessions.OtherFailure
	switch {
	case w.TerminalReason == "prompt_too_long" || w.TerminalReason == "blocking_limit":
		kind = sessions.ContextOverflow
	case statusKind(w.APIErrorStatus) != sessions.NoFailure:
		kind = statusKind(w.APIErrorStatus)
	case s.turn.synthetic != sessions.NoFailure && s.turn.synthetic != sessions.OtherFailure:
		kind = s.turn.synthetic
	case s.turn.rejected:
		kind = sessions.RateLimit
	case textKind(text) != sessions.NoFailure && !(textKind(text) == sessions.Network && w.APIErrorStatus != 0):
		// A connection phrase in the text of an answer the API did give
		// (a 400 about a timed-out tool, say) is not a connection failure.
		kind = textKind(text)
	}
	f := sessions.Failure{Kind: kind, Message: sessions.SanitizeMessage(text)}
	if kind == sessions.RateLimit && !s.turn.resetsAt.IsZero() {
		f.RetryAt = s.turn.resetsAt
	}
	return f
}

// endTurn forgets the per-turn evidence once the result line consumed it.
// Every tool and permission request of the turn is settled by its result.
func (s *state) endTurn() {
	s.turn = turnState{}
	clear(s.tools)
	clear(s.pending)
}

// statusKind classifies a result's api_error_status when the status alone is
// conclusive; a 400 is not (it may be an overflow or any bad request).
func statusKind(status int) sessions.FailureKind {
	if status == 0 {
		return sessions.NoFailure
	}
	if k := sessions.KindFromStatus(status); k != sessions.OtherFailure {
		return k
	}
	return sessions.NoFailure
}

// syntheticKind classifies the synthetic error message by its error word,
// using its text where the word is too broad.
func syntheticKind(errWord, text string) sessions.FailureKind {
	lower := strings.ToLower(text)
	switch errWord {
	case "authentication_failed", "oauth_org_not_allowed":
		return sessions.Auth
	case "billing_error":
		return sessions.Billing
	case "rate_limit":
		return sessions.RateLimit
	case "invalid_request":
		if tooLong(lower) {
			return sessions.ContextOverflow
		}
	case "server_error":
		if strings.Contains(lower, "overloaded") || strings.Contains(lower, "529") {
			return sessions.Overloaded
		}
	}
	// "API Error: Unable to connect to API (ECONNRESET)" and "Connection to
	// the API was lost" come as server_error: the network, not the server.
	if sessions.ConnectionErrorText(lower) {
		return sessions.Network
	}
	return sessions.OtherFailure
}

func tooLong(lower string) bool {
	return strings.Contains(lower, "too long") || strings.Contains(lower, "context window") ||
		strings.Contains(lower, "context length") || strings.Contains(lower, "context limit")
}

// textKind classifies a result text by the CLI's known phrasings
// (code.claude.com/docs/en/errors.md). NoFailure means no phrase matched.
func textKind(text string) sessions.FailureKind {
	lower := strings.ToLower(text)
	switch {
	case strings.Contains(lower, "prompt is too long"):
		return sessions.ContextOverflow
	case strings.Contains(lower, "invalid api key"), strings.Contains(lower, "/login"):
		return sessions.Auth
	case strings.Contains(lower, "credit balance"):
		return sessions.Billing
	case strings.Contains(lower, "rate limit"), strings.Contains(lower, "session limit"), strings.Contains(lower, "usage limit"):
		return sessions.RateLimit
	case strings.Contains(lower, "overloaded"):
		return sessions.Overloaded
	case sessions.ConnectionErrorText(lower):
		return sessions.Network
	}
	return sessions.NoFailure
}

func terminalTaskStatus(status string) bool {
	switch status {
	case "completed", "failed", "stopped", "killed":
		return true
	}
	return false
}

func waitReasonForTool(name string) sessions.WaitReason {
	switch name {
	case toolAskUser:
		return sessions.WaitQuestion
	case toolExitPlan:
		return sessions.WaitPlan
	}
	return sessions.NoWait
}

// addActivity appends an activity event unless the previous event is the
// same activity: a message of ten text blocks is one piece of evidence.
func addActivity(events []sessions.Event, detail string) []sessions.Event {
	if n := len(events); n > 0 && events[n-1].Kind == sessions.EvActivity && events[n-1].Detail == detail {
		return events
	}
	return append(events, sessions.Event{Kind: sessions.EvActivity, Detail: detail})
}

func prefix(sub bool, detail string) string {
	if sub {
		return "subagent " + detail
	}
	return detail
}

func joinText(blocks []block) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, " ")
}

// millis converts a (fractional) millisecond count from the wire to a
// duration, clamped to [0, maxRetryDelay].
func millis(ms float64) time.Duration {
	d := ms * float64(time.Millisecond)
	switch {
	case !(d > 0):
		return 0
	case d > float64(maxRetryDelay):
		return maxRetryDelay
	}
	return time.Duration(d)
}
