package fakeapi

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Call is what a scenario sees of one POST /v1/messages request.
type Call struct {
	// Scenario is the name from the [[scenario:NAME]] marker ("text" when
	// the conversation has none).
	Scenario string
	// Key identifies the conversation: the scenario plus the first user
	// text carrying the marker, which every request of one session repeats.
	Key string
	// Attempt counts requests with this Key, starting at 1, so a scenario
	// can fail the first N attempts and then succeed.
	Attempt int
	// Stream reports whether the client asked for SSE.
	Stream bool
	// Req is the decoded request body.
	Req *MessagesRequest
	// SlowDelay is the server's SlowDelay at the time of the request.
	SlowDelay time.Duration
}

// Reply is what a scenario answers; the server renders it as SSE or as a
// JSON body depending on the request's "stream" flag.
type Reply struct {
	// Status is the HTTP status; 0 means 200. Any other status sends the
	// Anthropic error body built from ErrorType and ErrorMessage.
	Status       int
	ErrorType    string
	ErrorMessage string
	// RetryAfter, if set, is sent as the retry-after header (seconds). The
	// CLI uses it as a floor for its backoff.
	RetryAfter string
	// Headers are extra response headers (e.g. the unified rate-limit
	// headers), sent with an error as well as with a success.
	Headers map[string]string
	// Content is the assistant message. StopReason defaults to "tool_use"
	// when Content holds a tool_use block and "end_turn" otherwise.
	Content    []Block
	StopReason string
	// Pause is slept between streamed deltas (and before a non-streaming
	// body), to simulate a slow model.
	Pause time.Duration
	// Stall sends message_start and then nothing until the client goes away
	// or the server closes; a non-streaming stall sends no response at all.
	Stall bool
	// Cut resets the connection (TCP RST): a stream after message_start and
	// the first words of a text block, a non-streaming request before any
	// response. The CLI reports it as ECONNRESET.
	Cut bool
	// Model, when set, is the model id the reply names instead of the
	// request's (the API answers with a dated id: claude-sonnet-4-5-20250929).
	Model string
	// Usage, when set, is the usage the reply reports instead of the
	// estimate: known token counts a test can check the CLI passes on.
	Usage *Usage
}

// Usage is a reply's token counts as the API reports them: input (the part
// neither written to nor read from the cache), output, cache write, cache
// read.
type Usage struct {
	Input, Output, CacheWrite, CacheRead int
}

// The usage scenario's replies: a tool call, then the answer, each with
// known counts and a dated model id; UsageUnknownModel is the model of the
// usage_unknown scenario, which no pricing table knows.
var (
	UsageToolCall     = Usage{Input: 1200, Output: 45, CacheWrite: 3000, CacheRead: 9000}
	UsageAnswer       = Usage{Input: 80, Output: 12, CacheWrite: 0, CacheRead: 12200}
	UsageModel        = "claude-sonnet-4-5-20250929"
	UsageUnknownModel = "claude-fake-model-20260101"
)

// usageScenario is the tool scenario with known usage and model id.
func usageScenario(model string) ScenarioFunc {
	tool := bashScenario(ToolCommand, ToolDoneText)
	return func(c *Call) Reply {
		r := tool(c)
		r.Model = model
		if len(r.Content) > 0 && r.Content[0].Type == "tool_use" {
			u := UsageToolCall
			r.Usage = &u
		} else {
			u := UsageAnswer
			r.Usage = &u
		}
		return r
	}
}

// ErrorReply is an Anthropic-style error response.
func ErrorReply(status int, errType, message string) Reply {
	return Reply{Status: status, ErrorType: errType, ErrorMessage: message}
}

// TextReply is a plain end_turn text answer.
func TextReply(text string) Reply { return Reply{Content: []Block{TextBlock(text)}} }

// ScenarioFunc decides the reply for one request of a scenario. It runs on
// the request's goroutine, so it may be called concurrently.
type ScenarioFunc func(c *Call) Reply

