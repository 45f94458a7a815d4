package gemini

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// ErrMalformed marks a line that is not a JSON-RPC object. The decoder skips
// and counts such lines; it never stops on them.
var ErrMalformed = errors.New("gemini stream: malformed line")

// ErrUnknown marks a well-formed line this decoder does not know (a method
// or a session update added by a later release): counted and skipped.
var ErrUnknown = errors.New("gemini stream: unknown message")

// LineInfo describes one stdout line, decoded or skipped.
type LineInfo struct {
	// Frame: the line's number and size, and why it was skipped.
	agentkit.Frame
	// Method is the notification's or request's method ("" for a response).
	Method string
}

// maxTracked bounds each per-stream map.
const maxTracked = agentkit.MaxTracked

// wire is the union of the fields read from any line: one json.Unmarshal
// per line, the rest (tool output, replayed history) never allocated.
type wire struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result *struct {
		SessionID  string `json:"sessionId"`
		StopReason string `json:"stopReason"`
		Meta       struct {
			Quota quota `json:"quota"`
		} `json:"_meta"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Details string `json:"details"`
		} `json:"data"`
	} `json:"error"`
	Params struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string `json:"sessionUpdate"`
			toolCall
		} `json:"update"`
		ToolCall toolCall `json:"toolCall"`
		Options  []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	} `json:"params"`
}

// quota is a prompt answer's _meta.quota: the turn's tokens, in all and by
// model.
type quota struct {
	TokenCount tokenCount `json:"token_count"`
	ModelUsage []struct {
		Model      string     `json:"model"`
		TokenCount tokenCount `json:"token_count"`
	} `json:"model_usage"`
}

// tokenCount is a prompt answer's usage: input (cached included: the CLI
// does not tell them apart) and output tokens.
type tokenCount struct {
	Input  int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
}

// usageEvents are the prompt answer's usage as reports, one per model: the
// turn's own usage (measured on Gemini CLI 0.61.0: the second prompt of a
// session reports its calls only), so each adds as it is.
func usageEvents(q *quota) []sessions.Event {
	var out []sessions.Event
	add := func(model string, tc tokenCount) {
		if tc.Input > 0 || tc.Output > 0 {
			out = append(out, sessions.Event{Kind: sessions.EvMetrics,
				Detail: fmt.Sprintf("tokens: %d in, %d out", tc.Input, tc.Output),
				Usage: &sessions.UsageReport{Model: model, Mode: sessions.UsageDelta,
					Tokens: sessions.Tokens{Input: tc.Input, Output: tc.Output}}})
		}
	}
	for _, m := range q.ModelUsage {
		add(agentkit.OrDefault(m.Model, "unknown"), m.TokenCount)
	}
	if len(q.ModelUsage) == 0 {
		add("unknown", q.TokenCount)
	}
	return out
}

type toolCall struct {
	ToolCallID string `json:"toolCallId"`
	Title      string `json:"title"`
	Kind       string `json:"kind"`
	Status     string `json:"status"`
}

// state is what decoding remembers between lines of one stream.
type state struct {
	// calls maps the id of each request we sent to its method.
	calls map[string]string
	// session is our session's id once opened; loading is set while
	// session/load replays the history (those updates are not this turn's).
	session  string
	loadID   string
	loading  bool
	openErr  string
	prompt   string // the id of the session/prompt in flight, "" between turns
	tools    map[string]string
	pending  map[string]pendingRequest
	clock    func() time.Time
	turnDone bool // a prompt's answer was read on the last line
}

type pendingRequest struct {
	raw             json.RawMessage
	allow, allowAll string
	reject          string
}

// DecodeLine decodes one stdout line on its own, with no memory of earlier
// lines (responses to our requests are not recognized). Use a Decoder for a
// stream.
func DecodeLine(line []byte) (events []sessions.Event, info LineInfo, err error) {
	var s state
	events, info, _, err = s.decode(line)
	return events, info, err
}

func (s *state) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

func (s *state) decode(line []byte) ([]sessions.Event, LineInfo, []byte, error) {
	var info LineInfo
	s.turnDone = false
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
	case w.Method == methodPermission && len(w.ID) > 0:
		events, known = s.permission(&w), true
	case w.Method != "" && len(w.ID) > 0:
		// fs/* and terminal/* are not offered in initialize; anything
		// else is refused at once so the agent never waits on us.
		events = []sessions.Event{{Kind: sessions.EvMetrics, Detail: sessions.SanitizeMessage("refused request " + w.Method)}}
		reply, known = errorReply(w.ID, -32601, "not supported by this client"), true
	case w.Method == methodUpdate:
		events, known = s.update(&w)
	}
	if !known {
		what := w.Method
		if what == methodUpdate {
			what = "update " + w.Params.Update.SessionUpdate
		}
		info.Skip = agentkit.SkipUnknown
		info.Detail = fmt.Sprintf("unknown %q", agentkit.Clip(what))
		return nil, info, reply, fmt.Errorf("%w: %q", ErrUnknown, agentkit.Clip(what))
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
	switch method {
	case methodSessionNew, methodSessionLoad:
		s.loading = false
		if w.Error != nil {
			// "Internal error" says nothing; its details' first line does
			// (measured: `No previous sessions found for this project.`,
			// `Invalid session identifier "…"`).
			msg := apiMessage(w.Error.Message)
			if d, _, _ := strings.Cut(strings.TrimSpace(w.Error.Data.Details), "\n"); d != "" {
				msg = d
			}
			s.openErr = agentkit.OrDefault(sessions.SanitizeMessage(msg), method+" failed")
			// The turn the app started for its prompt cannot run: it fails
			// with the reason, classified (an auth error is auth), instead
			// of waiting for the stall chain to find it silent.
			f := s.classify(w.Error.Code, msg)
			f.Message = sessions.SanitizeMessage("could not open the session: " + f.Message)
			return []sessions.Event{{Kind: sessions.EvTurnFailed, Failure: f}}, true
		}
		sid, verb := "", "started"
		if w.Result != nil {
			sid = w.Result.SessionID
		}
		if method == methodSessionLoad {
			// session/load answers without the id: it is the one asked for.
			sid, verb = agentkit.OrDefault(sid, s.loadID), "loaded"
		}
		if sid == "" {
			s.openErr = method + " answered without a session id"
			return []sessions.Event{{Kind: sessions.EvMetrics, Detail: s.openErr}}, true
		}
		s.session = sid
		return []sessions.Event{{Kind: sessions.EvSessionInit, AgentSessionID: sid, Detail: "session " + verb}}, true
	case methodPrompt:
		return s.promptAnswered(id, w), true
	}
	if w.Error != nil {
		if method == methodInitialize {
			s.openErr = agentkit.OrDefault(sessions.SanitizeMessage(apiMessage(w.Error.Message)), "initialize failed")
		}
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: sessions.SanitizeMessage(method + " refused: " + apiMessage(w.Error.Message))}}, true
	}
	// The acknowledgement is bookkeeping, not progress.
	return []sessions.Event{{Kind: sessions.EvMetrics, Detail: method + " answered"}}, true
}

// promptAnswered ends the turn: session/prompt is answered when the turn is
// over, with its stop reason, or with the error that ended it.
func (s *state) promptAnswered(id string, w *wire) []sessions.Event {
	if id == s.prompt {
		s.endTurn()
	}
	s.turnDone = true
	if w.Error != nil {
		return []sessions.Event{{Kind: sessions.EvTurnFailed, Failure: s.classify(w.Error.Code, w.Error.Message)}}
	}
	var out []sessions.Event
	reason := ""
	if w.Result != nil {
		reason = w.Result.StopReason
		out = append(out, usageEvents(&w.Result.Meta.Quota)...)
	}
	switch reason {
	case "end_turn":
		out = append(out, sessions.Event{Kind: sessions.EvTurnCompleted, Detail: "turn completed"})
	case "cancelled":
		out = append(out, sessions.Event{Kind: sessions.EvTurnAborted, Detail: "cancelled"})
	case "max_tokens":
		// Gemini CLI 0.61.0 answers max_tokens for ContextWindowWillOverflow:
		// it found the next request would not fit the model's window and
		// did not send it.
		out = append(out, sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.ContextOverflow,
			Message: "the next request would overflow the model's context window (stop reason max_tokens)"}})
	case "max_turn_requests":
		out = append(out, sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.OtherFailure,
			Message: "the CLI stopped the turn: its turn limit was reached or it detected a loop (stop reason max_turn_requests)"}})
	default:
		out = append(out, sessions.Event{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.OtherFailure,
			Message: sessions.SanitizeMessage("the turn ended with stop reason " + agentkit.OrDefault(reason, "(none)"))}})
	}
	return out
}

func (s *state) endTurn() {
	s.prompt = ""
	clear(s.tools)
	clear(s.pending)
}

// permission handles session/request_permission: the tool it asks about is
// open and the session waits on the user.
func (s *state) permission(w *wire) []sessions.Event {
	id := agentkit.RPCID(w.ID)
	tc := w.Params.ToolCall
	name := toolName(tc.Kind, tc.Title)
	var p pendingRequest
	p.raw = w.ID
	for _, o := range w.Params.Options {
		switch o.Kind {
		case "allow_once":
			p.allow = o.OptionID
		case "allow_always":
			p.allowAll = o.OptionID
		case "reject_once":
			p.reject = o.OptionID
		case "reject_always":
			if p.reject == "" {
				p.reject = o.OptionID
			}
		}
	}
	if s.pending == nil {
		s.pending = map[string]pendingRequest{}
	}
	if len(s.pending) >= maxTracked {
		clear(s.pending)
	}
	s.pending[id] = p
	var out []sessions.Event
	if _, open := s.tools[tc.ToolCallID]; !open && tc.ToolCallID != "" {
		s.tools = agentkit.Remember(s.tools, tc.ToolCallID, name)
		out = append(out, sessions.Event{Kind: sessions.EvToolStarted, CallID: tc.ToolCallID, Name: name, Detail: "tool call"})
	}
	return append(out, sessions.Event{
		Kind:       sessions.EvWaitingOnUser,
		Reason:     sessions.WaitPermission,
		CallID:     tc.ToolCallID,
		Name:       name,
		Permission: &sessions.Permission{RequestID: id, Tool: name},
	})
}

// update maps a session/update notification.
func (s *state) update(w *wire) ([]sessions.Event, bool) {
	u := &w.Params.Update
	if s.loading || s.session != "" && w.Params.SessionID != "" && w.Params.SessionID != s.session {
		// session/load replays the whole history before it answers; it is
		// not this turn's progress.
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "history replayed"}}, true
	}
	switch u.SessionUpdate {
	case "agent_message_chunk":
		return agentkit.One(sessions.EvActivity, "writing a reply"), true
	case "agent_thought_chunk":
		return agentkit.One(sessions.EvActivity, "thinking"), true
	case "plan":
		return agentkit.One(sessions.EvActivity, "planning"), true
	case "tool_call", "tool_call_update":
		return s.tool(u.SessionUpdate == "tool_call", &u.toolCall), true
	case "user_message_chunk", "available_commands_update", "current_mode_update", "config_option_update",
		"session_info_update", "usage_update":
		// Bookkeeping: recorded, but it must not move the stall clock.
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: u.SessionUpdate}}, true
	}
	return nil, false
}

// tool maps a tool call's announcement or update: pending and in_progress
// open it, completed and failed close it.
func (s *state) tool(announced bool, tc *toolCall) []sessions.Event {
	name, open := s.tools[tc.ToolCallID]
	if name == "" {
		name = toolName(tc.Kind, tc.Title)
	}
	switch tc.Status {
	case "completed", "failed":
		delete(s.tools, tc.ToolCallID)
		return []sessions.Event{{Kind: sessions.EvToolFinished, CallID: tc.ToolCallID, Name: name,
			Detail: sessions.SanitizeMessage(name + " " + tc.Status)}}
	case "pending", "in_progress", "":
		if !open && (announced || tc.Status == "in_progress") {
			s.tools = agentkit.Remember(s.tools, tc.ToolCallID, name)
			return []sessions.Event{{Kind: sessions.EvToolStarted, CallID: tc.ToolCallID, Name: name, Detail: "tool call"}}
		}
	}
	return agentkit.One(sessions.EvActivity, "tool progress")
}

// toolName is how a tool call is shown: ACP's kind for the common ones
// (execute is a command, as Codex's are), else the CLI's title.
func toolName(kind, title string) string {
	switch kind {
	case "execute":
		return "command"
	case "edit", "read", "search", "fetch", "delete", "move":
		return kind
	}
	if title != "" {
		return sessions.SanitizeMessage(agentkit.Clip(title))
	}
	return agentkit.OrDefault(kind, "tool")
}

// apiError is the API's error body the CLI passes through as the JSON-RPC
// error message (measured: 400 and 401 arrive as the raw body).
type apiError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type       string `json:"@type"`
			RetryDelay string `json:"retryDelay"`
		} `json:"details"`
	} `json:"error"`
}

// parseAPIError reads msg as an API error body; ok is false when it is
// plain text.
func parseAPIError(msg string) (apiError, bool) {
	var e apiError
	t := strings.TrimSpace(msg)
	if !strings.HasPrefix(t, "{") || json.Unmarshal([]byte(t), &e) != nil || e.Error.Message == "" && e.Error.Status == "" {
		return apiError{}, false
	}
	return e, true
}

// apiMessage is the human message of an error: the body's own message when
// the CLI passed the body through.
func apiMessage(msg string) string {
	if e, ok := parseAPIError(msg); ok {
		return agentkit.OrDefault(e.Error.Message, e.Error.Status)
	}
	return msg
}

// retryRE reads the delays the CLI and the API put in words: the CLI's
// "Suggested retry after 30s." and the API's "Please retry in 12.5s".
var retryRE = regexp.MustCompile(`(?i)(?:retry after|retry in) ([0-9]+(?:\.[0-9]+)?)(ms|s)\b`)

// classify turns a JSON-RPC error answering session/prompt into a failure.
// The CLI uses the HTTP status as the error code (measured: 400, 401, 429,
// 503) and either the API's body or its own sentence as the message.
func (s *state) classify(code int, msg string) sessions.Failure {
	text := msg
	var delay time.Duration
	status := code
	apiStatus := ""
	if e, ok := parseAPIError(msg); ok {
		text = agentkit.OrDefault(e.Error.Message, e.Error.Status)
		apiStatus = e.Error.Status
		if e.Error.Code != 0 {
			status = e.Error.Code
		}
		for _, d := range e.Error.Details {
			if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
				delay = parseDelay(d.RetryDelay)
			}
		}
	}
	if m := retryRE.FindStringSubmatch(text); m != nil && delay == 0 {
		delay = parseDelay(m[1] + m[2])
	}
	lower := strings.ToLower(text)
	kind := sessions.OtherFailure
	switch {
	case strings.Contains(lower, "input token count") || strings.Contains(lower, "context window") ||
		strings.Contains(lower, "maximum number of tokens"):
		kind = sessions.ContextOverflow
	case status == 429 || apiStatus == "RESOURCE_EXHAUSTED" || strings.Contains(lower, "quota") ||
		strings.Contains(lower, "rate limit"):
		kind = sessions.RateLimit
	case apiStatus == "UNAUTHENTICATED" || apiStatus == "PERMISSION_DENIED" || strings.Contains(lower, "api key not valid"):
		kind = sessions.Auth
	case strings.Contains(lower, "overloaded") || apiStatus == "UNAVAILABLE":
		kind = sessions.Overloaded
	case status >= 400 && status <= 599:
		kind = sessions.KindFromStatus(status)
	case sessions.ConnectionErrorText(lower):
		kind = sessions.Network
	}
	f := sessions.Failure{Kind: kind, Message: sessions.SanitizeMessage(text)}
	if kind == sessions.RateLimit && delay > 0 {
		f.RetryAt = s.now().Add(delay).Truncate(time.Second)
	}
	return f
}

// parseDelay reads "30s", "1.5s" or "900ms"; 0 when it cannot.
func parseDelay(v string) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 || d > 48*time.Hour {
		return 0
	}
	return d
}

// ClassifyError classifies a failure the CLI reported outside a stream of
// ours (the text of an "error" record in the chat file of a session started
// in a terminal: "[API Error: <the API's JSON body>]"); code is the HTTP
// status when known (0 otherwise) and now dates a rate limit's reset.
func ClassifyError(code int, msg string, now time.Time) sessions.Failure {
	s := state{clock: func() time.Time { return now }}
	return s.classify(code, msg)
}
