package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// ErrMalformed marks an event whose data is not a JSON object. The decoder
// skips and counts such events; it never stops on them.
var ErrMalformed = errors.New("opencode stream: malformed event")

// ErrUnknown marks a well-formed event whose type this decoder does not
// know. OpenCode adds bus events between releases, so an unknown one is
// counted and skipped, never fatal.
var ErrUnknown = errors.New("opencode stream: unknown event type")

// EventInfo describes one server-sent event, decoded or skipped.
type EventInfo struct {
	// Size is the data's length in bytes.
	Size int
	// Type is the bus event's type ("session.status").
	Type string
	// Skip says why the event produced no events (agentkit.SkipNone when decoded).
	Skip agentkit.SkipReason
	// Detail is the reason in words for a skipped event.
	Detail string
}

// wire is the union of the fields the decoder reads from any bus event:
// one struct and one json.Unmarshal per event; what is not declared (tool
// output, diffs, the session's info) is skipped without being allocated.
type wire struct {
	Type       string `json:"type"`
	Properties props  `json:"properties"`
}

type props struct {
	SessionID string `json:"sessionID"`
	// session.status.
	Status *struct {
		Type    string  `json:"type"`
		Attempt int     `json:"attempt"`
		Message string  `json:"message"`
		Next    float64 `json:"next"`
	} `json:"status"`
	// session.error.
	Error *apiError `json:"error"`
	// session.created: a child session (a subagent) names its parent.
	Info struct {
		ID         string          `json:"id"`
		ParentID   string          `json:"parentID"`
		Role       string          `json:"role"`
		ProviderID string          `json:"providerID"`
		ModelID    string          `json:"modelID"`
		Summary    json.RawMessage `json:"summary"`
		Finish     string          `json:"finish"`
		Error      *apiError       `json:"error"`
		// Tokens is an assistant message's usage so far.
		Tokens struct {
			Input     int64 `json:"input"`
			Output    int64 `json:"output"`
			Reasoning int64 `json:"reasoning"`
			Cache     struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
		Time struct {
			Completed float64 `json:"completed"`
		} `json:"time"`
	} `json:"info"`
	// message.part.updated.
	Part struct {
		ID        string `json:"id"`
		MessageID string `json:"messageID"`
		Type      string `json:"type"`
		Tool      string `json:"tool"`
		CallID    string `json:"callID"`
		Reason    string `json:"reason"`
		State     struct {
			Status string `json:"status"`
		} `json:"state"`
	} `json:"part"`
	// message.part.delta.
	Field string `json:"field"`
	// permission.asked, question.asked.
	ID         string `json:"id"`
	Permission string `json:"permission"`
	Tool       struct {
		CallID string `json:"callID"`
	} `json:"tool"`
	// permission.replied, question.replied|rejected.
	RequestID string `json:"requestID"`
	// todo.updated: the session's whole list (content, status, priority;
	// the status is read).
	Todos []sessions.TodoItem `json:"todos"`
}

// apiError is OpenCode's NamedError: a name and its data.
type apiError struct {
	Name string `json:"name"`
	Data struct {
		Message         string            `json:"message"`
		StatusCode      int               `json:"statusCode"`
		IsRetryable     bool              `json:"isRetryable"`
		ResponseHeaders map[string]string `json:"responseHeaders"`
		ProviderID      string            `json:"providerID"`
	} `json:"data"`
}

// Model is a provider and model OpenCode answered with (summarize needs one).
type Model struct{ ProviderID, ModelID string }

// state is what decoding remembers between events of one stream.
type state struct {
	// session is our session's id ("" until it is known: every session's
	// events are then taken as ours).
	session string
	// children are the sessions OpenCode started for subagents of ours.
	children map[string]bool
	// busy: OpenCode said our session is busy and has not said idle yet.
	busy bool
	// tools maps an open tool part's id to its name.
	tools map[string]string
	// roles maps a message id to its role, so the prompt's own text part
	// is not taken for a reply.
	roles map[string]string
	// lastError is the turn's latest error; a model step started after it
	// means OpenCode recovered from it (an overflow it compacted).
	lastError *apiError
	// compacting: a compaction part opened and its summary has not ended.
	compacting bool
	// pending holds the permission and question requests not answered.
	pending map[string]bool
	// model is the last model an assistant message used.
	model Model
	// usage counts each assistant message's tokens once: OpenCode sends
	// message.updated again at each step of the message.
	usage agentkit.UsageOnce
	// now is the clock a retry's delay and a retry-after are read against.
	now func() time.Time
}

// DecodeEvent decodes one event's data on its own, with no memory of
// earlier events (every session's events are taken as ours). Use a Decoder
// for a stream.
func DecodeEvent(data []byte) ([]sessions.Event, EventInfo, error) {
	s := state{now: time.Now}
	return s.decode(data)
}

func (s *state) decode(data []byte) ([]sessions.Event, EventInfo, error) {
	info := EventInfo{Size: len(data)}
	var w wire
	_, skip, detail, err := agentkit.UnmarshalLine(data, &w, ErrMalformed)
	if skip != agentkit.SkipNone {
		info.Skip, info.Detail = skip, detail
		return nil, info, err
	}
	info.Type = w.Type
	events, known := s.event(&w)
	if !known {
		info.Skip = agentkit.SkipUnknown
		info.Detail = fmt.Sprintf("unknown event %q", agentkit.Clip(w.Type))
		return nil, info, fmt.Errorf("%w: %q", ErrUnknown, agentkit.Clip(w.Type))
	}
	return events, info, nil
}

// quiet are the bus events that say nothing about our session's progress:
// the server's own lifecycle, catalogues, files, the session's metadata.
var quiet = map[string]bool{
	"server.connected": true, "server.heartbeat": true, "server.instance.disposed": true,
	"global.disposed": true, "plugin.added": true, "catalog.updated": true, "reference.updated": true,
	"integration.updated": true, "installation.updated": true, "installation.update-available": true,
	"session.updated": true, "session.deleted": true, "session.diff": true, "session.idle": true,
	"file.edited": true, "file.watcher.updated": true, "vcs.branch.updated": true, "lsp.updated": true,
	"lsp.client.diagnostics": true, "mcp.tools.changed": true, "mcp.browser.open.failed": true,
	"project.updated": true, "command.executed": true, "workspace.ready": true, "workspace.failed": true,
	"message.removed": true, "message.part.removed": true, "pty.created": true, "pty.updated": true,
	"pty.exited": true, "pty.deleted": true, "tui.prompt.append": true, "tui.command.execute": true,
	"tui.toast.show": true, "tui.session.select": true, "config.updated": true, "session.next.agent": true,
}

func (s *state) event(w *wire) ([]sessions.Event, bool) {
	p := &w.Properties
	if w.Type == "session.created" {
		// A session whose parent is ours is a subagent's: its work is
		// our turn's activity.
		if s.session != "" && p.Info.ParentID == s.session && p.Info.ID != "" {
			s.children = agentkit.Remember(s.children, p.Info.ID, true)
			return agentkit.One(sessions.EvActivity, "subagent started"), true
		}
		return nil, true
	}
	if quiet[w.Type] {
		return nil, true
	}
	if s.session != "" && p.SessionID != "" && p.SessionID != s.session {
		child := s.children[p.SessionID]
		switch {
		case child && strings.HasPrefix(w.Type, "message."):
			return agentkit.One(sessions.EvActivity, "subagent working"), true
		case child && (strings.HasPrefix(w.Type, "permission.") || strings.HasPrefix(w.Type, "question.")):
			// A subagent's permission ask holds our turn: it is ours
			// to show and answer (request ids are server-wide).
			return s.ours(w), true
		}
		// Another session on the same server (or a subagent's
		// bookkeeping): not ours.
		return nil, true
	}
	return s.ours(w), s.known(w.Type)
}

// known reports whether the decoder knows an event type of our session.
func (s *state) known(typ string) bool {
	switch typ {
	case "session.status", "session.error", "session.compacted", "message.updated", "message.part.updated",
		"message.part.delta", "permission.asked", "question.asked", "permission.replied", "question.replied",
		"question.rejected", "todo.updated":
		return true
	}
	return false
}

// ours maps an event of our session (or a subagent's request).
func (s *state) ours(w *wire) []sessions.Event {
	p := &w.Properties
	switch w.Type {
	case "session.status":
		return s.status(p)
	case "session.error":
		if p.Error == nil {
			return nil
		}
		e := *p.Error
		s.lastError = &e
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: sessions.SanitizeMessage("error reported: " + e.Name)}}
	case "session.compacted":
		if s.compacting {
			s.compacting = false
			return []sessions.Event{{Kind: sessions.EvCompactionFinished, OK: true, Detail: "compaction finished"}}
		}
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "session compacted"}}
	case "message.updated":
		return s.message(p)
	case "message.part.updated":
		return s.part(p)
	case "message.part.delta":
		if s.roles[p.Part.MessageID] == "user" {
			return nil
		}
		return agentkit.One(sessions.EvActivity, "writing a reply")
	case "permission.asked", "question.asked":
		reason, tool := sessions.WaitPermission, agentkit.OrDefault(p.Permission, "permission")
		if w.Type == "question.asked" {
			reason, tool = sessions.WaitQuestion, "question"
		}
		s.pending = agentkit.Remember(s.pending, p.ID, true)
		return []sessions.Event{{Kind: sessions.EvWaitingOnUser, Reason: reason, CallID: p.Tool.CallID,
			Name: sessions.SanitizeMessage(tool), Permission: &sessions.Permission{RequestID: p.ID, Tool: sessions.SanitizeMessage(tool)}}}
	case "permission.replied", "question.replied", "question.rejected":
		if !s.pending[p.RequestID] {
			// Answered by us: the app recorded the answer when it sent it.
			return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "request answered"}}
		}
		delete(s.pending, p.RequestID)
		return []sessions.Event{{Kind: sessions.EvUserAnswered, Detail: "request answered elsewhere",
			Permission: &sessions.Permission{RequestID: p.RequestID}}}
	case "todo.updated":
		t := sessions.TodosOf(p.Todos)
		return []sessions.Event{{Kind: sessions.EvActivity, Detail: "planning", Todos: &t}}
	}
	return nil
}