// Texts the built-in scenarios answer with, exported so tests can assert on
// the CLI's result text without repeating literals.
const (
	DoneText          = "Done."
	ToolDoneText      = "The command printed hi."
	WriteDoneText     = "Wrote build/out.txt."
	ToolFailedText    = "The command failed."
	SummaryText       = "The user ran a fake-API test session; the assistant replied \"Done.\"."
	ToolCommand       = "sleep 1; echo hi"
	WriteCommand      = "mkdir -p build && touch build/out.txt"
	ToolDescription   = "run test command"
	ResumeMarker      = "[[resume]]"
	ContinuationNudge = "Your previous turn was interrupted"
	// SlowToolCommand is the Bash command of the slowtool scenario: long
	// enough for a test to kill the agent while the tool runs, and
	// read-only, so the CLI runs it without asking for permission.
	SlowToolCommand = "sleep 30; echo hi"
	// SlowTailCommand is the slowtool_tail scenario's: as slow, for the
	// interactive CLI 2.1.328, which refuses a command that starts with a
	// long sleep ("use Monitor") but runs this one once approved.
	SlowTailCommand = "timeout 30 tail -f /dev/null; echo hi"
	// PromptTooLongMessage is the 400 error message of the too_long
	// scenarios.
	PromptTooLongMessage = "prompt is too long: 250000 tokens > 200000 maximum"
)

// CutThenOKCuts is the number of requests the cut6then_ok scenario resets
// before it answers. Measured with CLI 2.1.197 and CLAUDE_CODE_MAX_RETRIES=2,
// one turn makes 3 to 6 requests when every one is cut: up to 3 streaming
// attempts, and once a stream broke mid-way up to 3 non-streaming ones (the
// fallback has its own retry count). Six cuts fail at least the first turn
// whichever way it goes.
const CutThenOKCuts = 6

// UnifiedRateLimitWindow is how long the 429unified scenario rejects a
// conversation, counted from its first request.
const UnifiedRateLimitWindow = 12 * time.Second

// markerRE finds the scenario marker. Names are restricted to a safe set
// so a marker can never swallow the rest of a prompt.
var markerRE = regexp.MustCompile(`\[\[scenario:([A-Za-z0-9_.-]+)\]\]`)

// summaryRE spots the CLI's /compact request, which asks the model for a
// summary of the conversation.
var summaryRE = regexp.MustCompile(`(?i)summar(y|i[sz])`)

// continuedPrefix starts the user message the CLI puts in place of the
// history after a compaction.
const continuedPrefix = "This session is being continued from a previous conversation"

