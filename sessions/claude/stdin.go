package claude

import (
	"bytes"
	"encoding/json"

	"github.com/session-supervisor/session-supervisor/sessions/agentkit"
)

// The lines written to the stdin of `claude -p --input-format stream-json`,
// in the format measured against Claude Code 2.1.197
// (reference/claude-code-measured.md). Each is one JSON object and a newline.

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type userLine struct {
	Type    string `json:"type"`
	Message struct {
		Role    string      `json:"role"`
		Content []textBlock `json:"content"`
	} `json:"message"`
}

type controlRequestLine struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype string `json:"subtype"`
	} `json:"request"`
}

type permissionDecision struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
}

type controlResponseLine struct {
	Type     string `json:"type"`
	Response struct {
		Subtype   string             `json:"subtype"`
		RequestID string             `json:"request_id"`
		Response  permissionDecision `json:"response"`
	} `json:"response"`
}

// denyDefault is sent when a permission is denied without a reason: the CLI
// shows the message to the model, so it must say something.
const denyDefault = "The user denied this tool call."

// UserMessage is the stdin line that sends a prompt. Sent between turns it
// starts a new turn; sent mid-turn the CLI folds it into the running one.
func UserMessage(text string) []byte {
	var l userLine
	l.Type = "user"
	l.Message.Role = "user"
	l.Message.Content = []textBlock{{Type: "text", Text: text}}
	return agentkit.JSONLine(l)
}

// InterruptRequest is the stdin line that interrupts the turn in flight. The
// CLI answers with a control_response, then ends the turn with an
// error_during_execution result.
func InterruptRequest(requestID string) []byte {
	var l controlRequestLine
	l.Type = "control_request"
	l.RequestID = requestID
	l.Request.Subtype = "interrupt"
	return agentkit.JSONLine(l)
}

// PermissionResponse answers the can_use_tool request requestID. Allowing
// must echo the tool's input as updatedInput (Decoder.PendingInput has it);
// an input that is not a JSON object is replaced by {} so the line stays
// valid. Denying sends message to the model (a default when empty).
func PermissionResponse(requestID string, allow bool, message string, updatedInput json.RawMessage) []byte {
	var l controlResponseLine
	l.Type = "control_response"
	l.Response.Subtype = "success"
	l.Response.RequestID = requestID
	if allow {
		in := bytes.TrimSpace(updatedInput)
		if len(in) == 0 || in[0] != '{' || !json.Valid(in) {
			in = []byte("{}")
		}
		l.Response.Response = permissionDecision{Behavior: "allow", UpdatedInput: in}
	} else {
		l.Response.Response = permissionDecision{Behavior: "deny", Message: agentkit.OrDefault(message, denyDefault)}
	}
	return agentkit.JSONLine(l)
}