// forget marks a request the app answered, so its reply event is not taken
// for an answer given elsewhere.
func (s *state) forget(id string) { delete(s.pending, id) }

// status maps session.status: busy starts the turn, retry is OpenCode's own
// backoff, idle ends the turn with its outcome.
func (s *state) status(p *props) []sessions.Event {
	if p.Status == nil {
		return nil
	}
	switch p.Status.Type {
	case "busy":
		if s.busy {
			return nil
		}
		s.busy, s.lastError = true, nil
		return agentkit.One(sessions.EvActivity, "working")
	case "retry":
		s.busy = true
		ev := sessions.Event{Kind: sessions.EvRetryScheduled, Attempt: p.Status.Attempt, Detail: "agent retry scheduled",
			Failure: sessions.Failure{Kind: textKind(p.Status.Message), Message: sessions.SanitizeMessage(p.Status.Message)}}
		if p.Status.Next > 0 {
			next := time.UnixMilli(int64(p.Status.Next))
			if d := next.Sub(s.now()); d > 0 {
				ev.Delay = d
			}
		}
		return []sessions.Event{ev}
	case "idle":
		if !s.busy {
			return nil
		}
		return []sessions.Event{s.endTurn()}
	}
	return []sessions.Event{{Kind: sessions.EvMetrics, Detail: sessions.SanitizeMessage("status " + p.Status.Type)}}
}

