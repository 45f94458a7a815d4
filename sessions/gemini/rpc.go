package gemini

import (
	"encoding/json"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// The Agent Client Protocol methods this client calls, as `gemini --acp`
// 0.61.0 serves them (protocol version 1).
const (
	methodInitialize  = "initialize"
	methodSessionNew  = "session/new"
	methodSessionLoad = "session/load"
	methodPrompt      = "session/prompt"
	methodCancel      = "session/cancel"
	methodPermission  = "session/request_permission"
	methodUpdate      = "session/update"
)

// protocolVersion is the ACP version this client speaks.
const protocolVersion = 1

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type rpcNotification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type rpcResult struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result"`
}

type rpcErrorReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// InitializeRequest opens the connection. The client offers no file system
// and no terminal: the CLI then reads and writes files and runs commands
// itself, as it does in a terminal, and only asks for permission.
func InitializeRequest(id int64) []byte {
	return agentkit.JSONLine(rpcRequest{JSONRPC: "2.0", ID: id, Method: methodInitialize, Params: map[string]any{
		"protocolVersion": protocolVersion,
		"clientCapabilities": map[string]any{
			"fs":       map[string]bool{"readTextFile": false, "writeTextFile": false},
			"terminal": false,
		},
	}})
}

// SessionNewRequest opens a new session in cwd.
func SessionNewRequest(id int64, cwd string) []byte {
	return agentkit.JSONLine(rpcRequest{JSONRPC: "2.0", ID: id, Method: methodSessionNew, Params: map[string]any{
		"cwd": cwd, "mcpServers": []any{},
	}})
}

// SessionLoadRequest reopens an earlier session (the CLI replays its
// history as session/update notifications before it answers).
func SessionLoadRequest(id int64, sessionID, cwd string) []byte {
	return agentkit.JSONLine(rpcRequest{JSONRPC: "2.0", ID: id, Method: methodSessionLoad, Params: map[string]any{
		"sessionId": sessionID, "cwd": cwd, "mcpServers": []any{},
	}})
}

// PromptRequest starts a turn with text.
func PromptRequest(id int64, sessionID, text string) []byte {
	return agentkit.JSONLine(rpcRequest{JSONRPC: "2.0", ID: id, Method: methodPrompt, Params: map[string]any{
		"sessionId": sessionID,
		"prompt":    []map[string]string{{"type": "text", "text": text}},
	}})
}

// CancelNotification aborts the turn in flight; the CLI answers the prompt
// with stopReason "cancelled".
func CancelNotification(sessionID string) []byte {
	return agentkit.JSONLine(rpcNotification{JSONRPC: "2.0", Method: methodCancel, Params: map[string]string{"sessionId": sessionID}})
}

// PermissionResponse answers session/request_permission with the chosen
// option, or with "cancelled" when there is none to choose.
func PermissionResponse(id json.RawMessage, optionID string) []byte {
	outcome := map[string]string{"outcome": "cancelled"}
	if optionID != "" {
		outcome = map[string]string{"outcome": "selected", "optionId": optionID}
	}
	return agentkit.JSONLine(rpcResult{JSONRPC: "2.0", ID: id, Result: map[string]any{"outcome": outcome}})
}

// errorReply refuses a request this client does not serve.
func errorReply(id json.RawMessage, code int, msg string) []byte {
	r := rpcErrorReply{JSONRPC: "2.0", ID: id}
	r.Error.Code, r.Error.Message = code, msg
	return agentkit.JSONLine(r)
}