// builtinScenarios is the default scenario table; Server.Handle adds to or
// overrides it per server.
func builtinScenarios() map[string]ScenarioFunc {
	return map[string]ScenarioFunc{
		"text":          func(*Call) Reply { return TextReply(DoneText) },
		"tool":          bashScenario(ToolCommand, ToolDoneText),
		"write":         bashScenario(WriteCommand, WriteDoneText),
		"usage":         usageScenario(UsageModel),
		"usage_unknown": usageScenario(UsageUnknownModel),
		"429then_ok":    failFirst(2, rateLimited),
		"429":           func(*Call) Reply { return rateLimited() },
		"too_long":      func(*Call) Reply { return promptTooLong() },
		"401": func(*Call) Reply {
			return ErrorReply(http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		},
		"529": func(*Call) Reply { return ErrorReply(529, "overloaded_error", "Overloaded") },
		"stall": func(c *Call) Reply {
			last := c.Req.LastUserText()
			if strings.Contains(last, ResumeMarker) || strings.Contains(last, ContinuationNudge) {
				return TextReply(DoneText)
			}
			return Reply{Stall: true}
		},
		"slow": func(c *Call) Reply {
			return Reply{
				Content: []Block{{Type: "text", Chunks: []string{"Step one.", " Step two.", " " + DoneText}}},
				Pause:   c.SlowDelay,
			}
		},
		"compact": func(c *Call) Reply {
			if IsCompaction(c.Req) {
				return TextReply(compactSummary(c.Scenario))
			}
			return TextReply(DoneText)
		},
		// slowtool runs SlowToolCommand, so a test can kill the agent in the
		// middle of a tool call; the continuation nudge (or the resume
		// marker) is answered with DoneText, whatever else the CLI put in
		// the same user message after a resume.
		"slowtool": nudgeAnswers(bashScenario(SlowToolCommand, ToolDoneText)),
		// slowtool_tail is slowtool with SlowTailCommand.
		"slowtool_tail": nudgeAnswers(bashScenario(SlowTailCommand, ToolDoneText)),
		// too_long_once fails the conversation's first request with the
		// prompt-too-long 400, answers the compaction request with a summary
		// that keeps the marker, and everything else normally.
		"too_long_once": func(c *Call) Reply {
			switch {
			case c.Attempt == 1:
				return promptTooLong()
			case IsCompaction(c.Req):
				return TextReply(compactSummary(c.Scenario))
			}
			return TextReply(DoneText)
		},
		// too_long_2nd_turn answers the first turn, fails the second turn's
		// request with the prompt-too-long 400, answers the compaction with a
		// summary that keeps the marker, and everything after normally.
		// After a successful compaction the summary replaces the history, so
		// the conversation's key, and its attempt count, start afresh: the
		// retried turn is attempt 1 of the new key.
		"too_long_2nd_turn": func(c *Call) Reply {
			switch {
			case IsCompaction(c.Req):
				return TextReply(compactSummary(c.Scenario))
			case c.Attempt == 2:
				return promptTooLong()
			}
			return TextReply(DoneText)
		},
		// 429x3then_ok outlasts the CLI's own retries under HermeticEnv
		// (CLAUDE_CODE_MAX_RETRIES=2: three attempts), then answers.
		"429x3then_ok": failFirst(3, rateLimited),
		// cut resets every request of the conversation, streaming or not:
		// an outage that does not end.
		"cut": func(*Call) Reply { return Reply{Cut: true} },
		// cut6then_ok resets the first CutThenOKCuts requests (streams and
		// the CLI's non-streaming fallbacks alike), then answers: an outage
		// longer than the CLI's own retries under HermeticEnv, shorter than
		// the supervisor's.
		"cut6then_ok": failFirst(CutThenOKCuts, func() Reply { return Reply{Cut: true} }),
		// 429unified rejects a conversation for UnifiedRateLimitWindow with
		// the unified rate-limit headers the real API sends when a plan's
		// limit is hit, then answers normally.
		"429unified": unifiedRateLimit(UnifiedRateLimitWindow),
		// tasks keeps a task list with the Task tools (TaskCreate,
		// TaskUpdate: Claude Code 2.1's todo list), one call a request,
		// then answers DoneText: TasksSteps.
		"tasks": tasksScenario,
		// tasks_slow is tasks, then SlowToolCommand before the answer: a
		// turn that runs long enough, its list half done, for a test to
		// read its time-left band while it is in flight.
		"tasks_slow": func(c *Call) Reply {
			results := toolResults(c.Req)
			switch {
			case results < len(TasksSteps):
				return tasksScenario(c)
			case results == len(TasksSteps):
				return Reply{Content: []Block{ToolUseBlock("Bash", map[string]string{"command": SlowToolCommand, "description": ToolDescription})}}
			}
			return TextReply(ToolDoneText)
		},
		// todowrite writes a todo list of three with TodoWrite (one done,
		// one in progress), then answers DoneText; the CLI offers the tool
		// only with CLAUDE_CODE_ENABLE_TASKS=0 since 2.1.
		"todowrite": func(c *Call) Reply {
			if c.Req.LastUserMessage().HasToolResult() {
				return TextReply(DoneText)
			}
			return Reply{Content: []Block{ToolUseBlock("TodoWrite", map[string]any{"todos": []map[string]string{
				{"content": "Write the code", "status": "completed", "activeForm": "Writing the code"},
				{"content": "Test the code", "status": "in_progress", "activeForm": "Testing the code"},
				{"content": "Ship it", "status": "pending", "activeForm": "Shipping it"},
			}})}}
		},
		// plan_window answers DoneText with the unified rate-limit headers
		// of a plan's five-hour window past its warning threshold
		// (PlanWindowUtilization), which a subscription login reports as a
		// rate_limit_event.
		"plan_window": func(*Call) Reply {
			r := TextReply(DoneText)
			r.Headers = map[string]string{
				"anthropic-ratelimit-unified-status":                 "allowed",
				"anthropic-ratelimit-unified-5h-utilization":         strconv.FormatFloat(PlanWindowUtilization, 'f', -1, 64),
				"anthropic-ratelimit-unified-5h-reset":               strconv.FormatInt(time.Now().Add(PlanWindowReset).Unix(), 10),
				"anthropic-ratelimit-unified-5h-surpassed-threshold": "0.75",
				"anthropic-ratelimit-unified-representative-claim":   "five_hour",
			}
			return r
		},
	}
}

// PlanWindowUtilization and PlanWindowReset are the plan_window
// scenario's five-hour window: its share used and how long until it resets.
const (
	PlanWindowUtilization = 0.82
	PlanWindowReset       = 2 * time.Hour
)

// TasksSteps are the tasks scenario's tool calls, in order: two tasks
// created, the first started and completed, then the answer. Each request
// makes the step after the tool results the conversation holds.
var TasksSteps = []struct {
	Tool  string
	Input map[string]string
}{
	{"TaskCreate", map[string]string{"subject": "Write the code", "description": "Write it.", "activeForm": "Writing the code"}},
	{"TaskCreate", map[string]string{"subject": "Test the code", "description": "Test it.", "activeForm": "Testing the code"}},
	{"TaskUpdate", map[string]string{"taskId": "1", "status": "in_progress"}},
	{"TaskUpdate", map[string]string{"taskId": "1", "status": "completed"}},
}

func tasksScenario(c *Call) Reply {
	done := toolResults(c.Req)
	if done >= len(TasksSteps) {
		return TextReply(DoneText)
	}
	st := TasksSteps[done]
	return Reply{Content: []Block{ToolUseBlock(st.Tool, st.Input)}}
}

func promptTooLong() Reply {
	return ErrorReply(http.StatusBadRequest, "invalid_request_error", PromptTooLongMessage)
}

// nudgeAnswers answers DoneText when the latest user message carries the
// continuation nudge or ResumeMarker, and defers to fn otherwise.
func nudgeAnswers(fn ScenarioFunc) ScenarioFunc {
	return func(c *Call) Reply {
		last := c.Req.LastUserText()
		if strings.Contains(last, ResumeMarker) || strings.Contains(last, ContinuationNudge) {
			return TextReply(DoneText)
		}
		return fn(c)
	}
}

// unifiedRateLimit rejects every request of a conversation with a 429 until
// window after its first request, then answers DoneText. The 429 carries
// the headers of the real API's unified (plan) rate limit, status rejected
// and the reset time in unix seconds, and a retry-after up to that reset.
// The reset falls on a whole second, the resolution of the header.
func unifiedRateLimit(window time.Duration) ScenarioFunc {
	var mu sync.Mutex
	resets := map[string]time.Time{}
	return func(c *Call) Reply {
		now := time.Now()
		mu.Lock()
		reset, ok := resets[c.Key]
		if !ok {
			reset = time.Unix(now.Add(window).Unix(), 0)
			resets[c.Key] = reset
		}
		mu.Unlock()
		if !now.Before(reset) {
			return TextReply(DoneText)
		}
		r := rateLimited()
		r.RetryAfter = strconv.FormatInt(int64((reset.Sub(now)+time.Second-1)/time.Second), 10)
		r.Headers = map[string]string{
			"anthropic-ratelimit-unified-status":               "rejected",
			"anthropic-ratelimit-unified-reset":                strconv.FormatInt(reset.Unix(), 10),
			"anthropic-ratelimit-unified-representative-claim": "five_hour",
		}
		return r
	}
}

// bashScenario asks for one Bash call until the latest user message carries
// its tool_result, then answers done, or ToolFailedText when the result is
// an error (permission denied, command failed) so a test can tell an
// allowed tool from a refused one by the result text. Looking only at the
// latest user message (rather than the whole history) means every new
// prompt in a multi-turn session triggers the tool again, which keeps turns
// alike.
func bashScenario(command, done string) ScenarioFunc {
	return func(c *Call) Reply {
		if last := c.Req.LastUserMessage(); last.HasToolResult() {
			for _, b := range last.Blocks() {
				if b.Type == "tool_result" && b.IsError {
					return TextReply(ToolFailedText)
				}
			}
			return TextReply(done)
		}
		return Reply{Content: []Block{ToolUseBlock("Bash", map[string]string{
			"command":     command,
			"description": ToolDescription,
		})}}
	}
}

// failFirst answers fail() to the first n attempts of a conversation and a
// normal text reply afterwards.
func failFirst(n int, fail func() Reply) ScenarioFunc {
	return func(c *Call) Reply {
		if c.Attempt <= n {
			return fail()
		}
		return TextReply(DoneText)
	}
}

func rateLimited() Reply {
	r := ErrorReply(http.StatusTooManyRequests, "rate_limit_error",
		"Number of request tokens has exceeded your per-minute rate limit")
	r.RetryAfter = "1"
	return r
}

// compactSummary is the answer to a compaction request, in the
// <analysis>/<summary> shape the CLI's prompt asks for (the CLI keeps only
// the <summary> part). It repeats the scenario marker because after
// compaction the summary replaces the whole history, including the prompt
// that carried the marker: without it the session would fall back to the
// text scenario.
func compactSummary(scenario string) string {
	return "<analysis>fake compaction</analysis>\n<summary>\n[[scenario:" + scenario + "]] " + SummaryText + "\n</summary>"
}

// IsCompaction reports whether a request is the CLI's conversation
// summarisation (/compact or auto-compact). CLI 2.1.197 sends it as an
// ordinary request (same system prompt, same tools) whose last user message
// ends with a long "Your task is to create a detailed summary…" text block,
// so the last user message is what identifies it. The CLI's post-compaction
// message ("This session is being continued… The summary below…") also
// mentions a summary and is skipped, or the first turn after a compaction
// would be answered with another summary. The system prompt is checked
// too, for CLI versions that used a summariser system prompt ("…tasked with
// summarizing conversations"), but only the first line of each block: the
// ordinary system prompt mentions "summarized" deep inside a block.
func IsCompaction(r *MessagesRequest) bool {
	for _, t := range r.LastUserMessage().Texts() {
		if summaryRE.MatchString(t) && !strings.HasPrefix(strings.TrimSpace(t), continuedPrefix) {
			return true
		}
	}
	for _, b := range r.systemBlocks() {
		first := strings.TrimSpace(b)
		if i := strings.IndexByte(first, '\n'); i >= 0 {
			first = first[:i]
		}
		if summaryRE.MatchString(first) {
			return true
		}
	}
	return false
}

// scenarioOf finds the first user text carrying a marker and returns the
// scenario name and the conversation key.
func scenarioOf(r *MessagesRequest) (name, key string) {
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, t := range m.Texts() {
			if sm := markerRE.FindStringSubmatch(t); sm != nil {
				return sm[1], sm[1] + "\x00" + strings.TrimSpace(t)
			}
		}
	}
	first := ""
	for _, m := range r.Messages {
		if m.Role == "user" {
			first = strings.Join(m.Texts(), "\n")
			break
		}
	}
	return "text", "text\x00" + first
}

// toolResults counts the conversation's messages that carry tool results:
// the steps a multi-step scenario has taken.
func toolResults(r *MessagesRequest) int {
	n := 0
	for _, m := range r.Messages {
		if m.HasToolResult() {
			n++
		}
	}
	return n
}