// endTurn is the outcome of the turn OpenCode just reported idle: the error
// it reported last (unless a step started after it), else completed.
func (s *state) endTurn() sessions.Event {
	e := s.lastError
	s.busy, s.lastError, s.compacting = false, nil, false
	clear(s.tools)
	clear(s.pending)
	if e == nil {
		return sessions.Event{Kind: sessions.EvTurnCompleted, Detail: "turn completed"}
	}
	if e.Name == "MessageAbortedError" {
		return sessions.Event{Kind: sessions.EvTurnAborted, Detail: "interrupted"}
	}
	return sessions.Event{Kind: sessions.EvTurnFailed, Status: e.Data.StatusCode, Failure: s.classify(e)}
}

func (s *state) message(p *props) []sessions.Event {
	in := &p.Info
	if in.ID != "" && in.Role != "" {
		s.roles = agentkit.Remember(s.roles, in.ID, in.Role)
	}
	if in.Role != "assistant" {
		return nil
	}
	if in.ProviderID != "" && in.ModelID != "" {
		s.model = Model{ProviderID: in.ProviderID, ModelID: in.ModelID}
	}
	summary := len(in.Summary) > 0 && string(in.Summary) == "true"
	if summary && s.compacting && (in.Finish != "" || in.Error != nil || in.Time.Completed > 0) {
		s.compacting = false
		if in.Error != nil {
			return []sessions.Event{{Kind: sessions.EvCompactionFinished, OK: false,
				Detail: sessions.SanitizeMessage("compaction failed: " + agentkit.OrDefault(in.Error.Data.Message, in.Error.Name))}}
		}
		return []sessions.Event{{Kind: sessions.EvCompactionFinished, OK: true, Detail: "compaction finished"}}
	}
	if r := s.usage.Delta(messageUsage(p)); r != nil {
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "token usage", Usage: r}}
	}
	if in.Finish != "" {
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "token usage"}}
	}
	return nil
}

