// Package copilot is the GitHub Copilot CLI adapter. It runs one turn per
// `copilot -p … --output-format json` process (resumed by the session's id
// for the next turn), decodes its JSONL events into sessions.Events and
// presents the turns of one session as one sessions.Process. It decides no
// state: that is sessions.Apply's job.
package copilot

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

// ErrMalformed marks a line that is not a JSON object with a type. The
// decoder skips and counts such lines; it never stops on them.
var ErrMalformed = errors.New("copilot stream: malformed line")

// ErrUnknown marks a well-formed event whose type this decoder does not
// know. Copilot adds event types between releases (1.0.102 prints some 60),
// so an unknown line is counted and skipped, never fatal.
var ErrUnknown = errors.New("copilot stream: unknown event type")

// LineInfo describes one stdout line, decoded or skipped.
type LineInfo struct {
	// Frame: the line's number and size, and why it was skipped.
	agentkit.Frame
	// Type is the event's type ("assistant.message_delta").
	Type string
}

// wire is the union of the fields the decoder reads from any event: one
// json.Unmarshal per line; the rest (tool arguments and results, the
// system prompt's skills, request fingerprints) is skipped unallocated.
type wire struct {
	Type      string `json:"type"`
	Ephemeral bool   `json:"ephemeral"`
	// Timestamp is when the CLI wrote the event (RFC 3339): a rate
	// limit's "reset in 2 hours" counts from it.
	Timestamp string `json:"timestamp"`
	// SessionID and ExitCode are the final `result` line's.
	SessionID string `json:"sessionId"`
	ExitCode  *int   `json:"exitCode"`
	Data      struct {
		// tool.execution_*, assistant.tool_call_delta
		ToolCallID string `json:"toolCallId"`
		ToolName   string `json:"toolName"`
		Success    *bool  `json:"success"`
		// session.error, model.call_failure
		ErrorType string `json:"errorType"`
		ErrorCode string `json:"errorCode"`
		// ProviderErrorType is the BYOK provider's own error type
		// ("context_length_exceeded"), when Copilot passes it on.
		ProviderErrorType string `json:"providerErrorType"`
		Message           string `json:"message"`
		ErrorMessage      string `json:"errorMessage"`
		StatusCode        int    `json:"statusCode"`
		RetryAttempt      int    `json:"retryAttempt"`
		// assistant.turn_retry
		Reason string `json:"reason"`
		// subagent.*
		AgentName string `json:"agentName"`
		// session.compaction_complete
		Error json.RawMessage `json:"error"`
		// session.usage_record (read only there: other events' usage has
		// other shapes).
		Usage json.RawMessage `json:"usage"`
	} `json:"data"`
}

// usageRecord is a session.usage_record's usage: one model call's tokens.
// Copilot counts the cache inside inputTokens, as the OpenAI API does.
type usageRecord struct {
	Model            string `json:"model"`
	InputTokens      int64  `json:"inputTokens"`
	OutputTokens     int64  `json:"outputTokens"`
	CacheReadTokens  int64  `json:"cacheReadTokens"`
	CacheWriteTokens int64  `json:"cacheWriteTokens"`
	APICallID        string `json:"apiCallId"`
}

// usageEvent is a session.usage_record as a usage report: one per model
// call, so each adds as it is (a record read twice, by its call id, once).
func usageEvent(raw json.RawMessage) []sessions.Event {
	var u usageRecord
	if json.Unmarshal(raw, &u) != nil || u.Model == "" {
		return agentkit.One(sessions.EvMetrics, "session.usage_record")
	}
	r := &sessions.UsageReport{Model: u.Model, Mode: sessions.UsageMessage, MessageID: u.APICallID,
		Tokens: sessions.Tokens{
			Input:  max(u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens, 0),
			Output: u.OutputTokens, CacheWrite: u.CacheWriteTokens, CacheRead: u.CacheReadTokens,
		}}
	if r.MessageID == "" {
		r.Mode = sessions.UsageDelta
	}
	return []sessions.Event{{Kind: sessions.EvMetrics, Detail: "session.usage_record", Usage: r}}
}

// kind is what an event type means, independent of its payload.
type kind int

const (
	kUnknown  kind = iota
	kQuiet         // known, nothing to report (lifecycle, catalogue)
	kActivity      // the agent is genuinely working
	kMetrics       // usage and token counts: not activity
	kToolStart
	kToolEnd
	kTaskStart
	kTaskEnd
	kCompactStart
	kCompactEnd
	kCallFailure
	kRetry
	kError
	kAbort
	kResult
)

