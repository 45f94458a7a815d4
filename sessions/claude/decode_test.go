package claude

import (
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/session-supervisor/session-supervisor/sessions"
	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// Lines in the shapes documented in reference/agent-cli-protocols.md §1.2
// for the types the captures do not exercise.

func TestDecodeMapping(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{
		{
			name: "compaction success then boundary is one finish",
			lines: []string{
				`{"type":"system","subtype":"status","status":"compacting","session_id":"s"}`,
				`{"type":"system","subtype":"status","status":"compacting","session_id":"s"}`,
				`{"type":"system","subtype":"status","status":null,"compact_result":"success","session_id":"s"}`,
				`{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto","pre_tokens":71895,"post_tokens":14640},"session_id":"s"}`,
			},
			want: []string{"compaction_started", "compaction_started", "compaction_finished ok", "activity: compaction boundary"},
		},
		{
			name: "a boundary without compact_result finishes the compaction",
			lines: []string{
				`{"type":"system","subtype":"status","status":"compacting"}`,
				`{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"manual"}}`,
				`{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto"}}`,
			},
			want: []string{"compaction_started", "compaction_finished ok", "compaction_finished ok"},
		},
		{
			name: "compaction failure carries compact_error",
			lines: []string{
				`{"type":"system","subtype":"status","status":"compacting"}`,
				`{"type":"system","subtype":"status","status":null,"compact_result":"failed","compact_error":"exhausted"}`,
				`{"type":"system","subtype":"status","status":null,"compact_result":"failed"}`,
			},
			want: []string{"compaction_started", "compaction_finished failed: exhausted", "compaction_finished failed: no reason given"},
		},
		{
			name: "status lines",
			lines: []string{
				`{"type":"system","subtype":"status","status":"requesting"}`,
				`{"type":"system","subtype":"status","status":null}`,
			},
			want: []string{"activity: requesting the model", "activity: status update"},
		},
		{
			name: "background tasks",
			lines: []string{
				`{"type":"system","subtype":"task_started","task_id":"t1","tool_use_id":"toolu_1","description":"build","task_type":"local_bash"}`,
				`{"type":"system","subtype":"task_progress","task_id":"t1","description":"build"}`,
				`{"type":"system","subtype":"task_updated","task_id":"t1","patch":{"status":"running"}}`,
				`{"type":"system","subtype":"task_updated","task_id":"t1","patch":{"status":"killed"}}`,
				`{"type":"system","subtype":"task_started","task_id":"t2","description":"test"}`,
				`{"type":"system","subtype":"task_notification","task_id":"t2","status":"failed","summary":"test"}`,
				`{"type":"system","subtype":"task_notification","task_id":"t3","status":"stopped","summary":"lint"}`,
			},
			want: []string{
				"task_started t1 build",
				"activity: background task progress",
				"activity: background task update",
				"task_finished t1 build",
				"task_started t2 test",
				"task_finished t2 test",
				"task_finished t3 lint",
			},
		},
		{
			name: "question and plan tools wait on the user",
			lines: []string{
				`{"type":"assistant","message":{"model":"m","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"tool_use","id":"toolu_q","name":"AskUserQuestion","input":{}}]},"parent_tool_use_id":null}`,
				`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_q","content":"yes"}]},"parent_tool_use_id":null}`,
				`{"type":"assistant","message":{"model":"m","content":[{"type":"tool_use","id":"toolu_p","name":"ExitPlanMode","input":{"plan":"x"}}]}}`,
			},
			want: []string{
				"activity: thinking + activity: writing a reply + tool_started toolu_q AskUserQuestion + waiting_on_user question",
				"tool_finished toolu_q AskUserQuestion",
				"tool_started toolu_p ExitPlanMode + waiting_on_user plan",
			},
		},
		{
			name: "subagent traffic is activity and tool calls keep their names",
			lines: []string{
				`{"type":"assistant","message":{"model":"m","content":[{"type":"tool_use","id":"toolu_task","name":"Task","input":{}}]},"parent_tool_use_id":null}`,
				`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"subagent prompt"}]},"parent_tool_use_id":"toolu_task"}`,
				`{"type":"assistant","message":{"model":"m","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"toolu_sub","name":"Grep","input":{}}]},"parent_tool_use_id":"toolu_task"}`,
				`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_sub","content":"1"}]},"parent_tool_use_id":"toolu_task"}`,
				`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_task","content":"done"}]},"parent_tool_use_id":null}`,
			},
			want: []string{
				"tool_started toolu_task Task",
				"activity: subagent prompt received",
				"activity: subagent writing a reply + tool_started toolu_sub Grep",
				"tool_finished toolu_sub Grep",
				"tool_finished toolu_task Task",
			},
		},
		{
			name: "permission prompts",
			lines: []string{
				`{"type":"control_request","request_id":"req_a","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"mkdir -p build"},"permission_suggestions":[],"tool_use_id":"toolu_b"}}`,
				`{"type":"control_request","request_id":"req_q","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[]}}}`,
				`{"type":"control_cancel_request","request_id":"req_q"}`,
				`{"type":"control_cancel_request","request_id":"req_never_seen"}`,
				`{"type":"control_request","request_id":"req_h","request":{"subtype":"hook_callback","callback_id":"x"}}`,
				`{"type":"control_response","response":{"subtype":"success","request_id":"req_1"}}`,
			},
			want: []string{
				"waiting_on_user permission req=req_a tool=Bash input=mkdir -p build",
				"waiting_on_user question req=req_q tool=AskUserQuestion input={\"questions\":[]}",
				"user_answered: permission request withdrawn by the agent",
				"activity: control request cancelled",
				"skip:unknown",
				"metrics: control response",
			},
		},
		{
			name: "session state, partial messages, progress, hooks, metrics",
			lines: []string{
				`{"type":"system","subtype":"session_state_changed","state":"running"}`,
				`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"parent_tool_use_id":null}`,
				`{"type":"tool_progress","tool_use_id":"toolu_1","tool_name":"Bash","elapsed_time_seconds":12}`,
				`{"type":"system","subtype":"hook_started","hook_name":"PreToolUse:Bash","hook_event":"PreToolUse"}`,
				`{"type":"system","subtype":"hook_response","hook_name":"PreToolUse:Bash","exit_code":0}`,
				`{"type":"system","subtype":"thinking_tokens","tokens":1200}`,
				`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1789049400,"rateLimitType":"five_hour","utilization":0.9}}`,
				`{"type":"conversation_reset"}`,
				`{"type":"keep_alive"}`,
				`{"type":"system","subtype":"session_state_changed","state":"requires_action"}`,
				`{"type":"system","subtype":"session_state_changed","state":"idle"}`,
			},
			want: []string{
				"activity: agent running",
				"activity: streaming a reply",
				"activity: Bash running",
				"activity: hook PreToolUse:Bash",
				"activity: hook PreToolUse:Bash",
				"metrics: thinking tokens",
				"metrics: rate limit allowed_warning",
				"activity: conversation reset",
				"none",
				"metrics: agent state requires_action",
				"idle: agent idle",
			},
		},
		{
			name: "api_retry kinds",
			lines: []string{
				`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":600,"error_status":529,"error":"overloaded"}`,
				`{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1500,"error_status":402,"error":"billing_error"}`,
				`{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":508,"error_status":401,"error":"authentication_failed"}`,
				`{"type":"system","subtype":"api_retry","attempt":4,"max_retries":10,"retry_delay_ms":2000,"error_status":503,"error":"server_error"}`,
				`{"type":"system","subtype":"api_retry","attempt":5,"max_retries":10,"retry_delay_ms":-5,"error_status":null,"error":"unknown"}`,
				`{"type":"system","subtype":"api_retry","attempt":6,"max_retries":10,"retry_delay_ms":1e300,"error_status":429}`,
			},
			want: []string{
				"retry_scheduled 1/10 600ms status=529 overloaded",
				"retry_scheduled 2/10 1.5s status=402 billing",
				"retry_scheduled 3/10 508ms status=401 auth",
				"retry_scheduled 4/10 2s status=503 overloaded",
				"retry_scheduled 5/10 0s status=0 network",
				"retry_scheduled 6/10 24h0m0s status=429 rate_limit",
			},
		},
		{
			name: "an interrupt ends the turn as aborted",
			lines: []string{
				`{"type":"control_response","response":{"subtype":"success","request_id":"req_int"}}`,
				`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"parent_tool_use_id":null}`,
				`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["aborted"]}`,
				`{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_tools"}`,
				`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["boom"]}`,
			},
			want: []string{
				"metrics: control response",
				"metrics: interrupted by the user",
				"turn_aborted: interrupted",
				"turn_aborted: aborted_tools",
				"turn_failed other", // the interrupt note was consumed by the first result
			},
		},
		{
			name: "string content (transcript form) is read too",
			lines: []string{
				`{"type":"user","message":{"role":"user","content":"[Request interrupted by user for tool use]"}}`,
				`{"type":"result","subtype":"error_during_execution","is_error":true}`,
				`{"type":"user","message":{"role":"user","content":"continue"}}`,
				`{"type":"user","message":{"role":"user"}}`,
			},
			want: []string{"metrics: interrupted by the user", "turn_aborted: interrupted", "activity: prompt received", "activity: user message"},
		},
		{
			name: "unknown and malformed lines are skipped, never fatal",
			lines: []string{
				`{"type":"system","subtype":"brand_new_subtype"}`,
				`{"type":"brand_new_type","x":1}`,
				`{}`,
				`null`,
				`[{"type":"system"}]`,
				`{"type":"assistant","message":`,
				`not json at all`,
				`{"type":"system","subtype":"init","session_id":"after"}`,
			},
			want: []string{
				"skip:unknown", "skip:unknown", "skip:unknown",
				"skip:malformed", "skip:malformed", "skip:malformed", "skip:malformed",
				"session_init after",
			},
		},
		{
			name: "a field of an unexpected type does not lose the line",
			lines: []string{
				`{"type":"system","subtype":"api_retry","attempt":"one","max_retries":2,"retry_delay_ms":100,"error_status":429,"error":"rate_limit"}`,
				`{"type":"assistant","message":"oops","error":{"nested":true}}`,
			},
			want: []string{"retry_scheduled 0/2 100ms status=429 rate_limit", "activity: assistant message"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeLines(t, tt.lines...)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestFailureClassification(t *testing.T) {
	synthetic := func(errWord, text string) string {
		b, _ := json.Marshal(map[string]any{
			"type": "assistant", "error": errWord, "parent_tool_use_id": nil,
			"message": map[string]any{"model": "<synthetic>", "content": []any{map[string]any{"type": "text", "text": text}}},
		})
		return string(b)
	}
	result := func(status any, reason, text string) string {
		b, _ := json.Marshal(map[string]any{
			"type": "result", "subtype": "success", "is_error": true,
			"api_error_status": status, "terminal_reason": reason, "result": text,
		})
		return string(b)
	}
	rejected := `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1789049400,"rateLimitType":"five_hour"}}`
	until := "until 2026-09-10T14:10:00Z" // resetsAt 1789049400

	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"terminal reason prompt_too_long beats status 400", []string{result(400, "prompt_too_long", "x")}, "turn_failed context_overflow"},
		{"blocking_limit is overflow too", []string{result(nil, "blocking_limit", "")}, "turn_failed context_overflow"},
		{"429 with a rejected plan limit carries the reset", []string{rejected, result(429, "api_error", "You've hit your session limit · resets 3:45pm")}, "turn_failed rate_limit " + until},
		{"429 without a reset time", []string{result(429, "completed", "x")}, "turn_failed rate_limit"},
		{"a rejected plan limit alone is a rate limit", []string{rejected, result(nil, "api_error", "x")}, "turn_failed rate_limit " + until},
		{"503 is overloaded", []string{result(503, "", "x")}, "turn_failed overloaded"},
		{"403 is auth", []string{result(403, "", "x")}, "turn_failed auth"},
		{"402 is billing", []string{result(402, "", "x")}, "turn_failed billing"},
		{"413 is overflow", []string{result(413, "", "x")}, "turn_failed context_overflow"},
		{"synthetic billing_error", []string{synthetic("billing_error", "x"), result(nil, "", "x")}, "turn_failed billing"},
		{"synthetic rate_limit", []string{synthetic("rate_limit", "x"), result(nil, "", "x")}, "turn_failed rate_limit"},
		{"synthetic oauth_org_not_allowed", []string{synthetic("oauth_org_not_allowed", "x"), result(nil, "", "x")}, "turn_failed auth"},
		{"synthetic invalid_request too long", []string{synthetic("invalid_request", "input length and max_tokens exceed context limit"), result(400, "", "x")}, "turn_failed context_overflow"},
		{"synthetic invalid_request otherwise", []string{synthetic("invalid_request", "messages: bad"), result(400, "", "messages: bad")}, "turn_failed other"},
		{"synthetic server_error overloaded", []string{synthetic("server_error", "Overloaded"), result(nil, "", "Overloaded")}, "turn_failed overloaded"},
		{"synthetic server_error otherwise", []string{synthetic("server_error", "Internal server error"), result(nil, "", "Internal server error")}, "turn_failed other"},
		// Transient failures (issue 15): the connection, 5xx, timeouts.
		{"500 is a server error", []string{synthetic("server_error", "x"), result(500, "", "x")}, "turn_failed network"},
		{"502 from a gateway", []string{result(502, "", "Bad gateway")}, "turn_failed network"},
		{"529 is overloaded", []string{result(529, "", "x")}, "turn_failed overloaded"},
		{"synthetic: unable to connect", []string{synthetic("server_error", "API Error: Unable to connect to API (ECONNRESET)"),
			result(nil, "completed", "API Error: Unable to connect to API (ECONNRESET)")}, "turn_failed network"},
		{"synthetic: connection lost", []string{synthetic("server_error", "API Error: Connection to the API was lost (ECONNRESET). This is usually temporary — try again."),
			result(nil, "completed", "x")}, "turn_failed network"},
		{"synthetic unknown word, refused", []string{synthetic("unknown", "API Error: Unable to connect to API (ECONNREFUSED)"), result(nil, "", "x")}, "turn_failed network"},
		{"text: request timed out", []string{result(nil, "", "API Error: Request timed out.")}, "turn_failed network"},
		{"text: ETIMEDOUT", []string{result(nil, "", "connect ETIMEDOUT 160.79.104.10:443")}, "turn_failed network"},
		{"text: connection error", []string{result(nil, "", "API Error: Connection error.")}, "turn_failed network"},
		{"an HTTP answer is not a connection failure, whatever its text", []string{result(400, "", "the tool call timed out")}, "turn_failed other"},
		{"status beats the synthetic kind", []string{synthetic("unknown", "x"), result(401, "", "x")}, "turn_failed auth"},
		{"text: session limit", []string{result(nil, "", "You've hit your session limit · resets 3:45pm")}, "turn_failed rate_limit"},
		{"text: credit balance", []string{result(nil, "", "Credit balance is too low")}, "turn_failed billing"},
		{"text: /login", []string{result(nil, "", "OAuth token expired. Please run /login")}, "turn_failed auth"},
		{"text: invalid API key", []string{result(nil, "", "Invalid API key · Fix external API key")}, "turn_failed auth"},
		{"text: prompt too long", []string{result(nil, "", "Prompt is too long")}, "turn_failed context_overflow"},
		{"nothing recognizable", []string{result(nil, "", "something odd")}, "turn_failed other"},
		{"a subagent's synthetic error is not the turn's", []string{
			`{"type":"assistant","error":"billing_error","parent_tool_use_id":"toolu_t","message":{"model":"<synthetic>","content":[{"type":"text","text":"x"}]}}`,
			result(nil, "", "x"),
		}, "turn_failed other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decodeLines(t, tt.lines...)
			if last := got[len(got)-1]; last != tt.want {
				t.Errorf("got %q, want %q", last, tt.want)
			}
		})
	}
}

func TestFailureEvidenceIsPerTurn(t *testing.T) {
	lines := []string{
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1789049400}}`,
		`{"type":"assistant","error":"billing_error","message":{"model":"<synthetic>","content":[{"type":"text","text":"x"}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"ok"}`,
		`{"type":"result","subtype":"success","is_error":true,"result":"mystery"}`,
	}
	got := decodeLines(t, lines...)
	if got[3] != "turn_failed other" {
		t.Errorf("second turn = %q: evidence leaked from the first turn", got[3])
	}
}

func TestFailureMessageSanitized(t *testing.T) {
	events, _, err := DecodeLine([]byte(`{"type":"result","subtype":"success","is_error":true,"api_error_status":401,` +
		`"result":"bad key sk-ant-api03-abcdefghijklmnop\nx-api-key: hunter2hunter2"}`))
	if err != nil || len(events) != 1 {
		t.Fatalf("DecodeLine: %v %v", events, err)
	}
	msg := events[0].Failure.Message
	if strings.Contains(msg, "abcdefghijklmnop") || strings.Contains(msg, "hunter2") || strings.Contains(msg, "\n") {
		t.Errorf("message not sanitized: %q", msg)
	}
	// An empty result text falls back to the errors list.
	events, _, _ = DecodeLine([]byte(`{"type":"result","subtype":"error_max_turns","is_error":true,"errors":["Reached maximum number of turns (5)"]}`))
	if got := events[0].Failure.Message; got != "Reached maximum number of turns (5)" {
		t.Errorf("message = %q", got)
	}
}

func TestDecodeLineIsStateless(t *testing.T) {
	events, info, err := DecodeLine([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"x"}]},"session_id":"abc"}`))
	if err != nil || info.Skip != agentkit.SkipNone || info.Type != "user" || info.SessionID != "abc" {
		t.Fatalf("info %+v err %v", info, err)
	}
	if len(events) != 1 || events[0].Kind != sessions.EvToolFinished || events[0].CallID != "toolu_1" || events[0].Name != "" {
		t.Errorf("events = %+v", events)
	}

	_, info, err = DecodeLine([]byte(`{"type":"nope"}`))
	if !errors.Is(err, ErrUnknown) || info.Skip != agentkit.SkipUnknown || info.Type != "nope" {
		t.Errorf("unknown: info %+v err %v", info, err)
	}
	_, info, err = DecodeLine([]byte(`{"type":`))
	if !errors.Is(err, ErrMalformed) || info.Skip != agentkit.SkipMalformed {
		t.Errorf("malformed: info %+v err %v", info, err)
	}
	events, info, err = DecodeLine([]byte("  \t"))
	if err != nil || info.Skip != agentkit.SkipEmpty || events != nil {
		t.Errorf("empty: %v %+v %v", events, info, err)
	}
}

func TestPermissionRoundTrip(t *testing.T) {
	const req = `{"type":"control_request","request_id":"req_7","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"mkdir -p build && touch build/out.txt","description":"make"},"permission_suggestions":[{"type":"addRules"}],"tool_use_id":"toolu_1"}}`
	pr, pw := io.Pipe()
	d := NewDecoder(pr, 0)
	go func() {
		io.WriteString(pw, req+"\n")
	}()
	l, err := d.Next()
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Events) != 1 || l.Events[0].Permission == nil || l.Events[0].Permission.RequestID != "req_7" {
		t.Fatalf("events = %+v", l.Events)
	}
	in := d.PendingInput("req_7")
	if string(in) != `{"command":"mkdir -p build && touch build/out.txt","description":"make"}` {
		t.Fatalf("PendingInput = %s", in)
	}
	if d.PendingInput("req_other") != nil {
		t.Error("PendingInput for an unknown id is not nil")
	}

	var resp struct {
		Type     string `json:"type"`
		Response struct {
			Subtype   string `json:"subtype"`
			RequestID string `json:"request_id"`
			Response  struct {
				Behavior     string          `json:"behavior"`
				UpdatedInput json.RawMessage `json:"updatedInput"`
			} `json:"response"`
		} `json:"response"`
	}
	if err := json.Unmarshal(PermissionResponse("req_7", true, "", in), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Response.RequestID != "req_7" || resp.Response.Response.Behavior != "allow" || string(resp.Response.Response.UpdatedInput) != string(in) {
		t.Errorf("response = %+v", resp)
	}

	// The turn's result settles every request of the turn.
	go func() {
		io.WriteString(pw, `{"type":"result","subtype":"success","is_error":false}`+"\n")
		pw.Close()
	}()
	if _, err := d.Next(); err != nil {
		t.Fatal(err)
	}
	if d.PendingInput("req_7") != nil {
		t.Error("request still pending after the result")
	}
}

// TestApplyPermissionAndInterrupt replays permission and interrupt flows
// through sessions.Apply.
func TestApplyPermissionAndInterrupt(t *testing.T) {
	init := `{"type":"system","subtype":"init","session_id":"s"}`
	toolUse := `{"type":"assistant","message":{"model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]}}`
	ask := `{"type":"control_request","request_id":"req_1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm x"}}}`
	interruptLines := []string{
		`{"type":"control_response","response":{"subtype":"success","request_id":"req_int"}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}`,
		`{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_streaming"}`,
	}

	events, _, _ := decodeAll(t, strings.NewReader(strings.Join([]string{init, toolUse, ask}, "\n")), 0)
	s, _ := replay(events, sessions.ByUser)
	if s.State != sessions.WaitingOnUser || s.WaitReason != sessions.WaitPermission || s.Permission == nil || s.Permission.RequestID != "req_1" {
		t.Fatalf("after the permission request: %s/%s %+v", s.State, s.WaitReason, s.Permission)
	}

	for _, by := range []sessions.Actor{sessions.ByUser, sessions.BySupervisor} {
		events, _, _ := decodeAll(t, strings.NewReader(strings.Join(append([]string{init, toolUse}, interruptLines...), "\n")), 0)
		// The supervisor records who asked for the interrupt before writing it.
		i := slices.IndexFunc(events, func(e sessions.Event) bool { return e.Detail == "control response" })
		events = slices.Insert(events, i, sessions.Event{Kind: sessions.EvInterruptRequested, By: by})
		s, _ := replay(events, sessions.ByUser)
		want := sessions.Interrupted
		if by == sessions.ByUser {
			want = sessions.WaitingOnUser
		}
		if s.State != want {
			t.Errorf("interrupt by %s: state %s (%s), want %s", by, s.State, s.Evidence, want)
		}
	}
}

// Issue 10, item 7: two permission requests are open at once (parallel tool
// calls); the agent withdraws one with control_cancel_request and a tool
// result arrives meanwhile. The other request stays open, and the session
// keeps waiting on it.
func TestCancelWithdrawsOnlyItsRequest(t *testing.T) {
	lines := []string{
		`{"type":"system","subtype":"init","session_id":"s"}`,
		`{"type":"control_request","request_id":"req_a","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"make"}}}`,
		`{"type":"control_request","request_id":"req_b","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"x"}}}`,
		`{"type":"control_cancel_request","request_id":"req_b"}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"ok"}]},"parent_tool_use_id":null}`,
	}
	events, _, _ := decodeAll(t, strings.NewReader(strings.Join(lines, "\n")), 0)
	s, _ := replay(events, sessions.ByUser)
	if s.State != sessions.WaitingOnUser || s.WaitReason != sessions.WaitPermission || len(s.Permissions) != 1 ||
		s.Permission == nil || s.Permission.RequestID != "req_a" {
		t.Fatalf("after cancelling req_b: %s/%s open %+v (%q); want req_a still open", s.State, s.WaitReason, s.Permissions, s.Evidence)
	}
}