// messageUsage is an assistant message's tokens as OpenCode counts them
// (input without the cache, reasoning apart from output, which the API
// bills as output), under "provider/model" (pricing drops the provider).
func messageUsage(p *props) *sessions.UsageReport {
	in := &p.Info
	t := &in.Tokens
	if in.ModelID == "" {
		return nil
	}
	model := in.ModelID
	if in.ProviderID != "" {
		model = in.ProviderID + "/" + model
	}
	return &sessions.UsageReport{Model: model, Mode: sessions.UsageMessage, MessageID: in.ID,
		Tokens: sessions.Tokens{Input: t.Input, Output: t.Output + t.Reasoning, CacheWrite: t.Cache.Write, CacheRead: t.Cache.Read}}
}

func (s *state) part(p *props) []sessions.Event {
	pt := &p.Part
	switch pt.Type {
	case "tool":
		name := sessions.SanitizeMessage(agentkit.OrDefault(pt.Tool, "tool"))
		id := agentkit.OrDefault(pt.CallID, pt.ID)
		switch pt.State.Status {
		case "pending", "running":
			if _, open := s.tools[id]; open {
				return agentkit.One(sessions.EvActivity, name+" running")
			}
			s.tools = agentkit.Remember(s.tools, id, name)
			return []sessions.Event{{Kind: sessions.EvToolStarted, CallID: id, Name: name, Detail: "tool call"}}
		case "completed", "error":
			delete(s.tools, id)
			return []sessions.Event{{Kind: sessions.EvToolFinished, CallID: id, Name: name, Detail: name + " " + pt.State.Status}}
		}
		return agentkit.One(sessions.EvActivity, name)
	case "text":
		if s.roles[pt.MessageID] == "user" {
			return agentkit.One(sessions.EvActivity, "prompt received")
		}
		return agentkit.One(sessions.EvActivity, "writing a reply")
	case "reasoning":
		return agentkit.One(sessions.EvActivity, "thinking")
	case "step-start":
		// A model step after an error: OpenCode got past it (it
		// compacted an overflow, or a retry went through).
		s.lastError = nil
		return agentkit.One(sessions.EvActivity, "model step started")
	case "step-finish":
		return []sessions.Event{{Kind: sessions.EvMetrics, Detail: sessions.SanitizeMessage("step finished: " + pt.Reason)}}
	case "compaction":
		if s.compacting {
			return nil
		}
		s.compacting = true
		return []sessions.Event{{Kind: sessions.EvCompactionStarted, Detail: "compacting the context"}}
	case "subtask", "agent":
		return agentkit.One(sessions.EvActivity, "subagent")
	case "retry":
		return agentkit.One(sessions.EvActivity, "retrying")
	}
	return agentkit.One(sessions.EvActivity, sessions.SanitizeMessage(agentkit.OrDefault(pt.Type, "message part")))
}