// kinds are the event types of Copilot CLI 1.0.102 the decoder knows
// (captured in testdata/, and the CLI's schemas/session-events.schema.json).
var kinds = map[string]kind{
	"session.start": kQuiet, "session.resume": kQuiet, "session.info": kQuiet,
	"session.skills_loaded": kQuiet, "session.mcp_servers_loaded": kQuiet, "session.mcp_server_status_changed": kQuiet,
	"session.tools_updated": kQuiet, "session.background_tasks_changed": kQuiet, "session.model_change": kQuiet,
	"session.mode_changed": kQuiet, "session.title_changed": kQuiet, "session.warning": kQuiet,
	"session.shutdown": kQuiet, "session.idle": kQuiet, "session.context_changed": kQuiet,
	"session.usage_info": kMetrics, "session.usage_checkpoint": kMetrics, "assistant.usage": kMetrics,
	"model.call_final_result": kMetrics,
	"user.message":            kQuiet, "pending_messages.modified": kQuiet, "system.message": kQuiet,
	// A round's end (turn_end) is not work; the next round's start is.
	"assistant.turn_start": kActivity, "assistant.turn_end": kQuiet, "assistant.intent": kActivity,
	"assistant.message_start": kActivity, "assistant.message_delta": kActivity, "assistant.message": kActivity,
	"assistant.reasoning": kActivity, "assistant.reasoning_delta": kActivity, "assistant.streaming_delta": kActivity,
	// A model call's start and end are bookkeeping (they also follow an
	// interrupt and frame each of Copilot's own retries): the tokens it
	// streams are the activity.
	"assistant.tool_call_delta": kActivity, "model.call_start": kQuiet, "model.call_finished": kQuiet,
	"tool.user_requested": kActivity, "tool.execution_partial_result": kActivity, "tool.execution_progress": kActivity,
	"hook.start": kActivity, "hook.end": kActivity, "skill.invoked": kActivity, "agent.interrupted": kQuiet,
	"tool.execution_start": kToolStart, "tool.execution_complete": kToolEnd,
	"subagent.started": kTaskStart, "subagent.completed": kTaskEnd, "subagent.failed": kTaskEnd,
	"session.compaction_start": kCompactStart, "session.compaction_complete": kCompactEnd,
	"model.call_failure": kCallFailure, "assistant.turn_retry": kRetry,
	"session.error": kError, "abort": kAbort,
	// assistant.idle precedes result by a few ms; result is the turn's
	// last line and carries the exit code, so the end is decided there.
	"assistant.idle": kQuiet, "result": kResult,
	// The rest of 1.0.102's schema (schemas/session-events.schema.json):
	// work in progress,
	"assistant.fusion_phase_activity": kActivity, "assistant.fusion_phase_completed": kActivity,
	"assistant.fusion_phase_started": kActivity, "assistant.server_tool_progress": kActivity,
	"command.completed": kActivity, "command.execute": kActivity,
	"external_tool.completed": kActivity, "external_tool.requested": kActivity,
	"hook.progress": kActivity, "mcp_app.tool_call_complete": kActivity,
	"skill.context_delivered": kActivity, "skill.context_delivered_ref": kActivity,
	"skill.invoked_ref": kActivity, "tool.shell_output": kActivity, "workflow.run_updated": kActivity,
	// usage,
	"session.quota_observation": kMetrics, "session.usage_record": kMetrics,
	// and what prompt mode either never prints or that says nothing about
	// the turn (configuration, MCP, canvases, fusion routing, schedules;
	// permission and input requests, which prompt mode answers itself).
	"assistant.fusion_phase_failed": kQuiet, "auto_mode_switch.completed": kQuiet,
	"auto_mode_switch.requested": kQuiet, "capabilities.changed": kQuiet, "command.queued": kQuiet,
	"commands.changed": kQuiet, "elicitation.completed": kQuiet, "elicitation.requested": kQuiet,
	"exit_plan_mode.completed": kQuiet, "exit_plan_mode.requested": kQuiet,
	"human_response.recorded": kQuiet, "mcp.headers_refresh_completed": kQuiet,
	"mcp.headers_refresh_required": kQuiet, "mcp.oauth_completed": kQuiet,
	"mcp.oauth_recovery_completed": kQuiet, "mcp.oauth_required": kQuiet,
	"mcp.prompts.list_changed": kQuiet, "mcp.resources.list_changed": kQuiet,
	"mcp.tools.list_changed": kQuiet, "permission.completed": kQuiet, "permission.requested": kQuiet,
	"sampling.completed": kQuiet, "sampling.requested": kQuiet, "sandbox.decision": kQuiet,
	"session.auto_mode_resolved": kQuiet, "session.auto_tier_recommendation": kQuiet,
	"session.auto_tier_switch_failed": kQuiet, "session.autopilot_objective_changed": kQuiet,
	"session.autopilot_stopped": kQuiet, "session.binary_asset": kQuiet,
	"session.canvas.closed": kQuiet, "session.canvas.opened": kQuiet,
	"session.canvas.recorded": kQuiet, "session.canvas.registry_changed": kQuiet,
	"session.canvas.removed": kQuiet, "session.canvas.unavailable": kQuiet,
	"session.completion_receipt": kQuiet, "session.context_cleared": kQuiet,
	"session.custom_agents_updated": kQuiet, "session.custom_notification": kQuiet,
	"session.extensions.attachments_pushed": kQuiet, "session.extensions_loaded": kQuiet,
	"session.fusion_change_checkpoint": kQuiet, "session.fusion_commit_started": kQuiet,
	"session.fusion_completed": kQuiet, "session.fusion_handoff": kQuiet,
	"session.fusion_resolved": kQuiet, "session.fusion_route_failed": kQuiet,
	"session.fusion_route_started": kQuiet, "session.handoff": kQuiet,
	"session.indexed_search": kQuiet, "session.managed_plugin_progress": kQuiet,
	"session.managed_settings_enforced": kQuiet, "session.managed_settings_resolved": kQuiet,
	"session.mcp_server_needs_reconnect": kQuiet, "session.mcp_server_removed": kQuiet,
	"session.mcp_server_tools_loaded": kQuiet, "session.memory_changed": kQuiet,
	"session.mode_notice_delivered": kQuiet, "session.model_deselected": kQuiet,
	"session.permission_recovery": kQuiet, "session.permissions_changed": kQuiet,
	"session.plan_changed": kQuiet, "session.remote_steerable_changed": kQuiet,
	"session.request_body_compression_disabled": kQuiet, "session.schedule_cancelled": kQuiet,
	"session.schedule_created": kQuiet, "session.schedule_rearmed": kQuiet,
	"session.session_limits_changed": kQuiet, "session.snapshot_rewind": kQuiet,
	"session.task_complete": kQuiet, "session.todos_changed": kQuiet, "session.truncation": kQuiet,
	"session.workspace_file_changed": kQuiet, "session_limits_exhausted.completed": kQuiet,
	"session_limits_exhausted.requested": kQuiet, "subagent.configured": kQuiet,
	"subagent.deselected": kQuiet, "subagent.selected": kQuiet, "system.notification": kQuiet,
	"tool_search.activated": kQuiet, "ui.ephemeral_query": kQuiet, "user_input.completed": kQuiet,
	"user_input.requested": kQuiet, "workflow.run_settled": kQuiet, "workflow.run_started": kQuiet,
}

