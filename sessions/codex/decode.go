package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// ErrMalformed marks a line that is not a JSON-RPC object. The decoder skips
// and counts such lines; it never stops on them.
var ErrMalformed = errors.New("codex stream: malformed line")

// ErrUnknown marks a well-formed line whose method this decoder does not
// know. Codex adds notifications between releases, so an unknown line is
// counted and skipped, never fatal.
var ErrUnknown = errors.New("codex stream: unknown method")

// LineInfo describes one stdout line, decoded or skipped.
type LineInfo struct {
	// Frame: the line's number and size, and why it was skipped.
	agentkit.Frame
	// Method is the notification's or request's method; empty for a
	// response to one of our requests.
	Method string
}

// maxTracked bounds each per-stream map (see the Claude decoder).
const maxTracked = agentkit.MaxTracked

// wire is the union of the fields the decoder reads from any line: one
// struct and one json.Unmarshal per line, fields not declared (command
// output, diffs, the thread's history) skipped without being allocated.
type wire struct {
	// ID is set on responses and on server requests; a number or a string.
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result *struct {
		Thread wireThread `json:"thread"`
		Turn   struct {
			ID string `json:"id"`
		} `json:"turn"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Params params `json:"params"`
}

type params struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	// Turn is turn/started's and turn/completed's.
	Turn struct {
		ID     string     `json:"id"`
		Status string     `json:"status"`
		Error  *turnError `json:"error"`
	} `json:"turn"`
	Item struct {
		Type   string `json:"type"`
		ID     string `json:"id"`
		Server string `json:"server"`
		Tool   string `json:"tool"`
		Status string `json:"status"`
	} `json:"item"`
	// error notification.
	Error     *turnError `json:"error"`
	WillRetry bool       `json:"willRetry"`
	// thread/status/changed.
	Status struct {
		Type        string   `json:"type"`
		ActiveFlags []string `json:"activeFlags"`
	} `json:"status"`
	// account/rateLimits/updated.
	RateLimits struct {
		Primary   *rateWindow `json:"primary"`
		Secondary *rateWindow `json:"secondary"`
	} `json:"rateLimits"`
	// turn/plan/updated: the plan's steps; only their status is read.
	Plan []sessions.TodoItem `json:"plan"`
	// serverRequest/resolved.
	RequestID json.RawMessage `json:"requestId"`
	// warning, hook/*.
	Message string `json:"message"`
	// thread/started.
	Thread wireThread `json:"thread"`
	// thread/tokenUsage/updated: the thread's running total (total) and
	// its last call's (last); the total is read.
	TokenUsage *struct {
		Total wireTokens `json:"total"`
	} `json:"tokenUsage"`
}

// wireThread is a thread as thread/start, thread/resume and thread/started
// give it: its id and the model it runs.
type wireThread struct {
	ID    string `json:"id"`
	Model string `json:"model"`
}

// wireTokens is Codex's TokenUsageBreakdown. Its inputTokens include the
// cached ones, as the OpenAI API counts them.
type wireTokens struct {
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
}

// tokens splits the breakdown into the four rate classes: input is what
// was neither read from nor written to the cache; reasoning is part of
// output, as it is billed.
func (t wireTokens) tokens() sessions.Tokens {
	return sessions.Tokens{
		Input:      max(t.InputTokens-t.CachedInputTokens-t.CacheWriteInputTokens, 0),
		Output:     t.OutputTokens,
		CacheWrite: t.CacheWriteInputTokens,
		CacheRead:  t.CachedInputTokens,
	}
}

type rateWindow struct {
	UsedPercent        float64 `json:"usedPercent"`
	WindowDurationMins float64 `json:"windowDurationMins"`
	ResetsAt           float64 `json:"resetsAt"`
}

// turnError is Codex's TurnError: a message and the structured
// codexErrorInfo, a bare string ("usageLimitExceeded") or a one-key object
// ({"httpConnectionFailed":{"httpStatusCode":429}}).
type turnError struct {
	Message           string          `json:"message"`
	CodexErrorInfo    json.RawMessage `json:"codexErrorInfo"`
	AdditionalDetails string          `json:"additionalDetails"`
}

// state is what decoding remembers between lines of one stream.
type state struct {
	// calls maps the id of each request we sent to its method, so its
	// response can be read (thread/start's thread id, turn/start's turn).
	calls map[string]string
	// thread is our thread's id; turn the turn in flight ("" between).
	thread, turn string
	// tools maps an open item's id to its tool name.
	tools map[string]string
	// pending maps an unanswered server request's id to its method and
	// its id as sent (a number or a string), for the answer.
	pending map[string]pendingRequest
	// resetsAt is the latest exhausted rate-limit window's reset.
	resetsAt time.Time
	// lastError is the last error notification of the turn in flight,
	// used when turn/completed carries none.
	lastError *turnError
	// threadErr is the error answer to thread/start or thread/resume.
	threadErr string
	// starting is open while a turn/start is unanswered: a prompt sent
	// then must wait to know whether to steer the turn it started.
	starting chan struct{}
	// steers holds the text of each unanswered turn/steer by request id;
	// refused lists the texts of those Codex refused (the turn had ended),
	// which the process then sends as a new turn.
	steers  map[string]string
	refused []string
	// models maps a thread id to its model, for its usage reports.
	models map[string]string
}

// rememberThread records a thread's model for its usage reports.
func (s *state) rememberThread(t wireThread) {
	if t.ID != "" && t.Model != "" {
		s.models = agentkit.Remember(s.models, t.ID, t.Model)
	}
}

// tokenUsage is a thread's running total as a cumulative report counted by
// thread (sessions.UsageCumulative, Counter the thread id), against the
// thread's model: a missed notification loses nothing, a repeated one adds
// nothing, and the session keeps each thread's last total, so a resumed
// thread whose total includes its past does not count that past again.
func (s *state) tokenUsage(p *params) *sessions.UsageReport {
	if p.TokenUsage == nil {
		return nil
	}
	thread := agentkit.OrDefault(p.ThreadID, s.thread)
	model := s.models[thread]
	if model == "" {
		model = agentkit.OrDefault(s.models[s.thread], "unknown")
	}
	return &sessions.UsageReport{Model: model, Tokens: p.TokenUsage.Total.tokens(), Mode: sessions.UsageCumulative, Counter: thread}
}

// started ends the wait for a turn/start's answer.
func (s *state) started() {
	if s.starting != nil {
		close(s.starting)
		s.starting = nil
	}
}

type pendingRequest struct {
	method string
	raw    json.RawMessage
}

// DecodeLine decodes one stdout line on its own, with no memory of earlier
// lines (responses to our requests are not recognized). Use a Decoder for a
// stream.
func DecodeLine(line []byte) (events []sessions.Event, info LineInfo, err error) {
	var s state
	events, info, _, err = s.decode(line)
	return events, info, err
}

func (s *state) decode(line []byte) ([]sessions.Event, LineInfo, []byte, error) {
	var info LineInfo
	var w wire
	if _, ok, err := info.Unmarshal(line, &w, ErrMalformed); !ok {
		return nil, info, nil, err
	}
	info.Method = w.Method
	var (
		events []sessions.Event
		reply  []byte
		known  bool
	)
	switch {
	case w.Method == "" && len(w.ID) > 0:
		events, known = s.response(&w)
	case w.Method != "" && len(w.ID) > 0:
		events, reply, known = s.serverRequest(&w)
	case w.Method != "":
		events, known = s.notification(&w)
	}
	if !known {
		info.Skip = agentkit.SkipUnknown
		info.Detail = fmt.Sprintf("unknown method %q", agentkit.Clip(w.Method))
		return nil, info, reply, fmt.Errorf("%w: %q", ErrUnknown, agentkit.Clip(w.Method))
	}
	return events, info, reply, nil
}

// response handles the answer to one of our requests.
func (s *state) response(w *wire) ([]sessions.Event, bool) {
	id := agentkit.RPCID(w.ID)
	method, ok := s.calls[id]
	if !ok {
		return nil, false
	}
	delete(s.calls, id)
	if method == methodTurnStart {
		defer s.started()
	}
	if method == methodTurnSteer {
		text, ok := s.steers[id]
		delete(s.steers, id)
		if w.Error != nil && ok {
			// The turn ended before the prompt reached it: like Claude
			// Code, the prompt then starts a turn of its own.
			s.refused = append(s.refused, text)
			return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "turn/steer refused; the prompt starts a new turn"}}, true
		}
	}
	if w.Error != nil {
		msg := sessions.SanitizeMessage(w.Error.Message)
		switch method {
		case methodThreadStart, methodThreadResume:
			s.threadErr = agentkit.OrDefault(msg, method+" failed")
			return []sessions.Event{{Kind: sessions.EvMetrics, Detail: sessions.SanitizeMessage(method + " failed: " + msg)}}, true
		case methodTurnStart:
			// The prompt never became a turn: the turn the app started
			// for it has failed.
			return []sessions.Event{{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{
				Kind: sessions.OtherFailure, Message: sessions.SanitizeMessage("turn/start refused: " + msg)}}}, true
		}
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: sessions.SanitizeMessage(method + " refused: " + msg)}}, true
	}
	switch method {
	case methodThreadStart, methodThreadResume:
		if w.Result != nil && w.Result.Thread.ID != "" {
			s.thread = w.Result.Thread.ID
			s.rememberThread(w.Result.Thread)
			return []sessions.Event{{Kind: sessions.EvSessionInit, AgentSessionID: s.thread, Detail: "thread " + verb(method)}}, true
		}
	case methodTurnStart:
		if w.Result != nil && w.Result.Turn.ID != "" && s.turn == "" {
			s.turn = w.Result.Turn.ID
		}
	}
	// initialize, turn/interrupt, thread/compact/start, turn/steer: the
	// acknowledgement is bookkeeping, not progress (an agent that answers
	// a stall interrupt and stays hung must still look stalled).
	return []sessions.Event{{Kind: sessions.EvMetrics, Detail: method + " answered"}}, true
}

func verb(method string) string {
	if method == methodThreadResume {
		return "resumed"
	}
	return "started"
}

// serverRequest handles a request Codex sends us: approvals and questions
// wait on the user; anything else is refused at once so the agent does not
// wait on a client that will never answer.
func (s *state) serverRequest(w *wire) ([]sessions.Event, []byte, bool) {
	id := agentkit.RPCID(w.ID)
	var reason sessions.WaitReason
	var tool string
	switch w.Method {
	case "item/commandExecution/requestApproval", "execCommandApproval":
		reason, tool = sessions.WaitPermission, toolCommand
	case "item/fileChange/requestApproval", "applyPatchApproval":
		reason, tool = sessions.WaitPermission, toolFileChange
	case "item/permissions/requestApproval":
		reason, tool = sessions.WaitPermission, "permissions"
	case "item/tool/requestUserInput":
		reason, tool = sessions.WaitQuestion, "request_user_input"
	case "mcpServer/elicitation/request":
		reason, tool = sessions.WaitQuestion, "mcp elicitation"
	default:
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: sessions.SanitizeMessage("refused request " + w.Method)}},
			errorReply(w.ID, -32601, "not supported by this client"), true
	}
	if s.pending == nil {
		s.pending = map[string]pendingRequest{}
	}
	if len(s.pending) >= maxTracked {
		clear(s.pending)
	}
	// Unmarshal already copied ID out of the line buffer.
	s.pending[id] = pendingRequest{method: w.Method, raw: w.ID}
	return []sessions.Event{{
		Kind:       sessions.EvWaitingOnUser,
		Reason:     reason,
		CallID:     w.Params.ItemID,
		Name:       tool,
		Permission: &sessions.Permission{RequestID: id, Tool: tool},
	}}, nil, true
}

// The tool names the app shows for Codex's items.
const (
	toolCommand    = "command"
	toolFileChange = "file change"
)

func (s *state) notification(w *wire) ([]sessions.Event, bool) {
	p := &w.Params
	sub := p.ThreadID != "" && s.thread != "" && p.ThreadID != s.thread
	switch w.Method {
	case "turn/started":
		if sub {
			return agentkit.One(sessions.EvActivity, "subagent turn started"), true
		}
		s.turn, s.lastError = p.Turn.ID, nil
		s.started()
		return agentkit.One(sessions.EvActivity, "turn started"), true
	case "turn/completed":
		if sub {
			return agentkit.One(sessions.EvActivity, "subagent turn ended"), true
		}
		return []sessions.Event{s.turnCompleted(p)}, true
	case "item/started", "item/completed":
		return s.item(w.Method == "item/started", p, sub), true
	case "item/agentMessage/delta":
		return agentkit.One(sessions.EvActivity, prefix(sub, "writing a reply")), true
	case "item/reasoning/summaryTextDelta", "item/reasoning/summaryPartAdded", "item/reasoning/textDelta":
		return agentkit.One(sessions.EvActivity, prefix(sub, "thinking")), true
	case "item/plan/delta":
		return agentkit.One(sessions.EvActivity, prefix(sub, "planning")), true
	case "turn/plan/updated":
		ev := agentkit.One(sessions.EvActivity, prefix(sub, "planning"))
		if !sub {
			// The main thread's plan is the session's task list; a
			// subagent's is its own business.
			ev[0].Todos = planProgress(p)
		}
		return ev, true
	case "item/commandExecution/outputDelta", "item/commandExecution/terminalInteraction", "command/exec/outputDelta",
		"process/outputDelta":
		return agentkit.One(sessions.EvActivity, prefix(sub, "command output")), true
	case "item/fileChange/outputDelta", "item/fileChange/patchUpdated", "turn/diff/updated":
		return agentkit.One(sessions.EvActivity, prefix(sub, "editing files")), true
	case "item/mcpToolCall/progress":
		return agentkit.One(sessions.EvActivity, prefix(sub, "tool progress")), true
	case "hook/started", "hook/completed":
		return agentkit.One(sessions.EvActivity, "hook "+strings.TrimPrefix(w.Method, "hook/")), true
	case "error":
		return s.errorNote(p, sub), true
	case "thread/tokenUsage/updated":
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "token usage", Usage: s.tokenUsage(p)}}, true
	case "thread/started":
		s.rememberThread(p.Thread)
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: w.Method}}, true
	case "account/rateLimits/updated":
		s.rateLimits(p)
		// One event per window (an Event carries one); the first, or one
		// alone when no window has figures, says what the line was.
		events := []sessions.Event{{Kind: sessions.EvMetrics, Detail: "rate limits"}}
		for i, w := range rateWindows(p) {
			if i > 0 {
				events = append(events, sessions.Event{Kind: sessions.EvMetrics, Detail: "rate limits"})
			}
			events[i].RateWindow = &w
		}
		return events, true
	case "thread/compacted":
		// The compaction item (contextCompaction) carries start and end;
		// this legacy note only confirms it.
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "thread compacted"}}, true
	case "serverRequest/resolved":
		id := agentkit.RPCID(p.RequestID)
		if _, ok := s.pending[id]; !ok {
			// Answered by us: the app recorded the answer when it sent it.
			return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "request resolved"}}, true
		}
		delete(s.pending, id)
		return []sessions.Event{{Kind: sessions.EvUserAnswered, Detail: "request withdrawn by the agent",
			Permission: &sessions.Permission{RequestID: id}}}, true
	case "thread/status/changed", "thread/settings/updated", "thread/name/updated",
		"warning", "configWarning", "deprecationNotice", "guardianWarning", "model/rerouted", "model/verification",
		"mcpServer/startupStatus/updated", "remoteControl/status/changed", "skills/changed", "account/updated",
		"app/list/updated", "thread/goal/updated", "thread/queue/changed", "thread/readState/changed",
		"rawResponseItem/completed", "rawResponse/completed", "turn/moderationMetadata",
		"modelProvider/authRecoveryStarted", "modelProvider/authRecoveryCompleted", "fs/changed",
		"model/safetyBuffering/updated", "item/autoApprovalReview/started", "item/autoApprovalReview/completed",
		"thread/closed", "thread/environment/connected", "thread/environment/disconnected", "process/exited":
		// Bookkeeping: recorded, but it must not move the stall clock.
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: sessions.SanitizeMessage(w.Method)}}, true
	}
	return nil, false
}

// item maps an item's start or completion: the items that do work are
// tools, compaction is Compacting, the rest (messages, reasoning) activity.
func (s *state) item(started bool, p *params, sub bool) []sessions.Event {
	it := p.Item
	name := toolName(it.Type, it.Server, it.Tool)
	switch {
	case it.Type == "contextCompaction":
		if sub {
			return agentkit.One(sessions.EvActivity, "subagent compaction")
		}
		if started {
			return []sessions.Event{{Kind: sessions.EvCompactionStarted, Detail: "compacting the context"}}
		}
		return []sessions.Event{{Kind: sessions.EvCompactionFinished, OK: true, Detail: "compaction finished"}}
	case name != "":
		if started {
			s.tools = agentkit.Remember(s.tools, it.ID, name)
			return []sessions.Event{{Kind: sessions.EvToolStarted, CallID: it.ID, Name: name, Detail: prefix(sub, "tool call")}}
		}
		delete(s.tools, it.ID)
		return []sessions.Event{{Kind: sessions.EvToolFinished, CallID: it.ID, Name: name, Detail: prefix(sub, sessions.SanitizeMessage(name+" "+agentkit.OrDefault(it.Status, "finished")))}}
	}
	what := "message"
	switch it.Type {
	case "agentMessage":
		what = "writing a reply"
	case "reasoning":
		what = "thinking"
	case "userMessage":
		what = "prompt received"
	case "plan":
		what = "planning"
	}
	return agentkit.One(sessions.EvActivity, prefix(sub, what))
}

// toolName is the name an item that does work is shown with, or "" for an
// item that is not a tool.
func toolName(typ, server, tool string) string {
	switch typ {
	case "commandExecution":
		return toolCommand
	case "fileChange":
		return toolFileChange
	case "mcpToolCall":
		return sessions.SanitizeMessage("mcp " + server + "/" + tool)
	case "dynamicToolCall", "collabAgentToolCall":
		return sessions.SanitizeMessage(agentkit.OrDefault(tool, typ))
	case "webSearch":
		return "web search"
	case "imageGeneration":
		return "image generation"
	case "imageView":
		return "image view"
	case "sleep":
		return "sleep"
	}
	return ""
}

func (s *state) turnCompleted(p *params) sessions.Event {
	defer s.endTurn()
	switch p.Turn.Status {
	case "completed":
		return sessions.Event{Kind: sessions.EvTurnCompleted, Detail: "turn completed"}
	case "interrupted":
		return sessions.Event{Kind: sessions.EvTurnAborted, Detail: "interrupted"}
	}
	te := p.Turn.Error
	if te == nil {
		te = s.lastError
	}
	return sessions.Event{Kind: sessions.EvTurnFailed, Failure: s.classify(te)}
}

func (s *state) endTurn() {
	s.turn, s.lastError = "", nil
	clear(s.tools)
	clear(s.pending)
}

// reconnectRE reads the attempt out of Codex's retry message
// ("Reconnecting... 1/2 (…)").
var reconnectRE = regexp.MustCompile(`(\d+)/(\d+)`)

// errorNote handles the error notification: with willRetry it is the CLI's
// own retry (the turn goes on), otherwise it announces the failure that
// turn/completed then reports.
func (s *state) errorNote(p *params, sub bool) []sessions.Event {
	if sub || p.Error == nil {
		return agentkit.One(sessions.EvActivity, prefix(sub, "error reported"))
	}
	if !p.WillRetry {
		s.lastError = p.Error
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "error reported"}}
	}
	f := s.classify(p.Error)
	ev := sessions.Event{Kind: sessions.EvRetryScheduled, Failure: f, Status: httpStatus(p.Error.CodexErrorInfo), Detail: "agent retry scheduled"}
	if m := reconnectRE.FindStringSubmatch(p.Error.Message); m != nil {
		ev.Attempt, _ = strconv.Atoi(m[1])
		ev.MaxAttempts, _ = strconv.Atoi(m[2])
	}
	return []sessions.Event{ev}
}

func (s *state) rateLimits(p *params) {
	var reset time.Time
	for _, w := range []*rateWindow{p.RateLimits.Primary, p.RateLimits.Secondary} {
		if w == nil || w.UsedPercent < 100 || !(w.ResetsAt > 0 && w.ResetsAt < 1e11) {
			continue
		}
		if t := time.Unix(int64(w.ResetsAt), 0).UTC(); t.After(reset) {
			reset = t
		}
	}
	s.resetsAt = reset
}

// rateWindows are the account's plan windows as Codex reports them (a
// ChatGPT login's; with an API key both are null, measured with 0.171.0):
// used percent, length and reset time, the primary (short) window and the
// secondary (weekly) one.
func rateWindows(p *params) []sessions.RateWindow {
	var out []sessions.RateWindow
	for i, w := range []*rateWindow{p.RateLimits.Primary, p.RateLimits.Secondary} {
		if w == nil {
			continue
		}
		if rw, ok := PlanWindow(i == 1, w.UsedPercent, w.WindowDurationMins, time.Unix(int64(min(max(w.ResetsAt, 0), 1e11)), 0)); ok {
			out = append(out, rw)
		}
	}
	return out
}

// PlanWindow is one of Codex's two plan windows (the primary, short one,
// or the secondary, weekly one) as a session keeps it, from what Codex
// reports of it wherever it does (the app-server's account rate limits, a
// rollout's token_count): its used percent, its length in minutes, its
// reset time. A figure out of range is dropped, not guessed; ok is false
// when the used percent is.
func PlanWindow(secondary bool, usedPercent, windowMins float64, resetsAt time.Time) (sessions.RateWindow, bool) {
	if !(usedPercent >= 0 && usedPercent <= 1000) {
		return sessions.RateWindow{}, false
	}
	rw := sessions.RateWindow{Kind: "primary", Used: min(usedPercent, 100)}
	if secondary {
		rw.Kind = "secondary"
	}
	// Unix 0 is no reset time; anything past year 5000 is garbage.
	if u := resetsAt.Unix(); u > 0 && u < 1e11 {
		rw.ResetsAt = resetsAt.UTC()
	}
	if windowMins > 0 && windowMins < 1e6 {
		rw.Length = time.Duration(windowMins * float64(time.Minute))
	}
	return rw, true
}

// planProgress counts a plan update's steps by status (pending,
// inProgress, completed); nil when the update has no steps.
func planProgress(p *params) *sessions.TodoProgress {
	if len(p.Plan) == 0 {
		return nil
	}
	t := sessions.TodosOf(p.Plan)
	return &t
}

// classify turns Codex's structured error into a failure: the
// codexErrorInfo first, the HTTP status it carries next, the message text
// last.
func (s *state) classify(te *turnError) sessions.Failure {
	if te == nil {
		return sessions.Failure{Kind: sessions.OtherFailure, Message: "the turn failed without an error"}
	}
	text := te.Message
	if te.AdditionalDetails != "" {
		text += " (" + te.AdditionalDetails + ")"
	}
	kind := infoKind(te.CodexErrorInfo)
	if kind == sessions.NoFailure {
		kind = textKind(text)
	}
	f := sessions.Failure{Kind: kind, Message: sessions.SanitizeMessage(text)}
	if kind == sessions.RateLimit && !s.resetsAt.IsZero() {
		f.RetryAt = s.resetsAt
	}
	return f
}

// infoKind classifies a codexErrorInfo; NoFailure when it says nothing
// conclusive ("other", absent).
func infoKind(raw json.RawMessage) sessions.FailureKind {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return sessions.NoFailure
	}
	var word string
	if raw[0] == '"' {
		if json.Unmarshal(raw, &word) != nil {
			return sessions.NoFailure
		}
	} else {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return sessions.NoFailure
		}
		for k := range obj {
			word = k
		}
	}
	switch word {
	case "usageLimitExceeded", "rateLimitExceeded", "usage_limit_exceeded":
		return sessions.RateLimit
	case "contextWindowExceeded", "context_window_exceeded":
		return sessions.ContextOverflow
	case "unauthorized":
		return sessions.Auth
	case "serverOverloaded", "flexUnavailable", "policyCapacityUnavailable", "server_overloaded":
		return sessions.Overloaded
	case "sessionBudgetExceeded":
		return sessions.Billing
	case "internalServerError":
		return sessions.Network
	case "httpConnectionFailed", "responseStreamConnectionFailed", "responseStreamDisconnected", "responseTooManyFailedAttempts":
		if st := httpStatus(raw); st != 0 {
			return sessions.KindFromStatus(st)
		}
		return sessions.Network
	}
	return sessions.NoFailure
}

// httpStatus is the httpStatusCode a codexErrorInfo object carries, or 0.
func httpStatus(raw json.RawMessage) int {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return 0
	}
	var obj map[string]struct {
		HTTPStatusCode int `json:"httpStatusCode"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return 0
	}
	for _, v := range obj {
		return v.HTTPStatusCode
	}
	return 0
}

// statusRE finds an HTTP status in Codex's messages ("last status: 429",
// "unexpected status 401 Unauthorized").
var statusRE = regexp.MustCompile(`status:? (\d{3})\b`)

// textKind classifies an error message by Codex's phrasings, measured
// against 0.171.0 (reference codex-captures/).
func textKind(text string) sessions.FailureKind {
	lower := strings.ToLower(text)
	switch {
	case strings.Contains(lower, "context window"):
		return sessions.ContextOverflow
	case strings.Contains(lower, "usage limit"):
		return sessions.RateLimit
	case strings.Contains(lower, "high demand"), strings.Contains(lower, "overloaded"):
		return sessions.Overloaded
	}
	if m := statusRE.FindStringSubmatch(lower); m != nil {
		st, _ := strconv.Atoi(m[1])
		return sessions.KindFromStatus(st)
	}
	if sessions.ConnectionErrorText(lower) || strings.Contains(lower, "idle timeout") {
		return sessions.Network
	}
	return sessions.OtherFailure
}

func prefix(sub bool, detail string) string {
	if sub {
		return "subagent " + detail
	}
	return detail
}