// classify turns OpenCode's named error into a failure: the name first, the
// HTTP status an APIError carries next, the message text last.
func (s *state) classify(e *apiError) sessions.Failure {
	msg := sessions.SanitizeMessage(agentkit.OrDefault(e.Data.Message, e.Name))
	var kind sessions.FailureKind
	switch e.Name {
	case "ProviderAuthError":
		kind = sessions.Auth
	case "ContextOverflowError":
		kind = sessions.ContextOverflow
	case "APIError":
		if e.Data.StatusCode != 0 {
			kind = sessions.KindFromStatus(e.Data.StatusCode)
			if kind == sessions.OtherFailure {
				if k := textKind(e.Data.Message); k != sessions.OtherFailure {
					kind = k
				}
			}
		} else {
			kind = textKind(e.Data.Message)
		}
	default:
		kind = textKind(e.Data.Message)
	}
	f := sessions.Failure{Kind: kind, Message: msg}
	if kind == sessions.RateLimit || kind == sessions.Overloaded {
		f.RetryAt = retryAt(e.Data.ResponseHeaders, s.now())
	}
	return f
}

// retryAt reads when to try again from the provider's headers:
// retry-after-ms, retry-after (seconds or an HTTP date); zero when they say
// nothing.
func retryAt(h map[string]string, now time.Time) time.Time {
	get := func(k string) string {
		for key, v := range h {
			if strings.EqualFold(key, k) {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	if v := get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e10 {
			return now.Add(time.Duration(ms * float64(time.Millisecond))).Round(time.Millisecond)
		}
	}
	v := get("retry-after")
	if v == "" {
		return time.Time{}
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs > 0 && secs < 1e7 {
			return now.Add(time.Duration(secs * float64(time.Second))).Round(time.Millisecond)
		}
		return time.Time{}
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t
	}
	return time.Time{}
}

// textKind classifies an error message by OpenCode's and the providers'
// phrasings.
func textKind(text string) sessions.FailureKind {
	lower := strings.ToLower(text)
	switch {
	case strings.Contains(lower, "context length"), strings.Contains(lower, "context window"),
		strings.Contains(lower, "too large to compact"), strings.Contains(lower, "prompt is too long"):
		return sessions.ContextOverflow
	case strings.Contains(lower, "rate limit"), strings.Contains(lower, "too many requests"), strings.Contains(lower, "quota"):
		return sessions.RateLimit
	case strings.Contains(lower, "overloaded"), strings.Contains(lower, "high demand"):
		return sessions.Overloaded
	case strings.Contains(lower, "api key"), strings.Contains(lower, "unauthorized"), strings.Contains(lower, "authentication"):
		return sessions.Auth
	}
	if sessions.ConnectionErrorText(lower) {
		return sessions.Network
	}
	return sessions.OtherFailure
}