// turn is what decoding remembers within one turn's process.
type turn struct {
	// ended: the turn's outcome was emitted (a session.error, an abort).
	ended bool
	// lastStatus is the last failed model call's HTTP status, for the
	// retries Copilot announces without one.
	lastStatus int
	retries    int
}

// DecodeLine decodes one line on its own, with no memory of earlier lines.
// Use a Decoder for a stream.
func DecodeLine(line []byte) ([]sessions.Event, LineInfo, error) {
	var t turn
	return t.decode(line)
}

func (t *turn) decode(line []byte) ([]sessions.Event, LineInfo, error) {
	var info LineInfo
	var w wire
	if _, ok, err := info.Unmarshal(line, &w, ErrMalformed); !ok {
		return nil, info, err
	}
	info.Type = w.Type
	if w.Type == "" {
		info.Skip, info.Detail = agentkit.SkipMalformed, "no type"
		return nil, info, fmt.Errorf("%w: no type", ErrMalformed)
	}
	k, ok := kinds[w.Type]
	if !ok {
		info.Skip, info.Detail = agentkit.SkipUnknown, "type "+agentkit.Clip(w.Type)
		return nil, info, fmt.Errorf("%w: %s", ErrUnknown, agentkit.Clip(w.Type))
	}
	d := &w.Data
	switch k {
	case kQuiet:
		return nil, info, nil
	case kActivity:
		if t.ended {
			// The cancellation notice after an abort is not work.
			return nil, info, nil
		}
		return agentkit.One(sessions.EvActivity, activityPhrase(w.Type)), info, nil
	case kMetrics:
		if w.Type == "session.usage_record" {
			return usageEvent(d.Usage), info, nil
		}
		return agentkit.One(sessions.EvMetrics, w.Type), info, nil
	case kToolStart:
		return []sessions.Event{{Kind: sessions.EvToolStarted, CallID: d.ToolCallID, Name: toolName(d.ToolName)}}, info, nil
	case kToolEnd:
		ev := sessions.Event{Kind: sessions.EvToolFinished, CallID: d.ToolCallID, Name: toolName(d.ToolName)}
		if d.Success != nil && !*d.Success {
			ev.Detail = "tool failed"
		}
		return []sessions.Event{ev}, info, nil
	case kTaskStart:
		return []sessions.Event{{Kind: sessions.EvTaskStarted, CallID: d.ToolCallID, Name: agentkit.OrDefault(d.AgentName, "subagent")}}, info, nil
	case kTaskEnd:
		return []sessions.Event{{Kind: sessions.EvTaskFinished, CallID: d.ToolCallID, Name: agentkit.OrDefault(d.AgentName, "subagent")}}, info, nil
	case kCompactStart:
		return agentkit.One(sessions.EvCompactionStarted, ""), info, nil
	case kCompactEnd:
		ok := d.Success == nil || *d.Success
		if len(bytes.TrimSpace(d.Error)) > 0 && string(bytes.TrimSpace(d.Error)) != "null" {
			ok = false
		}
		return []sessions.Event{{Kind: sessions.EvCompactionFinished, OK: ok}}, info, nil
	case kCallFailure:
		// Copilot retries on its own and says so next (turn_retry); the
		// status is kept for that announcement.
		t.lastStatus = d.StatusCode
		return nil, info, nil
	case kRetry:
		t.retries++
		return []sessions.Event{{Kind: sessions.EvRetryScheduled, Attempt: t.retries, Status: t.lastStatus,
			Detail: sessions.SanitizeMessage(d.Reason)}}, info, nil
	case kError:
		t.ended = true
		ev := sessions.Event{Kind: sessions.EvTurnFailed, Failure: classify(d.ErrorType, d.ErrorCode+" "+d.ProviderErrorType, d.StatusCode, d.Message)}
		if ev.Failure.Kind == sessions.RateLimit {
			at, _ := time.Parse(time.RFC3339Nano, w.Timestamp)
			ev.Failure.RetryAt, ev.RateWindow = planLimit(d.ErrorCode, d.Message, at)
		}
		return []sessions.Event{ev}, info, nil
	case kAbort:
		t.ended = true
		return agentkit.One(sessions.EvTurnAborted, sessions.SanitizeMessage(d.Reason)), info, nil
	case kResult:
		if t.ended {
			return nil, info, nil
		}
		t.ended = true
		if w.ExitCode != nil && *w.ExitCode != 0 {
			return []sessions.Event{{Kind: sessions.EvTurnFailed, Failure: sessions.Failure{Kind: sessions.OtherFailure,
				Message: fmt.Sprintf("copilot ended the turn with exit code %d", *w.ExitCode)}}}, info, nil
		}
		return agentkit.One(sessions.EvTurnCompleted, ""), info, nil
	}
	return nil, info, nil
}

