package codex

import (
	"encoding/json"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// The JSON-RPC methods this client calls, as `codex app-server` 0.171.0
// names them (`codex app-server generate-ts`).
const (
	methodInitialize    = "initialize"
	methodThreadStart   = "thread/start"
	methodThreadResume  = "thread/resume"
	methodTurnStart     = "turn/start"
	methodTurnSteer     = "turn/steer"
	methodTurnInterrupt = "turn/interrupt"
	methodCompact       = "thread/compact/start"
)

// clientName is how the app introduces itself in initialize.
const clientName = "session-supervisor"

type rpcRequest struct {
	ID     int64  `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params"`
}

type rpcNotification struct {
	Method string `json:"method"`
}

type rpcResult struct {
	ID     json.RawMessage `json:"id"`
	Result any             `json:"result"`
}

type rpcError struct {
	ID    json.RawMessage `json:"id"`
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type textInput struct {
	Type         string   `json:"type"`
	Text         string   `json:"text"`
	TextElements []string `json:"text_elements"`
}

func userInput(text string) []textInput {
	return []textInput{{Type: "text", Text: text, TextElements: []string{}}}
}

// InitializeRequest is the handshake every connection starts with.
func InitializeRequest(id int64, version string) []byte {
	return agentkit.JSONLine(rpcRequest{ID: id, Method: methodInitialize, Params: map[string]any{
		"clientInfo":   map[string]any{"name": clientName, "title": "Session Supervisor", "version": version},
		"capabilities": nil,
	}})
}

// InitializedNotification completes the handshake.
func InitializedNotification() []byte {
	return agentkit.JSONLine(rpcNotification{Method: "initialized"})
}

// ThreadStartRequest starts a new thread in cwd; approvalPolicy, when set,
// is Codex's approval policy for it.
func ThreadStartRequest(id int64, cwd, approvalPolicy string) []byte {
	p := map[string]any{"cwd": cwd}
	if approvalPolicy != "" {
		p["approvalPolicy"] = approvalPolicy
	}
	return agentkit.JSONLine(rpcRequest{ID: id, Method: methodThreadStart, Params: p})
}

// ThreadResumeRequest loads thread from Codex's rollout and continues it.
func ThreadResumeRequest(id int64, thread, cwd, approvalPolicy string) []byte {
	p := map[string]any{"threadId": thread, "cwd": cwd, "excludeTurns": true}
	if approvalPolicy != "" {
		p["approvalPolicy"] = approvalPolicy
	}
	return agentkit.JSONLine(rpcRequest{ID: id, Method: methodThreadResume, Params: p})
}

// TurnStartRequest starts a turn with one text prompt.
func TurnStartRequest(id int64, thread, text string) []byte {
	return agentkit.JSONLine(rpcRequest{ID: id, Method: methodTurnStart, Params: map[string]any{
		"threadId": thread, "input": userInput(text)}})
}

// TurnSteerRequest adds a prompt to the turn in flight.
func TurnSteerRequest(id int64, thread, turn, text string) []byte {
	return agentkit.JSONLine(rpcRequest{ID: id, Method: methodTurnSteer, Params: map[string]any{
		"threadId": thread, "expectedTurnId": turn, "input": userInput(text)}})
}

// TurnInterruptRequest aborts the turn in flight.
func TurnInterruptRequest(id int64, thread, turn string) []byte {
	return agentkit.JSONLine(rpcRequest{ID: id, Method: methodTurnInterrupt, Params: map[string]any{
		"threadId": thread, "turnId": turn}})
}

// CompactRequest compacts the thread's context.
func CompactRequest(id int64, thread string) []byte {
	return agentkit.JSONLine(rpcRequest{ID: id, Method: methodCompact, Params: map[string]any{"threadId": thread}})
}

// ApprovalResponse answers a server request of method with allow or deny.
// The request's own id is echoed (a number or a string on the wire).
func ApprovalResponse(rawID json.RawMessage, method string, allow bool) []byte {
	var result any
	switch method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		result = map[string]any{"decision": pick(allow, "accept", "decline")}
	case "execCommandApproval", "applyPatchApproval":
		result = map[string]any{"decision": pick(allow, "approved", "denied")}
	case "mcpServer/elicitation/request":
		result = map[string]any{"action": pick(allow, "accept", "decline"), "content": nil}
	case "item/tool/requestUserInput":
		// The app has no per-question answers: an empty answer set lets the
		// turn go on with the model told nothing was chosen.
		result = map[string]any{"answers": map[string]any{}}
	default:
		return errorReply(rawID, -32000, "declined by the user")
	}
	return agentkit.JSONLine(rpcResult{ID: rawID, Result: result})
}

func errorReply(rawID json.RawMessage, code int, msg string) []byte {
	var e rpcError
	e.ID = rawID
	e.Error.Code = code
	e.Error.Message = msg
	return agentkit.JSONLine(e)
}

func pick(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}
