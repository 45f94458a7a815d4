package fakeserver

import (
	"encoding/json"
	"strings"
)

// ChatRequest is the part of an OpenAI chat completions request the chat
// fakes (Copilot's, OpenCode's) read.
type ChatRequest struct {
	Messages []ChatMessage    `json:"messages"`
	Tools    []map[string]any `json:"tools"`
}

// ChatMessage is one chat message: its content is a string or a list of
// text parts.
type ChatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Text is the message's content as text: the string, or its parts' texts
// joined.
func (m ChatMessage) Text() string {
	var str string
	if json.Unmarshal(m.Content, &str) == nil {
		return str
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// ToolOutput is the tool result the request ends with (ToolResult), if its
// last message is one.
func (r ChatRequest) ToolOutput() string {
	n := len(r.Messages)
	return ToolResult(n > 0 && r.Messages[n-1].Role == "tool", func() string { return r.Messages[n-1].Text() })
}

// UserText is the text of the last user message.
func (r ChatRequest) UserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text()
		}
	}
	return ""
}

// ToolResult is the output of the tool call a request ends with, as a fake
// logs it and gives its scenario: "" when the request ends with none
// (last is false), "(empty)" for a tool that printed nothing, so a
// scenario tells the two apart.
func ToolResult(last bool, out func() string) string {
	if !last {
		return ""
	}
	if s := out(); s != "" {
		return s
	}
	return "(empty)"
}