// activityPhrase is the evidence for an activity event, in words.
func activityPhrase(typ string) string {
	switch {
	case strings.HasPrefix(typ, "assistant.message"), typ == "assistant.streaming_delta":
		return "writing a reply"
	case strings.HasPrefix(typ, "assistant.reasoning"), typ == "assistant.intent":
		return "thinking"
	case typ == "assistant.tool_call_delta":
		return "preparing a tool call"
	case strings.HasPrefix(typ, "tool."):
		return "tool progress"
	case strings.HasPrefix(typ, "hook."):
		return "running a hook"
	}
	return "stream active"
}

// toolName is the tool's name as the evidence shows it; Copilot's shell
// tool is "bash" (or "powershell"), which reads as a command.
func toolName(name string) string {
	switch name {
	case "bash", "powershell":
		return "command"
	case "":
		return "tool"
	}
	return name
}

// resetInRE reads when Copilot's own plan limit lifts, as its session.error
// says it: "You've reached your weekly rate limit. Please wait for your
// limit to reset in 2 hours." (1.0.102; the CLI words the response's
// retry-after to the unit: "59 minutes" for 3540 s, "2 hours" for 7200 s).
var resetInRE = regexp.MustCompile(`(?i)limit to reset in (\d+) (second|minute|hour|day)s?\b`)

// planLimit is the reset of a rate limit Copilot's service put on the
// account (measured with the CLI's own API: a 429 with errorCode
// user_weekly_rate_limited or user_global_rate_limited and a retry-after),
// counted from the event's time at: the failure's reset time, and the
// account's window as spent (no usage figure reaches the client: its
// session.quota_observation is ephemeral and was not printed). A BYOK
// provider's 429 says no reset (zero, nil).
func planLimit(errorCode, message string, at time.Time) (time.Time, *sessions.RateWindow) {
	m := resetInRE.FindStringSubmatch(message)
	if m == nil || at.IsZero() {
		return time.Time{}, nil
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 || n > 10000 {
		return time.Time{}, nil
	}
	unit := map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}[strings.ToLower(m[2])]
	reset := at.Add(time.Duration(n) * unit).UTC().Truncate(time.Second)
	kind, ok := planLimitKinds[strings.TrimSpace(errorCode)]
	if !ok {
		return reset, nil
	}
	return reset, &sessions.RateWindow{Kind: kind, Used: -1, Status: "rejected", ResetsAt: reset}
}

// planLimitKinds are the account's windows by the error code that says one
// is spent (1.0.102 words them "your weekly rate limit" and "your session
// rate limit"); a model's own limit (user_model_rate_limited) is no
// window of the account.
var planLimitKinds = map[string]string{"user_weekly_rate_limited": "weekly", "user_global_rate_limited": "session"}

// classify turns a session.error into a failure: its errorType first (the
// CLI's own classification), then its HTTP status, then its words.
// Measured on 1.0.102 against a BYOK provider: 429 → rate_limit, 401 →
// authentication, a context overflow 400 → "query" with the provider's
// message.
func classify(errorType, errorCode string, status int, message string) sessions.Failure {
	f := sessions.Failure{Message: sessions.SanitizeMessage(message)}
	if f.Message == "" {
		f.Message = "the turn failed without a message"
	}
	lower := strings.ToLower(message + " " + errorCode)
	switch {
	case overflowText(lower):
		f.Kind = sessions.ContextOverflow
	case errorType == "rate_limit", errorType == "quota" && status != 402:
		f.Kind = sessions.RateLimit
	case errorType == "authentication", errorType == "authorization":
		f.Kind = sessions.Auth
	case status != 0 && status != 400:
		f.Kind = sessions.KindFromStatus(status)
	default:
		f.Kind = textKind(lower)
	}
	if errorType == "quota" && status == 402 {
		f.Kind = sessions.Billing
	}
	return f
}

// overflowText reports a provider's context-window refusal, in the words
// OpenAI-compatible and Anthropic providers use.
func overflowText(lower string) bool {
	for _, s := range []string{"context_length_exceeded", "maximum context length", "context window", "prompt is too long", "too many tokens"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

var statusRE = regexp.MustCompile(`\b(?:http |status:? )?([45]\d\d)\b`)

func textKind(lower string) sessions.FailureKind {
	switch {
	case strings.Contains(lower, "rate limit"), strings.Contains(lower, "rate_limit"):
		return sessions.RateLimit
	case strings.Contains(lower, "overloaded"), strings.Contains(lower, "high demand"):
		return sessions.Overloaded
	case strings.Contains(lower, "/login"), strings.Contains(lower, "authentication failed"):
		return sessions.Auth
	}
	if sessions.ConnectionErrorText(lower) || strings.Contains(lower, "timed out") {
		return sessions.Network
	}
	if m := statusRE.FindStringSubmatch(lower); m != nil {
		st, _ := strconv.Atoi(m[1])
		if k := sessions.KindFromStatus(st); k != sessions.OtherFailure {
			return k
		}
	}
	return sessions.OtherFailure
}
